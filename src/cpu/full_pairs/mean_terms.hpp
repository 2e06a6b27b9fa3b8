// The mean part of full-covariance all-pairs KL, |W_j (mu_i - nu_j)|^2 with W_j = L_j^{-1},
// computed per pair from the two means as given: no centre shared by the batch, so that an entry's
// bits depend on p_i and q_j only (full_pairs/operands.hpp). SIMD lanes are rows of p; no ISA
// appears here: the target is chosen at run time (full_pairs/mean_terms.cpp).
#pragma once

#include <cstdint>

#include "cpu/full_pairs/gemm.hpp"

namespace gausskl::cpu {

// For a group of kFullLanes rows of p, mu_t[h * kFullLanes + l] = mean of row l, and columns
// c < cols of q (nu + c * d their means, w + c * d(d+1)/2 their W lower-triangular, packed row by
// row: W_kh at k(k+1)/2 + h):
//   quad[c * kFullLanes + l] = sum_k y_k^2, y = W_c (mu_l - nu_c);
//   dist2[c * kFullLanes + l] = sum_h (mu_lh - nu_ch)^2.
// Each lane in one fixed order, whatever the target's vector width or the other lanes: delta_h
// rounded once; y_k summed from 0 in increasing h by multiply-adds; quad and dist2 summed from 0
// in increasing k and h likewise (fused on targets with FMA). Never throws or allocates.
void full_mean_terms(const double* mu_t, std::int64_t d, const double* nu, const double* w,
                     std::int64_t cols, double* quad, double* dist2) noexcept;

}  // namespace gausskl::cpu
