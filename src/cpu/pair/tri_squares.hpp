// The full-full term of the pair formula: the sum of squares of the entries below the diagonal
// of M = Lq^{-1} Lp, for lower-triangular Lq (nonzero diagonal) and Lp. The SIMD target is
// chosen at run time (tri_squares.cpp).
#pragma once

#include <cstdint>

namespace gausskl::cpu {

// Rows of M are padded to a multiple of this many doubles (the widest vector, AVX-512), so the
// vector loops never need a tail.
inline constexpr std::int64_t kTriPad = 8;

inline std::int64_t tri_squares_ld(std::int64_t d) {
  return (d + kTriPad - 1) / kTriPad * kTriPad;
}

// Doubles of scratch tri_squares needs.
inline std::int64_t tri_squares_scratch(std::int64_t d) {
  return d * tri_squares_ld(d);
}

// lq, lp: [d * d] row-major, lower triangular (lq's diagonal nonzero). Solved row by row: row i
// of M is (row i of Lp - sum_{j < i} Lq_ij * row j of M) / Lq_ii, an axpy per (i, j) over a row,
// which vectorizes (solving column by column is a dot-product chain, which does not). Division
// by the pivot, not multiplication by its inverse, keeps M = I exactly when Lq = Lp, so
// KL(p || p) stays 0. The diagonal of M (exp of the log-diagonal differences) is not summed: the
// stable form counts it apart. The result depends only on the inputs and the SIMD target (fused
// multiply-add or not, the vector width of the partial sums). Never throws or allocates.
double tri_squares(const double* lq, const double* lp, std::int64_t d, double* scratch) noexcept;

}  // namespace gausskl::cpu
