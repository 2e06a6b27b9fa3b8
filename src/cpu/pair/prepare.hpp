// Bringing each input distribution to the internal form of pair/layout.hpp.
#pragma once

#include <atomic>
#include <cstdint>

#include "cpu/pair/layout.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

// Where a factorization failed: the distribution, the pivot (row of the input matrix) and
// the value that should have been positive. index = -1 when every factorization succeeded.
struct FactorFailure {
  std::int64_t index = -1;
  std::int64_t pivot = 0;
  double value = 0;
  // wasserstein2's covariances, which may be singular: not positive semi-definite, value its
  // smallest eigenvalue and largest its largest.
  bool indefinite = false;
  double largest = 0;
};

// The layout for g's family. with_inverse keeps B^{-1} for triangular bases, needed when g is
// the q side and the p side is not triangular.
template <class T>
Layout layout_for(const Gaussians<T>& g, bool with_inverse);
// q's layout beside p: with B^{-1} for a triangular q paired with a p that is not.
template <class T>
Layout q_layout_for(const Gaussians<T>& p, const Gaussians<T>& q);

// How a covariance or precision matrix that is not positive definite is treated: with
// jitter > 0 it is factored again with jitter added to its diagonal (a matrix that factors as
// given is left as given), and `jittered` (shared by the threads) counts those that needed it.
struct Factoring {
  double jitter = 0;
  std::atomic<std::int64_t>* jittered = nullptr;
};

// Doubles of scratch prepare_one needs: one D x D matrix for full covariance; V, the stacked
// [R^T; I] and the Householder scales for low rank.
inline std::int64_t prepare_scratch_size(const Layout& layout) {
  if (layout.tri) return layout.d * layout.d;
  const std::int64_t r = layout.r, k = layout.k;
  return r > 0 ? layout.d * r + (r + k) * k + r : 0;
}

// Prepares distribution n of g into `slot` (layout.size doubles).
template <class T>
FactorFailure prepare_one(const Gaussians<T>& g, std::int64_t n, const Layout& layout, double* slot,
                          double* scratch, const Factoring& factoring = {});

// Prepares distributions [begin, end) of g into slots 0 .. end - begin - 1 of out, on up to
// `threads` threads. Returns the lowest failing index (in g's numbering), if any.
template <class T>
FactorFailure prepare_range(const Gaussians<T>& g, std::int64_t begin, std::int64_t end,
                            PreparedBatch& out, int threads, const Factoring& factoring = {});

// A batch holding N(0, I) in dimension d.
PreparedBatch standard_normal(std::int64_t d);

}  // namespace gausskl::cpu
