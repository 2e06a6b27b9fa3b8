// What a file is, by its name: extensions compared without regard to case (out.NPY, P.CSV),
// .txt and .tsv read as CSV (np.savetxt's and spreadsheets' names for delimited text).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace gausskl::cli {

inline bool has_extension(std::string_view path, std::string_view ext) {
  if (path.size() < ext.size()) return false;
  return std::equal(ext.begin(), ext.end(), path.end() - static_cast<std::ptrdiff_t>(ext.size()),
                    [](char a, char b) {
                      const auto lower = [](char c) {
                        return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
                      };
                      return lower(a) == lower(b);
                    });
}

// Delimited text: .csv, .tsv or .txt.
inline bool is_text_table(std::string_view path) {
  return has_extension(path, ".csv") || has_extension(path, ".tsv") || has_extension(path, ".txt");
}

}  // namespace gausskl::cli
