// KL(p || q) for one pair of prepared distributions: the formula every CPU path shares.
//
// With M = Bq^{-1} Bp (lower triangular), X = Bq^{-1} Up, delta = mu_p - mu_q, and q's
// whitened norm |y|_q^2 = y^T (I + Vq Vq^T)^{-1} y = |y - Q t|^2 + |L^{-1} t|^2, t = Q^T y
// (pair/layout.hpp), so that x^T T^{-1} x = |Bq^{-1} x|_q^2:
//   2 KL = sum_k f(2 (log Bp_kk - log Bq_kk))        f(r) = e^r - 1 - r >= 0
//        + sum_{i>k} M_ik^2
//        + sum_k (|L^{-1} Q^T m_k|^2 - |Q^T m_k|^2)  (q low rank; m_k: column k of M)
//        + sum_s |x_s|_q^2                           (p low rank; x_s: column s of X)
//        + log|Cq| - log|Cp|
//        + |Bq^{-1} delta|_q^2.
// The first two lines pair tr(M M^T) with -D - log|M M^T| per dimension, so diagonal and full
// pairs add only non-negative terms and KL(p || p) is exactly 0. Every low-rank term is a
// squared norm in an orthonormal basis, bounded by the D-sized terms, never the textbook
// Woodbury difference of |V|_F^2-sized numbers (which loses every digit when the factor is
// 1e3 times the diagonal).
#pragma once

#include <cstdint>

#include "cpu/pair/layout.hpp"
#include "cpu/pair/low_rank_difference.hpp"
#include "cpu/pair/tri_squares.hpp"

namespace gausskl::cpu {

// Doubles of scratch two_kl needs for a pair with these layouts: with a triangular q, room for
// M = Lq^{-1} Lp (tri_squares.hpp).
// With a low-rank q, room for the near-duplicates' form too (low_rank_difference.hpp).
inline std::int64_t pair_scratch_size(const Layout& q) {
  const std::int64_t own = 2 * q.d + 2 * q.r + (q.tri ? tri_squares_scratch(q.d) : 0);
  const std::int64_t difference = q.r > 0 ? low_rank_difference_scratch(q.d) : 0;
  return own > difference ? own : difference;
}

// 2 KL(p || q) >= 0. q must have been prepared with_inverse if q.tri and !p.tri. Two low-rank
// distributions whose terms cancel past 6 digits (near-duplicates) are computed again from
// their difference (low_rank_difference.hpp).
double two_kl(const Prepared& p, const Prepared& q, double* scratch);

}  // namespace gausskl::cpu
