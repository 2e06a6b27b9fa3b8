// Row-wise jeffreys, bhattacharyya, hellinger, renyi and wasserstein2 between two diagonal batches:
// the SIMD kernel (diag_simd.cpp, one per Highway target, picked at run time), h the lane
// dimension, in double whatever T is. Per dimension it needs no logarithm of sigma_p / sigma_q
// near 1: from sigma, 1 / sigma and ds = sigma_p - sigma_q (exact from the parameters where both
// sides share the parameterization, as diag.cpp's sigma_difference),
//   jeffreys' 4 sinh^2 t = (ds (1 / sigma_p + 1 / sigma_q))^2,
//   log cosh t = log1p(ds^2 / (2 sigma_p sigma_q)),
//   renyi's mu = v_p / v_q - 1 = ds (sigma_p + sigma_q) / v_q,
// t = log(sigma_p / sigma_q): each a product or quotient of accurate factors, nothing cancels.
#pragma once

#include <cstdint>

#include "gausskl/types.hpp"

namespace gausskl::cpu {

// out[i - lo] = D(p_i || q_i) for lo <= i < hi (a side with one row broadcast), kind not kl.
// Returns -1, or the first row where the kernel leaves the value to the scalar form
// (divergence_diag_rows_ref): renyi with a mixed variance not positive or below the normal range;
// rows before it are written. A row's result depends only on that row and the target.
template <class T>
std::int64_t divergence_diag_rows_simd(const DiagGaussians<T>& p, const DiagGaussians<T>& q,
                                       Divergence kind, double alpha, std::int64_t lo,
                                       std::int64_t hi, double* out) noexcept;

// The name of the Highway target the kernel runs on.
const char* divergence_diag_simd_target() noexcept;

}  // namespace gausskl::cpu
