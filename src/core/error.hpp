// Building the library's error messages: "[op] what, where".
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
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

[[noreturn]] inline void fail(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string("[") + op + "] " + what);
}

[[noreturn]] inline void fail_resource(const char* op, const std::string& what) {
  throw std::runtime_error(std::string("[") + op + "] " + what);
}

// a * b, or a tagged error if it does not fit in int64 (sizes are never allowed to wrap).
inline std::int64_t checked_mul(const char* op, std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) {
    fail(op, std::string(what) + " overflows int64 (" + show(a) + " * " + show(b) + ")");
  }
  return r;
}

inline std::int64_t checked_add(const char* op, std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) {
    fail(op, std::string(what) + " overflows int64 (" + show(a) + " + " + show(b) + ")");
  }
  return r;
}

}  // namespace gausskl::detail
