// The pairwise backward for any grad G [N, M]: the GEMM forms of diag_pairs/plan.hpp on centred
// operands (P's at q's centre, Q's at p's: CentredSides), in double,
//   P = G [lam, nu lam]  ([N, 2D], the p side),   Q = G^T [mu, v + mu^2]  ([M, 2D], the q side),
//   dL/dmu_i = mu_i P1_i - P2_i,        dL/dv_i = (P1_i - r_i / v_i) / 2,
//   dL/dnu_j = lam_j (nu_j c_j - Q1_j),
//   dL/dw_j = (c_j lam_j - lam_j^2 (Q2_j - 2 nu_j Q1_j + nu_j^2 c_j)) / 2,
// with r and c the row and column sums of G. BLIS-style: B packed once per call in panels of
// the kernel's nr columns, A (rows of G or of G^T) packed per block of kGemmMC x kGemmKC.
#pragma once

#include <cstdint>

#include "cpu/diag_pairs_backward/operands.hpp"
#include "gausskl/gradients.hpp"

namespace gausskl::cpu {

// Error (u = 2^-53, K = N or M): a product entry is off by <= (kGemmKC + K/kGemmKC + 2) u sum|G x|,
// so dL/dmu_i by <= (kGemmKC + K/kGemmKC + 4) u sum_j |G_ij| lam_j (|mu_i| + |nu_j|), < 1e-12 of
// it. (dL/dw alike with v + mu^2 + 2 |mu nu| + nu^2.) Results do not depend on `workers`. Throws
// std::bad_alloc only, before any work.
template <class T>
void pairwise_backward_gemm(const CentredSides<T>& sides, const T* grad, const Gradients<T>& dp,
                            const Gradients<T>& dq, int workers);

}  // namespace gausskl::cpu
