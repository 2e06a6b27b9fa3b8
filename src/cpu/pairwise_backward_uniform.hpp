// The pairwise backward when grad is one value g at every pair (off the diagonal where N = M):
// L = g * sum KL (+ a diagonal), the gradient of a sum or a mean of the matrix. The four
// products of the general path then factor into sums over one side, O((N + M) D) work.
#pragma once

#include <cstdint>

#include "cpu/pairwise_backward_operands.hpp"
#include "gausskl/gradients.hpp"

namespace gausskl::cpu {

// Whether grad [n, m] has one value at every (i, j), i != j when n == m (the diagonal pairs
// p_i, q_i are then added one by one); sets g to it. Stops at the first entry that differs.
template <class T>
bool uniform_grad(const T* grad, std::int64_t n, std::int64_t m, double& g) noexcept;

// The gradients for such a grad, from p's and q's operands (q == nullptr: q = p, and dp gets
// both sides' contributions). Closed forms in double (per dimension, with the q-weighted mean
// a = sum lam nu / sum lam, the mean m of p's means, C = sum (mu - m)^2, V = sum v):
//   dL/dmu_i = g L (mu_i - a),   dL/dv_i = g/2 (L - M / v_i),   L = sum_j lam_j,
//   dL/dnu_j = g N lam_j (nu_j - m),   dL/dw_j = g/2 lam_j (N - lam_j (V + C + N (nu_j - m)^2)),
// each term of one sign before the last subtraction, which is the gradient's own; diagonal
// entries grad_ii != g add (grad_ii - g) times the gradient of KL(p_i || q_i).
// Throws std::bad_alloc only (its O(D) sums).
template <class T>
void pairwise_backward_uniform(const DiagSide& p, const DiagSide* q, double g, const T* grad,
                               const Gradients<T>& dp, const Gradients<T>& dq);

}  // namespace gausskl::cpu
