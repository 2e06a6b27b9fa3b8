// Where a backward kernel puts the gradient of one array of one side, for the rows it is given.
#pragma once

#include <cstdint>

namespace gausskl::cpu {

// Either `rows` (row i's gradient written at rows + i * row_size, in T: a side with a
// distribution per row), or `sum` (every row's gradient added into row_size doubles: a side with
// one distribution broadcast over the rows), or neither (not wanted). row_size is the array's
// elements per distribution: D for means, D, D * D or D (D + 1) / 2 for scales.
template <class T>
struct GradSink {
  T* rows = nullptr;
  double* sum = nullptr;

  bool wanted() const { return rows != nullptr || sum != nullptr; }
};

// One side's sinks: dL/d(mean) and dL/d(scale array).
template <class T>
struct SideSinks {
  GradSink<T> mean, scale;
};

}  // namespace gausskl::cpu
