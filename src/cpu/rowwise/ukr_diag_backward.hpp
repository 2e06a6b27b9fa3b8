// Gradients of row-wise KL between diagonal Gaussians (the VAE KL term's backward): the SIMD
// kernel (rowwise/ukr_diag_backward-inl.h, one per Highway target, picked at run time by
// rowwise/ukr_diag_backward.cpp). Reads the caller's strided views in place, allocates nothing,
// cannot fail.
//
// Per dimension, with v, w the variances of p and q, lam = 1 / w, delta = mu - nu,
// E = v / w - 1 and Q = delta^2 lam (KL = 1/2 sum_h Q + E - log(1 + E)):
//   dKL/dmu = delta lam = -dKL/dnu
//   dKL/dlog v = E / 2,    dKL/dlog w = -(E + Q) / 2
// and a parameter x of log variance phi(x) (std: 2 log x, var: log x, logvar: x, precision:
// -log x) gets dKL/dlog(variance) * phi'(x). E is formed from the parameters' exact difference
// where p and q are given alike (std: a (a + 2) with a = (s - t) / t; var: (v - w) / w;
// precision: (lam - pi) / pi; logvar: expm1(a - b); N(0, I): likewise against 1), so that the
// gradients are exactly 0 at p = q and accurate relative to their own size near it; mixed
// parameterizations take E = v lam - 1.
#pragma once

#include <cstdint>

#include "cpu/rowwise/grad_sink.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

// Rows lo <= i < hi of L = sum_i grad[i] KL(p_i || q_i) (grad indexed by i itself): each
// side's gradients go to its sinks (grad_sink.hpp; row_size D). A side with one row is
// broadcast over every i (its sinks should then be sums); q == nullptr means q = N(0, I) and
// sq is not used. A row's values depend only on that row and the target, never on lo, hi or the
// strides of the views; sums are added in increasing i.
template <class T>
void rowwise_diag_backward(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo,
                           std::int64_t hi, const T* grad, const SideSinks<T>& sp,
                           const SideSinks<T>& sq) noexcept;

// Rows lo <= i < hi of KL(p_i || q_i) into out[i - lo] (the values rowwise_diag gives, up to
// rounding in the last bits of a double) and each row's own gradients (those above for
// grad[i] = 1) into the sinks' rows, computed in double and rounded once to S (T, or double).
// Every side has a row per i (no broadcast) and the sinks are rows. p and q both logvar and
// contiguous along h go in one pass (the exponentials of the values are those of the gradients);
// anything else takes the forward kernel and then the backward's.
template <class T, class S>
void rowwise_diag_with_gradients(const DiagGaussians<T>& p, const DiagGaussians<T>* q,
                                 std::int64_t lo, std::int64_t hi, double* out,
                                 const SideSinks<S>& sp, const SideSinks<S>& sq) noexcept;

const char* rowwise_diag_backward_target() noexcept;

}  // namespace gausskl::cpu
