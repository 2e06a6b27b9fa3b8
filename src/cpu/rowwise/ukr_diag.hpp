// Row-wise KL between diagonal Gaussians, the VAE KL term: the SIMD kernel (rowwise/ukr_diag-inl.h,
// one per Highway target, picked at run time by rowwise/ukr_diag.cpp) and its portable scalar
// reference (rowwise/ukr_diag_ref.cpp). Both read the caller's strided views directly: no prepared
// copies, no allocation, nothing that can fail.
//
// Per row, with r_h = log v_h - log w_h (v, w: the variances of p and q):
//   2 KL = sum_h (mu_h - nu_h)^2 / w_h + f(r_h),    f(r) = e^r - 1 - r >= 0,
// all in double whatever T is, clamped at >= 0, and exactly 0 when p and q are given alike
// (every term is then exactly 0).
#pragma once

#include <cstdint>

#include "gausskl/types.hpp"

namespace gausskl::cpu {

// out[i - lo] = KL(p_i || q_i) for lo <= i < hi. A side with one row is broadcast over every i;
// q == nullptr means q = N(0, I). The inputs are as validation leaves them (values in the
// accepted ranges). The result of a row depends only on that row (and the target), never on lo
// and hi, so it is the same whatever the thread split.
template <class T>
using RowwiseDiagFn = void (*)(const DiagGaussians<T>& p, const DiagGaussians<T>* q,
                               std::int64_t lo, std::int64_t hi, double* out) noexcept;

// The kernel of the Highway target chosen at run time, and that target's name.
template <class T>
void rowwise_diag(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo,
                  std::int64_t hi, double* out) noexcept;
const char* rowwise_diag_target() noexcept;

// The scalar reference: diag_terms.hpp and expm1_minus_x of stable.hpp (libm), one term at a
// time in h order. The oracle of the SIMD kernel's tests.
template <class T>
void rowwise_diag_ref(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo,
                      std::int64_t hi, double* out) noexcept;

}  // namespace gausskl::cpu
