// Owned, contiguous batches of Gaussians behind the library's non-owning views.
#pragma once

#include <array>
#include <cmath>
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
  std::vector<T> mean, scale;  // [N, D], [N, D, D] (packed_scale_tril: [N, D (D + 1) / 2])
  bool log_diagonal = false;   // packed_scale_tril only

  FullGaussians<T> view() const {
    const View<T, 2> m = contiguous<T, 2>(mean.data(), {n, d});
    if (param == FullParam::packed_scale_tril) {
      return {m, {}, param, contiguous<T, 2>(scale.data(), {n, d * (d + 1) / 2}), log_diagonal};
    }
    return {m, contiguous<T, 3>(scale.data(), {n, d, d}), param};
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
          return {FullBatch<U>{b.n, b.d, b.param, to(b.mean), to(b.scale), b.log_diagonal}};
        } else {
          return {LowRankBatch<U>{b.n, b.d, b.r, to(b.mean), to(b.factor), to(b.diag)}};
        }
      },
      batch.b);
}

// A packed_scale_tril batch's factors as scale_tril [N, D, D] in U: the same values, except that
// with log_diagonal each L_rr is exp(x) computed in double and rounded once to U.
template <class U, class T>
FullBatch<U> unpacked(const FullBatch<T>& b) {
  const std::int64_t d = b.d, k = d * (d + 1) / 2;
  FullBatch<U> out{b.n, d, FullParam::scale_tril, std::vector<U>(b.mean.begin(), b.mean.end()),
                   std::vector<U>(static_cast<std::size_t>(b.n * d * d), U(0))};
  for (std::int64_t i = 0; i < b.n; ++i)
    for (std::int64_t r = 0; r < d; ++r)
      for (std::int64_t c = 0; c <= r; ++c) {
        const double x = b.scale[i * k + r * (r + 1) / 2 + c];
        out.scale[(i * d + r) * d + c] = static_cast<U>(c == r && b.log_diagonal ? std::exp(x) : x);
      }
  return out;
}

// A copy of v read through unusual strides: the first axis runs backwards and every other
// axis skips padding (-7, a value no entry may take from it).
template <class T, int Rank>
View<T, Rank> restrided(const View<T, Rank>& v, std::vector<T>& storage) {
  View<T, Rank> out{nullptr, v.shape, {}};
  std::int64_t stride = 2;
  for (int k = Rank - 1; k >= 0; --k) {
    out.strides[k] = stride;
    stride = stride * v.shape[k] + 1;
  }
  storage.assign(static_cast<std::size_t>(stride), T(-7));  // padding no read may see
  out.strides[0] = -out.strides[0];
  T* const base = storage.data() + (v.shape[0] - 1) * -out.strides[0];
  out.data = base;
  std::int64_t count = 1;
  for (const std::int64_t s : v.shape)
    count *= s;
  for (std::int64_t flat = 0; flat < count; ++flat) {
    std::array<std::int64_t, Rank> at{};
    for (std::int64_t k = Rank - 1, rest = flat; k >= 0; --k) {
      at[k] = rest % v.shape[k];
      rest /= v.shape[k];
    }
    std::int64_t src = 0, dst = 0;
    for (int k = 0; k < Rank; ++k) {
      src += at[k] * v.strides[k];
      dst += at[k] * out.strides[k];
    }
    base[dst] = v.data[src];
  }
  return out;
}

// g with every array it uses read through restrided(); `storage` keeps the copies (their
// buffers, which the views point into, stay put when storage grows).
template <class T>
Gaussians<T> restrided(const Gaussians<T>& g, std::vector<std::vector<T>>& storage) {
  return std::visit(
      [&](auto family) -> Gaussians<T> {
        using F = decltype(family);
        family.mean = restrided(family.mean, storage.emplace_back());
        if constexpr (std::is_same_v<F, DiagGaussians<T>>) {
          family.scale = restrided(family.scale, storage.emplace_back());
        } else if constexpr (std::is_same_v<F, FullGaussians<T>>) {
          if (family.param == FullParam::packed_scale_tril) {
            family.packed = restrided(family.packed, storage.emplace_back());
          } else {
            family.scale = restrided(family.scale, storage.emplace_back());
          }
        } else {
          family.cov_factor = restrided(family.cov_factor, storage.emplace_back());
          family.cov_diag = restrided(family.cov_diag, storage.emplace_back());
        }
        return family;
      },
      g.variant());
}

}  // namespace gausskl::test
