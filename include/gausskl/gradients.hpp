// Gradients of the operations, for training loops: given grad = dL/dout of an operation's result,
// the gradients of L with respect to the arrays of p and q.
//
// Errors and validation are those of the forward operation (the same rules and messages, under
// the op name "kl_backward", "kl_standard_normal_backward" or "pairwise_kl_backward"), plus the
// sizes of grad and of the gradient spans. Arithmetic is in double whatever T is.
#pragma once

#include <span>

#include "gausskl/export.hpp"
#include "gausskl/families.hpp"
#include "gausskl/types.hpp"

namespace gausskl {

// Where the gradients of one batch go. Each span is either empty (that gradient is not wanted)
// or has exactly as many elements as the batch's array of that role, and receives dL/d(array)
// in C order of the array's shape, whatever the array's strides:
//   mean   [N, D]
//   scale  a diagonal batch: [N, D], of std, var, logvar or precision as given;
//          a full batch: scale_tril [N, D, D] (0 above the diagonal), or packed_scale_tril
//          [N, D (D + 1) / 2] (of log L_rr at the diagonal entries with log_diagonal)
// A batch with N = 1 paired with every row of the other receives the sum over the rows. The
// spans must not overlap each other or the batches' arrays (gradients are written while the
// inputs are still being read).
template <class T>
struct Gradients {
  std::span<T> mean{};
  std::span<T> scale{};
};

// Whether the library computes gradients for batches like g: diagonal (every parameterization)
// and full batches given by scale_tril or packed_scale_tril. Other families and
// parameterizations (covariance, precision_matrix, low rank) throw std::invalid_argument from
// the *_backward operations; gausskl's Python package takes their gradients through its torch
// operations instead.
template <class T>
bool has_gradients(const Gaussians<T>& g) {
  return describe(g).gradients != LibraryGradients::none;
}

// Row-wise: L = sum_i grad[i] * KL(p_i || q_i), grad with as many elements as kl's out. p and q
// must both have library gradients (has_gradients) and be of the same family.
GAUSSKL_API void kl_backward(const Gaussians<float>& p, const Gaussians<float>& q,
                             std::span<const float> grad, const Gradients<float>& dp,
                             const Gradients<float>& dq, const Options& options = {});
GAUSSKL_API void kl_backward(const Gaussians<double>& p, const Gaussians<double>& q,
                             std::span<const double> grad, const Gradients<double>& dp,
                             const Gradients<double>& dq, const Options& options = {});

// L = sum_i grad[i] * KL(p_i || N(0, I)).
GAUSSKL_API void kl_standard_normal_backward(const Gaussians<float>& p, std::span<const float> grad,
                                             const Gradients<float>& dp,
                                             const Options& options = {});
GAUSSKL_API void kl_standard_normal_backward(const Gaussians<double>& p,
                                             std::span<const double> grad,
                                             const Gradients<double>& dp,
                                             const Options& options = {});

// A training step's forward that keeps its gradients: out[i] = KL(p_i || q_i), as kl gives it, and
// in dp and dq each row's own gradients, dKL(p_i || q_i) / d(array) at row i (kl_backward's for
// grad = 1), computed in double and rounded once to the spans' type: T, or double. The step's
// backward is then one product per element (scale_rows), where kl_backward would compute every
// exponential again: p and q both given by logvar (the VAE's prior term, a learned prior) take one
// pass for both (bench/README.md, "The seeds' own sizes"). Spans of T can be scaled in place and
// become the gradients themselves (nothing to scale for a loss sum(KL): grad = 1); double keeps
// the exact values a sum needs. Diagonal batches, any parameterization and strides, N = 1 on one
// side paired with every row of the other as kl pairs it: each of that side's spans then holds
// every pair's own gradient ([n, D] like the other side's; sum_scaled_rows, from double, makes the
// side's gradient). Errors are kl's (op "kl", or "kl_standard_normal" below) plus the spans'
// sizes; other families are std::invalid_argument. No span may overlap another or the batches'
// arrays.
GAUSSKL_API void kl_with_gradients(const Gaussians<float>& p, const Gaussians<float>& q,
                                   std::span<float> out, const Gradients<float>& dp,
                                   const Gradients<float>& dq, const Options& options = {});
GAUSSKL_API void kl_with_gradients(const Gaussians<float>& p, const Gaussians<float>& q,
                                   std::span<float> out, const Gradients<double>& dp,
                                   const Gradients<double>& dq, const Options& options = {});
GAUSSKL_API void kl_with_gradients(const Gaussians<double>& p, const Gaussians<double>& q,
                                   std::span<double> out, const Gradients<double>& dp,
                                   const Gradients<double>& dq, const Options& options = {});
// The same against N(0, I).
GAUSSKL_API void kl_standard_normal_with_gradients(const Gaussians<float>& p, std::span<float> out,
                                                   const Gradients<float>& dp,
                                                   const Options& options = {});
GAUSSKL_API void kl_standard_normal_with_gradients(const Gaussians<float>& p, std::span<float> out,
                                                   const Gradients<double>& dp,
                                                   const Options& options = {});
GAUSSKL_API void kl_standard_normal_with_gradients(const Gaussians<double>& p,
                                                   std::span<double> out,
                                                   const Gradients<double>& dp,
                                                   const Options& options = {});

// The backward of a kept gradient: dst[i * k + j] = grad[i] * unit[i * k + j] for the rows i <
// grad.size() (k = unit.size() / grad.size()), each product in double rounded once to T: the
// gradient of L = sum_i grad[i] KL_i with respect to one array, from that array's double span
// filled by kl_with_gradients. Sizes that do not match: std::invalid_argument ("[scale_rows] ...").
GAUSSKL_API void scale_rows(std::span<const double> unit, std::span<const float> grad,
                            std::span<float> dst);
GAUSSKL_API void scale_rows(std::span<const double> unit, std::span<const double> grad,
                            std::span<double> dst);
// The same in place, from a span of T: rows[i * k + j] *= grad[i], each product rounded once to T
// (with the kept value's own rounding, within an ulp of the exact product). rows not whole rows of
// grad: std::invalid_argument ("[scale_rows] ...").
GAUSSKL_API void scale_rows(std::span<const float> grad, std::span<float> rows);
GAUSSKL_API void scale_rows(std::span<const double> grad, std::span<double> rows);

// The backward of a kept gradient of a side paired with every row (one distribution, or an array
// read with row stride 0): dst[j] = sum_i grad[i] * unit[i * k + j] for j < k = dst.size(), over
// the rows i < grad.size() in order, summed in double and rounded once to T. unit must hold
// grad.size() rows of dst.size(): else std::invalid_argument ("[sum_scaled_rows] ...").
GAUSSKL_API void sum_scaled_rows(std::span<const double> unit, std::span<const float> grad,
                                 std::span<float> dst);
GAUSSKL_API void sum_scaled_rows(std::span<const double> unit, std::span<const double> grad,
                                 std::span<double> dst);

// All pairs of diagonal batches: L = sum_ij grad[i * M + j] * KL(p_i || q_j), grad row-major
// [N, M]. Without q, q = p and dp receives both sides' contributions. No [N, M, D] intermediate.
GAUSSKL_API void pairwise_kl_backward(const Gaussians<float>& p, const Gaussians<float>& q,
                                      std::span<const float> grad, const Gradients<float>& dp,
                                      const Gradients<float>& dq, const Options& options = {});
GAUSSKL_API void pairwise_kl_backward(const Gaussians<double>& p, const Gaussians<double>& q,
                                      std::span<const double> grad, const Gradients<double>& dp,
                                      const Gradients<double>& dq, const Options& options = {});
GAUSSKL_API void pairwise_kl_backward(const Gaussians<float>& p, std::span<const float> grad,
                                      const Gradients<float>& dp, const Options& options = {});
GAUSSKL_API void pairwise_kl_backward(const Gaussians<double>& p, std::span<const double> grad,
                                      const Gradients<double>& dp, const Options& options = {});
// The same for L = grad * sum_ij KL(p_i || q_j), one grad for every pair: the gradients of the
// matrix's sum (grad = 1) or mean (grad = 1 / (N M)) without an [N, M] upstream gradient to
// make and read. Same rules and errors as pairwise_kl_backward, under its op name.
GAUSSKL_API void pairwise_kl_sum_backward(const Gaussians<float>& p, const Gaussians<float>& q,
                                          float grad, const Gradients<float>& dp,
                                          const Gradients<float>& dq, const Options& options = {});
GAUSSKL_API void pairwise_kl_sum_backward(const Gaussians<double>& p, const Gaussians<double>& q,
                                          double grad, const Gradients<double>& dp,
                                          const Gradients<double>& dq, const Options& options = {});
GAUSSKL_API void pairwise_kl_sum_backward(const Gaussians<float>& p, float grad,
                                          const Gradients<float>& dp, const Options& options = {});
GAUSSKL_API void pairwise_kl_sum_backward(const Gaussians<double>& p, double grad,
                                          const Gradients<double>& dp, const Options& options = {});

}  // namespace gausskl
