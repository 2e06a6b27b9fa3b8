// KL(p || q) for one pair of prepared distributions: the formula every CPU path shares.
//
// With M = Bq^{-1} Bp (lower triangular), X = Bq^{-1} Up, Vq = Bq^{-1} Wq, Cq = I + Vq^T Vq,
// Cp = I + Vp^T Vp and delta = mu_p - mu_q, Woodbury and the determinant lemma give
//   2 KL = sum_k f(2 (log Bp_kk - log Bq_kk))        f(r) = e^r - 1 - r >= 0
//        + sum_{i>k} M_ik^2 + |X|_F^2
//        - |Lcq^{-1} Vq^T [M X]|_F^2                 (only if q is low rank)
//        + log|Cq| - log|Cp|
//        + |z|^2 + |a - Vq z|^2,  a = Bq^{-1} delta, z = Cq^{-1} Vq^T a.
// The first line pairs tr(M M^T) with -D - log|M M^T| per dimension, so diagonal and full
// pairs never subtract large numbers and KL(p || p) is exactly 0; the mean term is a sum of
// squares (the textbook a^T a - a^T Vq Cq^{-1} Vq^T a cancels for large Wq).
#pragma once

#include <cstdint>

#include "cpu/prepared.hpp"

namespace gausskl::cpu {

// Doubles of scratch two_kl needs for a pair with these layouts.
inline std::int64_t pair_scratch_size(const Layout& q) {
  return 2 * q.d + 2 * q.r;
}

// 2 KL(p || q) >= 0. q must have been prepared with_inverse if q.tri and !p.tri.
double two_kl(const Prepared& p, const Prepared& q, double* scratch);

}  // namespace gausskl::cpu
