// What every fuzz target checks about an Array that a reader accepted.
#pragma once

#include <cstdlib>
#include <variant>

#include "io/array.hpp"

namespace gausskl::io::fuzz {

// A failed check is a crash for libFuzzer, which then saves the input.
inline void check(bool ok) {
  if (!ok) std::abort();
}

inline void check_consistent(const Array& array) {
  std::int64_t count = 1;
  for (const std::int64_t dim : array.shape) {
    check(dim >= 0);
    check(!__builtin_mul_overflow(count, dim, &count));
  }
  const auto size = std::visit([](const auto& values) { return values.size(); }, array.data);
  check(static_cast<std::int64_t>(size) == count);
}

}  // namespace gausskl::io::fuzz
