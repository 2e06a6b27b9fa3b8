// The pairwise backward for any grad G [N, M]: the GEMM forms of DESIGN.md section 2 on centred
// operands, in double,
//   P = G [lam, nu lam]  ([N, 2D], the p side),   Q = G^T [mu, v + mu^2]  ([M, 2D], the q side),
//   dL/dmu_i = mu_i P1_i - P2_i,        dL/dv_i = (P1_i - r_i / v_i) / 2,
//   dL/dnu_j = lam_j (nu_j c_j - Q1_j),
//   dL/dw_j = (c_j lam_j - lam_j^2 (Q2_j - 2 nu_j Q1_j + nu_j^2 c_j)) / 2,
// with r and c the row and column sums of G. BLIS-style: B packed once per call in panels of
// the kernel's nr columns, A (rows of G or of G^T) packed per block of kGemmMC x kGemmKC.
#pragma once

#include <cstdint>

#include "cpu/pairwise_backward_operands.hpp"
#include "gausskl/gradients.hpp"

namespace gausskl::cpu {

// Error: every product entry is a sum of K = N or M terms G x, each a double multiply-add
// chain of at most kGemmKC steps added into the entry, so |err| <= (kGemmKC + K / kGemmKC + 2)
// u sum |G x| (u = 2^-53), and the gradients' combinations add a few u of their terms' sizes:
// dL/dmu_i is off by at most (kGemmKC + K / kGemmKC + 4) u sum_j |G_ij| lam_j (|mu_i| + |nu_j|),
// below 1e-13 of that sum for K <= 2^20; dL/dw_j likewise with |G| (v + mu^2 + 2 |mu nu| + nu^2).
// Results do not depend on `workers`. Throws std::bad_alloc only, before any work.
template <class T>
void pairwise_backward_gemm(const DiagSide& p, const DiagSide* q, const T* grad,
                            const Gradients<T>& dp, const Gradients<T>& dq, int workers);

// The workers worth starting for n x m pairs of dimension d (kBackwardWorkPerThread).
int pairwise_backward_workers(std::int64_t n, std::int64_t m, std::int64_t d, int threads);

}  // namespace gausskl::cpu
