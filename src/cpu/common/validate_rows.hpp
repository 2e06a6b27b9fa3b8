// Value checks of contiguous rows without messages, vectorized (Highway, the target chosen at run
// time): the fast path of validation (src/core/validate.cpp), which names nothing and takes the
// bounds from it. A failed check makes validation run its element-wise checks, which find and
// name the first bad value.
#pragma once

#include <cstdint>

namespace gausskl::cpu {

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

// True if every row r < d of the d x d matrix m (row stride row_stride, unit column stride) is
// finite on and left of column r and 0 right of it, and its diagonal entry x is positive with
// x^2 in [min_variance, max_variance]. window: 2 d - 1 values, d zeros then d - 1 ones (row r
// reads window + d - 1 - r as its mask of the upper triangle).
bool tril_rows(const float* m, std::int64_t row_stride, std::int64_t d, const float* window,
               double min_variance, double max_variance) noexcept;
bool tril_rows(const double* m, std::int64_t row_stride, std::int64_t d, const double* window,
               double min_variance, double max_variance) noexcept;

}  // namespace gausskl::cpu
