// Owned, contiguous batches of Gaussians behind the library's non-owning views.
#pragma once

#include <cstdint>
#include <type_traits>
#include <variant>
#include <vector>

#include "gausskl/types.hpp"

namespace gausskl::test {

template <class T>
struct DiagBatch {
  std::int64_t n = 0, d = 0;
  DiagParam param = DiagParam::stddev;
  std::vector<T> mean, scale;  // [N, D], [N, D]

  DiagGaussians<T> view() const {
    return {contiguous<T, 2>(mean.data(), {n, d}), contiguous<T, 2>(scale.data(), {n, d}), param};
  }
};

template <class T>
struct FullBatch {
  std::int64_t n = 0, d = 0;
  FullParam param = FullParam::scale_tril;
  std::vector<T> mean, scale;  // [N, D], [N, D, D]

  FullGaussians<T> view() const {
    return {contiguous<T, 2>(mean.data(), {n, d}), contiguous<T, 3>(scale.data(), {n, d, d}),
            param};
  }
};

template <class T>
struct LowRankBatch {
  std::int64_t n = 0, d = 0, r = 0;
  std::vector<T> mean, factor, diag;  // [N, D], [N, D, R], [N, D]

  LowRankGaussians<T> view() const {
    return {contiguous<T, 2>(mean.data(), {n, d}), contiguous<T, 3>(factor.data(), {n, d, r}),
            contiguous<T, 2>(diag.data(), {n, d})};
  }
};

// A batch of any family.
template <class T>
struct Batch {
  std::variant<DiagBatch<T>, FullBatch<T>, LowRankBatch<T>> b;

  Gaussians<T> view() const {
    return std::visit([](const auto& x) { return Gaussians<T>(x.view()); }, b);
  }
  std::int64_t n() const {
    return std::visit([](const auto& x) { return x.n; }, b);
  }
};

// The same batch in another precision (exact when widening float to double, so both describe
// the same distributions and share their reference values).
template <class U, class T>
Batch<U> cast(const Batch<T>& batch) {
  const auto to = [](const std::vector<T>& v) { return std::vector<U>(v.begin(), v.end()); };
  return std::visit(
      [&](const auto& b) -> Batch<U> {
        using B = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<B, DiagBatch<T>>) {
          return {DiagBatch<U>{b.n, b.d, b.param, to(b.mean), to(b.scale)}};
        } else if constexpr (std::is_same_v<B, FullBatch<T>>) {
          return {FullBatch<U>{b.n, b.d, b.param, to(b.mean), to(b.scale)}};
        } else {
          return {LowRankBatch<U>{b.n, b.d, b.r, to(b.mean), to(b.factor), to(b.diag)}};
        }
      },
      batch.b);
}

}  // namespace gausskl::test
