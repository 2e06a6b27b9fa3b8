// The two kinds of file errors: bad content (std::invalid_argument) and failed I/O
// (std::runtime_error), with messages "[read] where: what" / "[write] where: what".
#pragma once

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gausskl::io {

[[noreturn]] inline void throw_read_error(std::string_view where, std::string_view what) {
  throw std::invalid_argument("[read] " + std::string(where) + ": " + std::string(what));
}

// A read that failed for a reason outside the file's content; `error` is an errno value.
[[noreturn]] inline void throw_read_failure(std::string_view where, int error) {
  throw std::runtime_error("[read] " + std::string(where) + ": " + std::strerror(error));
}

[[noreturn]] inline void throw_write_failure(std::string_view where, int error) {
  throw std::runtime_error("[write] " + std::string(where) + ": " + std::strerror(error));
}

// Text from a file, made safe to show in an error message: shortened so a huge garbage token
// cannot flood the terminal, control characters replaced so it cannot send escape sequences.
inline std::string shorten_for_message(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string shown(text.substr(0, kMax));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  }
  return text.size() <= kMax ? shown : shown + "...";
}

inline std::string quote_for_message(std::string_view text) {
  // Appended piece by piece: `"'" + std::string(...)` trips GCC 12's -Wrestrict false positive
  // (GCC bug 105329) at -O3.
  std::string quoted = "'";
  quoted += shorten_for_message(text);
  quoted += '\'';
  return quoted;
}

}  // namespace gausskl::io
