// Numbers as the library's messages write them, shared with io/ and the bindings (src/util/ is the
// small utility library they may include besides the public headers).
#pragma once

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
