// Each family of Gaussians described once: what its messages call it, how it is stored, which
// gradients the library has for it. Core plans and validates by it, gradients.hpp and the Python
// package's table (_ext.FAMILIES) read it; a new family adds its describe_family overload here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <variant>

#include "gausskl/types.hpp"

namespace gausskl {

// In the order of Gaussians<T>::Variant's alternatives.
enum class Family { diag, full, low_rank };

// The gradients the library computes for a batch (gausskl/gradients.hpp): every gradient
// operation of diagonal batches; kl_backward's of full batches given by their factor L.
enum class LibraryGradients { none, diag, tril };

// What a family given by one parameterization is.
struct FamilyDescription {
  Family family;
  const char* name;         // in messages: "diagonal", the full parameterization, "low-rank"
  const char* scale_param;  // its scale in a factorization's message: full's parameterization
  bool dense;               // a D x D covariance per distribution (prepared by its Cholesky factor)
  bool by_factor;           // given by its Cholesky factor L, which kernels read in place
  bool factored;            // a symmetric matrix the library factors (Cholesky; jitter applies)
  LibraryGradients gradients;
};

constexpr FamilyDescription describe_family(DiagParam) {
  return {Family::diag, "diagonal", "scale", false, false, false, LibraryGradients::diag};
}
constexpr FamilyDescription describe_family(FullParam p) {
  const bool by_factor = p == FullParam::scale_tril || p == FullParam::packed_scale_tril;
  return {Family::full,
          param_name(p),
          param_name(p),
          true,
          by_factor,
          !by_factor,
          by_factor ? LibraryGradients::tril : LibraryGradients::none};
}
constexpr FamilyDescription describe_low_rank() {
  return {Family::low_rank, "low-rank", "scale", false, false, false, LibraryGradients::none};
}

// One batch's description, with the sizes its views give.
struct BatchDescription : FamilyDescription {
  std::int64_t rank;       // R of a low-rank batch; 0 for the others
  std::int64_t scale_row;  // elements per distribution of its scale (low rank: cov_factor) array
};

namespace detail {
// a * b, or the largest int64 where that overflows: a description is read before the shapes'
// checks, which then refuse the size (it is never wrapped).
inline std::int64_t saturating_product(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? std::numeric_limits<std::int64_t>::max() : out;
}
}  // namespace detail

template <class T>
BatchDescription describe_family(const DiagGaussians<T>& g) {
  return {describe_family(g.param), 0, g.mean.shape[1]};
}
template <class T>
BatchDescription describe_family(const FullGaussians<T>& g) {
  const std::int64_t d = g.mean.shape[1];
  return {describe_family(g.param), 0,
          g.param == FullParam::packed_scale_tril
              ? detail::saturating_product(d % 2 == 0 ? d / 2 : d, d % 2 == 0 ? d + 1 : (d + 1) / 2)
              : detail::saturating_product(d, d)};
}
template <class T>
BatchDescription describe_family(const LowRankGaussians<T>& g) {
  const std::int64_t r = g.cov_factor.shape[2];
  return {describe_low_rank(), r, detail::saturating_product(g.mean.shape[1], r)};
}

template <class T>
BatchDescription describe(const Gaussians<T>& g) {
  return std::visit([](const auto& family) { return describe_family(family); }, g.variant());
}

namespace detail {
template <std::size_t I>
using Alternative = std::variant_alternative_t<I, Gaussians<float>::Variant>;
}  // namespace detail
static_assert(std::variant_size_v<Gaussians<float>::Variant> == 3 &&
                  std::is_same_v<detail::Alternative<0>, DiagGaussians<float>> &&
                  std::is_same_v<detail::Alternative<1>, FullGaussians<float>> &&
                  std::is_same_v<detail::Alternative<2>, LowRankGaussians<float>> &&
                  describe_family(DiagParam{}).family == Family::diag &&
                  describe_family(FullParam{}).family == Family::full &&
                  describe_low_rank().family == Family::low_rank,
              "one Family per alternative of Gaussians<T>::Variant, in its order");

}  // namespace gausskl
