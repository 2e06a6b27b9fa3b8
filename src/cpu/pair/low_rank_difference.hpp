// 2 KL between two low-rank Gaussians from the difference of their covariances, for
// near-duplicates, where the terms of kl.hpp's form (each of the size of D) cancel to
// round-off: with Sq = Bq^2 + Uq Uq^T = L L^T and
//   Delta = Sp - Sq = (Dp - Dq) + (A E^T + E A^T) / 2,  E = Up - Uq, A = Up + Uq,
// (Dp, Dq the diagonals as given: Prepared::var),
// every entry of Delta is as small as p and q are close, and the eigenvalues l of
// S = L^{-1} Delta L^{-T} (Jacobi rotations: accurate relative to the small S) give
//   2 KL = sum_k (l_k - log(1 + l_k)) + |L^{-1} (mu_p - mu_q)|^2.
// Dense D x D: for the pairs the caller finds cancelling.
#pragma once

#include <cstdint>

#include "cpu/pair/layout.hpp"

namespace gausskl::cpu {

// Doubles of scratch two_kl_low_rank_difference needs.
inline std::int64_t low_rank_difference_scratch(std::int64_t d) {
  return 3 * d * d + d;
}

// 2 KL(p || q) for low-rank p and q with diagonal bases (p.r, q.r > 0), or -1 if Sq does not
// factor in double (the caller keeps its own value).
double two_kl_low_rank_difference(const Prepared& p, const Prepared& q, double* scratch) noexcept;

}  // namespace gausskl::cpu
