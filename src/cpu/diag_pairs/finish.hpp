// The finish of diagonal all-pairs KL (diag_pairs/plan.hpp) over one row of the kernel's Q: the
// O(1) terms, each entry's error bound, and the mark of entries to recompute exactly, written in
// the output's type. A SIMD loop per Highway target (diag_pairs/finish.cpp), chosen at run time.
#pragma once

#include <cstdint>

namespace gausskl::cpu {

// What an entry (i, j) of row i needs besides Q_ij, t_j and abs_t_j.
struct DiagFinishRow {
  double d;             // the dimension D
  double s, abs_s;      // sum_h log v_ih and sum_h |log v_ih| (computed with error <= 10u abs_s)
  double tolerance;     // entries whose bound exceeds tolerance * (|KL| + 1) are marked
  double kernel_bound;  // |Q_hat - Q| <= kernel_bound * Q_hat + kernel_abs
  double kernel_abs;
};

// For j < n, with 2 KL = (Q_j - D) - s + t_j and its bound
//   b = kernel_bound Q_j + kernel_abs + u (3 (Q_j + D + |s| + |t_j|) + 10 (abs_s + abs_t_j)),
// u = 2^-53 (the kernel's bound, three roundings of the subtraction, the sums of logarithms:
// each within 8u (diag_pairs/row_terms.hpp), summed with compensation, 2u):
// out[j] = KL when b / 2 <= tolerance (|KL| + 1) and b / 2 <= KL / 100, else NaN, the mark of an
// entry to recompute (KL near 0 is always recomputed, so it keeps its relative accuracy). Q is
// never NaN (the kernel's terms are non-negative), so NaN means exactly that. out may be q when
// U = double. Returns the number of entries marked.
template <class U>
std::int64_t finish_diag_row(const double* q, const double* t, const double* abs_t, std::int64_t n,
                             const DiagFinishRow& row, U* out) noexcept;

// finish_diag_row on each row r < rows of a tile, in one call: q + r * ldq into out + r * ldo,
// with row.s = s[r] and row.abs_s = abs_s[r] (the rest of `row` as given) and the columns' t
// and abs_t. Returns the number of entries marked.
template <class U>
std::int64_t finish_diag_tile(const double* q, std::int64_t ldq, std::int64_t rows,
                              std::int64_t cols, const double* s, const double* abs_s,
                              const double* t, const double* abs_t, const DiagFinishRow& row,
                              U* out, std::int64_t ldo) noexcept;

}  // namespace gausskl::cpu
