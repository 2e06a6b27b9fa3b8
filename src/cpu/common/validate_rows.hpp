// Value checks of contiguous rows without messages, vectorized (Highway, the target chosen at run
// time): the fast path of validation, which names nothing. A failed check makes validate.cpp run
// its element-wise checks, which find and name the first bad value.
#pragma once

#include <cstdint>

namespace gausskl::detail {

// True if every |x| of the `rows` rows of n values at data + i * row_stride (unit column stride)
// is at most `bound` (>= 0); NaN is not.
bool all_abs_within_rows(const float* data, std::int64_t rows, std::int64_t row_stride,
                         std::int64_t n, float bound) noexcept;
bool all_abs_within_rows(const double* data, std::int64_t rows, std::int64_t row_stride,
                         std::int64_t n, double bound) noexcept;

// True if those values all lie in [lo, hi], 0 < lo <= hi; NaN does not.
bool all_within_rows(const float* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
                     float lo, float hi) noexcept;
bool all_within_rows(const double* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
                     double lo, double hi) noexcept;

}  // namespace gausskl::detail
