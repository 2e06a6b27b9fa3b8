// Splitting the lines of a CSV file into fields. A file uses one separator, chosen by its first
// row: commas if it has one, else tabs if it has one, else runs of spaces (np.savetxt's
// default). Spaces around a comma- or tab-separated field are padding; any other separator
// inside a field means the file mixes them, which is an error rather than a guess.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gausskl::io {

enum class CsvSeparator { comma, tab, spaces };

CsvSeparator detect_separator(std::string_view row);

// `line` without surrounding blanks; a line is blank or a comment if it starts with '#'.
std::string_view trim_blanks(std::string_view line);

// Where a line is, for error messages: the file, its line number, and the line that set the
// separator.
struct CsvLine {
  const std::string& where;
  std::int64_t number;
  std::int64_t separator_line;
};

// The fields of a trimmed, non-empty row, each trimmed, into `fields` (cleared first). Throws
// std::invalid_argument "[read] where: line L, column C: '1 2' holds a space, but line 1
// separates values with commas (one separator per file)" when a field holds another separator.
void split_fields(std::string_view row, CsvSeparator separator, const CsvLine& line,
                  std::vector<std::string_view>& fields);

// "[read] where: line L, column C: what".
[[noreturn]] void throw_csv_error(const CsvLine& line, std::int64_t column,
                                  const std::string& what);

}  // namespace gausskl::io
