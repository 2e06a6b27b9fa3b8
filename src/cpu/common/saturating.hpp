// int64 arithmetic that sticks at INT64_MAX instead of wrapping: for byte counts that are only
// compared against a budget (a count too large to represent is simply too large).
#pragma once

#include <cstdint>
#include <limits>

namespace gausskl::cpu {

inline std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::int64_t>::max() : r;
}

inline std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::int64_t>::max() : r;
}

}  // namespace gausskl::cpu
