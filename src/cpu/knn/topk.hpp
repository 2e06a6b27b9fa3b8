// Selecting the k smallest values: knows nothing about KL.
#pragma once

#include <algorithm>
#include <cstdint>

namespace gausskl::cpu {

// Reorders idx[0, count) so that idx[0, k) are the k smallest by (value[idx], idx), ascending.
// Comparing (value, index) pairs makes the order total: ties go to the lower index and the
// result does not depend on the selection algorithm.
inline void smallest_k(const double* value, std::int64_t* idx, std::int64_t count, std::int64_t k) {
  std::partial_sort(idx, idx + k, idx + count, [value](std::int64_t a, std::int64_t b) {
    return value[a] < value[b] || (value[a] == value[b] && a < b);
  });
}

}  // namespace gausskl::cpu
