// Numbers as the library's messages write them, shared with io/ and the bindings (src/util/ is the
// small utility library they may include besides the public headers).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>

namespace gausskl::detail {

// Shortest text that reads back as the same value of its own type (float stays float).
template <class T>
std::string show(T value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

// A limit as messages and help texts write it: "1e-3", "1e-13", "1e300" (scientific, shortest,
// no '+' and no leading zeros in the exponent).
inline std::string show_limit(double value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  if (ec != std::errc()) return "?";
  const std::string text(buf, end);
  const auto e = text.find('e');
  if (e == std::string::npos) return text;
  std::string exponent = text.substr(e + 1), sign;
  if (exponent[0] == '-' || exponent[0] == '+') {
    if (exponent[0] == '-') sign = "-";
    exponent.erase(0, 1);
  }
  exponent.erase(0, std::min(exponent.find_first_not_of('0'), exponent.size() - 1));
  return text.substr(0, e) + "e" + sign + exponent;
}

// A closed range of limits: "[1e-300, 1e300]".
inline std::string show_range(double lo, double hi) {
  std::string text = "[";  // (not "[" + a temporary: GCC 12 warns of a false overlap)
  text += show_limit(lo);
  text += ", ";
  text += show_limit(hi);
  return text + "]";
}

// "512 B", "1.5 KiB", "12.0 MiB", "3.2 GiB".
inline std::string show_bytes(std::int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace gausskl::detail
