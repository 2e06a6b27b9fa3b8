// Gaussian mixtures f = sum_a w_a f_a: KL between mixtures, bounded or approximated in closed
// form from the all-pairs matrices between components (KL, Bhattacharyya) and the components'
// log-determinants, as the Python package's gk.mixture_kl computes it (docs/mixtures.md gives
// the formulas and their sources).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "gausskl/export.hpp"
#include "gausskl/types.hpp"

namespace gausskl {

// A batch of M mixtures of C components each: mixture m's component a is row m * C + a of
// `components` (which has M * C rows), its weight weights(m, a). weights [M, C] are finite,
// non-negative and sum to 1 over a (within 1e-6 for float, 16 C eps for double), or, with
// logits, any finite values whose softmax over a are the weights.
template <class T>
struct Mixtures {
  Gaussians<T> components;
  View<T, 2> weights;
  bool logits = false;
  std::int64_t count() const { return weights.shape[0]; }
  std::int64_t c() const { return weights.shape[1]; }
};

// variational (Hershey & Olsen 2007), upper_bound and lower_bound (Durrieu, Thiran & Kelly
// 2012, with the single-Gaussian upper bound -log sum_b pi_b exp(-KL(f || g_b)) when C = 1),
// product (Hershey & Olsen's product of Gaussians), matched (Goldberger et al. 2003).
enum class MixtureMethod { variational, upper_bound, lower_bound, product, matched };
inline constexpr std::array<const char*, 5> mixture_method_names = {
    "variational", "upper_bound", "lower_bound", "product", "matched"};

// Row-wise over the batches: out[m] = the method's value of KL(f_m || g_m), in nats. f and g
// have equal M, or one has M = 1 and is paired with every mixture of the other (out has the
// larger M). &f == &g computes each block once (exactly 0 for variational, product, matched).
// Errors are tagged [mixture_kl] and name f or g, the mixture and the component.
GAUSSKL_API void mixture_kl(const Mixtures<float>& f, const Mixtures<float>& g,
                            MixtureMethod method, std::span<double> out,
                            const Options& options = {});
GAUSSKL_API void mixture_kl(const Mixtures<double>& f, const Mixtures<double>& g,
                            MixtureMethod method, std::span<double> out,
                            const Options& options = {});

// Both guaranteed bounds at once: lower[m] <= KL(f_m || g_m) <= upper[m] (each clamped at 0),
// sharing the component-pair blocks.
GAUSSKL_API void mixture_kl_bounds(const Mixtures<float>& f, const Mixtures<float>& g,
                                   std::span<double> lower, std::span<double> upper,
                                   const Options& options = {});
GAUSSKL_API void mixture_kl_bounds(const Mixtures<double>& f, const Mixtures<double>& g,
                                   std::span<double> lower, std::span<double> upper,
                                   const Options& options = {});

}  // namespace gausskl
