// The pairwise backward when grad is one value g at every pair (off the diagonal where N = M):
// L = g * sum KL (+ a diagonal), the gradient of a sum or a mean of the matrix. The four
// products of the general path then factor into sums over one side: O((N + M) D) work, O(D)
// memory.
#pragma once

#include <cstdint>

#include "cpu/diag_pairs_backward/operands.hpp"
#include "gausskl/gradients.hpp"

namespace gausskl::cpu {

// Whether grad [n, m] has one value at every (i, j), i != j when n == m (the diagonal pairs
// p_i, q_i are then added one by one); sets g to it. Stops at the first entry that differs.
template <class T>
bool uniform_grad(const T* grad, std::int64_t n, std::int64_t m, double& g) noexcept;

// The gradients for such a grad (sides.self: q = p, and dp gets both sides' contributions), the
// sums over q and p's rows at q's centre, the sums over p and q's rows at p's (CentredSides: so
// the sums over p have no cancellation, their mean m ~ 0). Closed forms in double, per
// dimension, with L = sum_j lam_j, the precision-weighted mean a = sum_j lam_j nu_j / L, the
// mean m of p's means, C = sum_i (mu_i - m)^2 and V = sum_i v_i:
//   dL/dmu_i = g L (mu_i - a),          dL/dv_i = g/2 (L - M / v_i),
//   dL/dnu_j = g N lam_j (nu_j - m),    dL/dw_j = g/2 lam_j (N - lam_j (V + C + N (nu_j - m)^2)),
// sums of terms of one sign until the last subtraction, which is the gradient's own; diagonal
// entries grad_ii != g add (grad_ii - g) times the gradient of KL(p_i || q_i). grad == nullptr:
// g at every pair, the diagonal's included (the gradient of g * sum(KL), no [N, M] to read).
// Workers take ranges of dimensions (every formula is per dimension): results do not depend on
// `workers` (the plan's, at most d). Throws std::bad_alloc only (its O(D) buffers), before any
// output is written.
template <class T>
void pairwise_backward_uniform(const CentredSides<T>& sides, double g, const T* grad,
                               const Gradients<T>& dp, const Gradients<T>& dq, int workers);

}  // namespace gausskl::cpu
