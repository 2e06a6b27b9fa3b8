// Gradients of row-wise KL between full Gaussians given by Cholesky factors (scale_tril or
// packed_scale_tril, any mix, log diagonals allowed), and of such a p against N(0, I): the SIMD
// kernel (rowwise/ukr_full_backward-inl.h, one per Highway target, picked at run time by
// rowwise/ukr_full_backward.cpp). Reads the factors in place; nothing to allocate but the scratch
// the caller passes, nothing that can fail (validated factors have a positive diagonal).
//
// Per row pair, with delta = mu_p - mu_q, y = Lq^{-1} delta, M = Lq^{-1} Lp:
//   2 KL = |y|^2 + |M|_F^2 - 2 sum log Lp_kk + 2 sum log Lq_kk - d
//   dKL/dmu_p = Lq^{-T} y = -dKL/dmu_q
//   dKL/dLp = tril(Lq^{-T} M) - diag(1 / Lp_kk)
//   dKL/dLq = -tril(Lq^{-T} (y y^T + M M^T)) + diag(1 / Lq_kk)
// Near p = q these cancel: M = I + N with N small, and M itself comes out of a substitution
// that cancels Lp against Lq. So a column c of M is solved either as is (the M-form) or as
// N_c = Lq^{-1} D_c with D = Lp - Lq (the N-form: D is exact where Lp and Lq are close, and with
// log diagonals on both sides D_kk = Lq_kk expm1(a - b)), whichever right-hand side is smaller
// (sum_j |D_jc| <= sum_j |Lp_jc|: N-form). With X = [y | the solved columns] and Z = Lq^{-T} X,
// using M = I + N, tril(Lq^{-T}) = diag(1 / Lq_kk) and tril(Lq^{-T} e_c N_c^T) = N_cc / Lq_cc at
// (c, c), column c of the gradients is (r > c, and F = tril(Lq^{-T} X X^T)):
//   N-form  dKL/dLp_rc = Z_rc               dKL/dLp_cc = Z_cc + N_cc / Lp_cc
//           dKL/dLq_rc = -F_rc - Z_rc       dKL/dLq_cc = -F_cc - Z_cc - N_cc / Lq_cc
//   M-form  dKL/dLp_rc = Z_rc               dKL/dLp_cc = Z_cc - 1 / Lp_cc
//           dKL/dLq_rc = -F_rc              dKL/dLq_cc = -F_cc + 1 / Lq_cc
// (Z indexed by the columns of M). Every term of the N-form is O(|N| + |y|): the gradients are
// exactly 0 at p = q, and near it accurate relative to their size; the M-form serves columns
// where q is much wider than p (D ~ -Lq), where the N-form would cancel terms of size |Lq|.
// A log diagonal a = log L_rr gets dKL/dL_rr * L_rr.
// Range: in a row whose KL and exact gradients are finite doubles, every intermediate is bounded
// by them (|y|^2, |M|_F^2 <= 2 KL + ...), so the gradients come out finite. A gradient can
// overflow with KL finite (dKL/dLq ~ |y|^2 / Lq_kk); in such a row a 0 coefficient meeting the
// infinity can make other entries NaN: guarding each product would cost the O(d^3) loops for a
// row whose gradient is unusable anyway.
// Against N(0, I): dKL/dmu = mu, dKL/dL = L below the diagonal and (L_kk^2 - 1) / L_kk on it
// (expm1(2 a) for a log diagonal).
#pragma once

#include <cstdint>

#include "cpu/rowwise/grad_sink.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

// Staged rows are padded to a multiple of this many doubles (the widest vector, AVX-512).
inline constexpr std::int64_t kFullBackwardPad = 8;

inline std::int64_t full_backward_round(std::int64_t n) {
  return (n + kFullBackwardPad - 1) / kFullBackwardPad * kFullBackwardPad;
}

// Doubles of scratch one worker needs at dimension d: Lq, Lp and F (d rows, padded), X and its
// solves (d rows of d + 1 columns and padding), X^T (d + 1 rows, padded), ten vectors over k.
inline std::int64_t rowwise_full_backward_scratch(std::int64_t d) {
  const std::int64_t ld = full_backward_round(d);
  return 3 * d * ld + d * (ld + kFullBackwardPad) + (d + 1) * ld + 10 * ld;
}

// Rows lo <= i < hi of L = sum_i grad[i] KL(p_i || q_i) (grad indexed by i itself): each side's
// gradients go to its sinks (grad_sink.hpp; row_size D for the mean, D * D for scale_tril with 0
// above the diagonal, D (D + 1) / 2 for packed_scale_tril). A side with one row is broadcast over
// every i; q == nullptr means q = N(0, I) (sq unused). scratch: rowwise_full_backward_scratch(d)
// doubles, 64-byte aligned. A row's values depend only on that row and the target; sums are added
// in increasing i.
template <class T>
void rowwise_full_backward(const FullGaussians<T>& p, const FullGaussians<T>* q, std::int64_t lo,
                           std::int64_t hi, const T* grad, const SideSinks<T>& sp,
                           const SideSinks<T>& sq, double* scratch) noexcept;
const char* rowwise_full_backward_target() noexcept;

}  // namespace gausskl::cpu
