// The oracle of the gradient tests: dL/d(each input array) of L = sum_i grad[i] KL(p_i || q_i)
// (or KL(p_i || N(0, I))) in long double, by the covariance route rather than the kernels':
//   dKL/dSigma_p = 1/2 T^{-1} (S - T) S^{-1},   dKL/dSigma_q = -1/2 T^{-1} (S - T + dd^T) T^{-1},
//   dKL/dmu_p = T^{-1} d,   d = mu_p - mu_q   (S, T the covariances of p and q)
// chained to each parameterization: diagonal v = s^2, v, e^a, 1 / pi; full dKL/dL = 2 dKL/dSigma L
// restricted to the lower triangle (times L_rr on a log diagonal). S - T is formed from the
// parameters' difference (diagonal: (s - t)(s + t), v - w, w expm1(a - b), (lam - pi) / (pi lam);
// full: D Lp^T + Lq D^T with D = Lp - Lq), so that the oracle stays accurate relative to the
// gradient near p = q, where the gradients are small differences.
//
// Besides each value, two magnitudes for the error measures, each summed over rows as |grad_i|
// times:
//   terms  the size of the textbook formula's terms (e.g. 1/2 (1/w + 1/v) |dv/dx| for
//          dKL/dv = 1/2 (1/w - 1/v); full: those of tril(Lq^{-T} M) - diag(1 / Lp_kk) with
//          |Lq^{-1}| |Lp| for |M|, as the substitution forming M adds them): what a computation
//          that cancels them loses accuracy to;
//   near   the same for the difference forms (diagonal p: the value itself; dL/dLq: the terms of
//          -tril(Lq^{-T}(y y^T + N N^T + N)) - diag(N_kk / Lq_kk), |Lq^{-1}| |D| for |N|,
//          D = Lp - Lq): 0 at p = q.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gausskl/types.hpp"

namespace gausskl::test {

struct RefArray {
  std::vector<long double> value, terms, near;  // C order of the input array's shape
  std::vector<long double> oracle;              // a bound on the oracle's own error in value
};
struct RefSide {
  RefArray mean, scale;
};
struct RefGradients {
  RefSide p, q;  // q empty for N(0, I)
};

// p and q diagonal, or full given by scale_tril / packed_scale_tril (any mix); q == nullptr:
// N(0, I). A side with N = 1 broadcast over the rows receives the sum.
template <class T>
RefGradients reference_backward(const Gaussians<T>& p, const Gaussians<T>* q,
                                std::span<const T> grad);

// The error measures of a gradient array against the oracle, the largest over its entries, with
// e = max(0, |got - value| - oracle) (what the oracle's own error cannot explain):
//   against terms: e / (|value| + terms)   (any data, any parameterizations)
//   against near:  e / (|value| + near)    (the difference forms' accuracy near p = q)
// infinity if sizes differ or an entry is not finite where the value is.
enum class Measure { terms, near };
template <class U>
double gradient_error(std::span<const U> got, const RefArray& ref, Measure measure);

// Keeps the largest error per op and measure (a table), row (e.g. "p.scale") and column (e.g.
// "f32"); the tables are printed once all tests have run.
void record_gradient_error(const std::string& op, Measure measure, const std::string& row,
                           const std::string& column, double error);

// A packed_scale_tril batch that owns its arrays: packed [N, D (D + 1) / 2] in
// torch.tril_indices order, from a [N, D, D] factor (the log of the diagonal with log_diagonal).
template <class T>
struct PackedBatch {
  std::int64_t n = 0, d = 0;
  bool log_diagonal = false;
  std::vector<T> mean, packed;

  FullGaussians<T> view() const {
    FullGaussians<T> g{contiguous<T, 2>(mean.data(), {n, d}), {}, FullParam::packed_scale_tril};
    g.packed = contiguous<T, 2>(packed.data(), {n, d * (d + 1) / 2});
    g.log_diagonal = log_diagonal;
    return g;
  }
};

// Packs factors given as [N, D, D] doubles (lower triangle, positive diagonal), rounding once.
template <class T>
PackedBatch<T> pack(std::int64_t n, std::int64_t d, const std::vector<double>& mean,
                    const std::vector<double>& tril, bool log_diagonal);

}  // namespace gausskl::test
