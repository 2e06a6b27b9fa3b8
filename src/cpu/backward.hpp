// Gradients on the CPU backend: what src/core/backward.cpp dispatches to after validation.
// Like the forward backends they never validate and never throw, except std::bad_alloc while
// allocating their workspace up front.
#pragma once

#include <cstdint>

#include "gausskl/gradients.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

// Row-wise: L = sum_{i < n} grad[i] KL(p_i || q_i), a side with N = 1 broadcast over every i
// (its gradients summed over i); q == nullptr means q = N(0, I). p and q have library gradients
// (has_gradients) and the same family. Empty spans are not written.
template <class T>
void kl_rowwise_backward(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n,
                         const T* grad, const Gradients<T>& dp, const Gradients<T>& dq,
                         int workers);

// Row-wise values with each row's own gradients (grad = 1), computed in double and rounded once to
// S (T, or double): diagonal p and q (or q == nullptr, N(0, I)), each with n rows. Empty spans are
// not written.
template <class T, class S>
void kl_rowwise_with_gradients(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t n,
                               T* out, const Gradients<S>& dp, const Gradients<S>& dq, int workers);

// dst[i * row_size + k] = grad[i] * unit[i * row_size + k] for i < rows, each product in double.
template <class T>
void scale_rows(const double* unit, std::int64_t rows, std::int64_t row_size, const T* grad,
                T* dst) noexcept;

// data[i * row_size + k] *= grad[i] for i < rows, in place.
template <class T>
void scale_rows_in_place(T* data, std::int64_t rows, std::int64_t row_size, const T* grad) noexcept;

// dst[k] = sum_{i < rows} grad[i] * unit[i * row_size + k], summed in double in row order.
template <class T>
void sum_scaled_rows(const double* unit, std::int64_t rows, std::int64_t row_size, const T* grad,
                     T* dst) noexcept;

// The workers of the all-pairs backward's two paths (diag_pairs_backward/front.cpp): the closed
// forms of a grad with one value at every pair, or the GEMM forms; which one runs depends on the
// grad's values, so the plan sizes both.
struct PairsBackwardConfig {
  int uniform_workers = 1;
  int gemm_workers = 1;
};

// All pairs of diagonal batches: L = sum_ij grad[i * M + j] KL(p_i || q_j), or, with grad ==
// nullptr, L = sum_grad * sum_ij KL(p_i || q_j); q == nullptr means q = p (dp then receives both
// contributions, dq is empty).
template <class T>
void pairwise_diag_backward(const DiagGaussians<T>& p, const DiagGaussians<T>* q, const T* grad,
                            double sum_grad, const Gradients<T>& dp, const Gradients<T>& dq,
                            const PairsBackwardConfig& config);

}  // namespace gausskl::cpu
