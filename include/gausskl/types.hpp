// Non-owning, strided views of batches of Gaussian distributions.
//
// A view never copies: it points at the caller's arrays, which must outlive the call.
// Strides are in elements (not bytes) and may be zero (broadcast) or negative.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

#include "gausskl/divergence_kinds.hpp"
#include "gausskl/limits.hpp"

namespace gausskl {

// A read-only N-dimensional strided view: element (i0, i1, ...) is at
// data[i0 * strides[0] + i1 * strides[1] + ...].
template <class T, int Rank>
struct View {
  const T* data = nullptr;
  std::array<std::int64_t, Rank> shape{};
  std::array<std::int64_t, Rank> strides{};

  template <class... I>
  const T& operator()(I... idx) const {
    static_assert(sizeof...(I) == Rank);
    const std::array<std::int64_t, Rank> at{static_cast<std::int64_t>(idx)...};
    std::int64_t offset = 0;
    for (int k = 0; k < Rank; ++k)
      offset += at[k] * strides[k];
    return data[offset];
  }
};

// A C-order (row-major, contiguous) view of `data` with the given shape. The caller vouches
// that data holds the product of the shape's elements; the span overload below checks it.
template <class T, int Rank>
View<T, Rank> contiguous(const T* data, std::array<std::int64_t, Rank> shape) {
  View<T, Rank> v{data, shape, {}};
  std::int64_t stride = 1;
  for (int k = Rank - 1; k >= 0; --k) {
    v.strides[k] = stride;
    stride *= shape[k];
  }
  return v;
}

namespace detail {

inline std::string shape_text(const std::int64_t* shape, int rank) {
  std::string text = "[";
  for (int k = 0; k < rank; ++k)
    text += (k ? ", " : "") + std::to_string(shape[k]);
  return text + "]";
}

// Throws unless `size` elements are exactly a C-order array of `shape`.
inline void check_contiguous_size(std::size_t size, const std::int64_t* shape, int rank) {
  bool has_zero = false;
  for (int k = 0; k < rank; ++k) {
    if (shape[k] < 0)
      throw std::invalid_argument("[contiguous] shape " + shape_text(shape, rank) + " has " +
                                  std::to_string(shape[k]) + " at axis " + std::to_string(k) +
                                  ": sizes must be >= 0");
    has_zero = has_zero || shape[k] == 0;
  }
  // The shape's product, formed only while it fits in 64 bits; past that it is surely too many.
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t need = has_zero ? 0 : 1;
  bool overflow = false;
  for (int k = 0; k < rank && !has_zero && !overflow; ++k) {
    const auto extent = static_cast<std::uint64_t>(shape[k]);
    overflow = need > max / extent;
    if (!overflow) need *= extent;
  }
  if (overflow || need != size)
    throw std::invalid_argument(
        "[contiguous] shape " + shape_text(shape, rank) + " needs " +
        (overflow ? "more than " + std::to_string(max) : std::to_string(need)) +
        " elements, the data has " + std::to_string(size));
}

// Throws unless every element of a view of `shape` and `strides` (each >= 0) from data[0] lies
// among `size` elements.
inline void check_strided_reach(std::size_t size, const std::int64_t* shape,
                                const std::int64_t* strides, int rank) {
  const std::string where =
      "shape " + shape_text(shape, rank) + " with strides " + shape_text(strides, rank);
  bool empty = false;
  for (int k = 0; k < rank; ++k) {
    if (shape[k] < 0)
      throw std::invalid_argument("[strided] " + where + " has " + std::to_string(shape[k]) +
                                  " at axis " + std::to_string(k) + ": sizes must be >= 0");
    if (strides[k] < 0)
      throw std::invalid_argument("[strided] " + where + " has stride " +
                                  std::to_string(strides[k]) + " at axis " + std::to_string(k) +
                                  ": strides over a range must be >= 0 (a View made from a "
                                  "pointer may have negative ones)");
    empty = empty || shape[k] == 0;
  }
  if (empty) return;
  // The last element's offset, sum of (shape_k - 1) * stride_k, formed while it fits in 64 bits.
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t last = 0;
  bool overflow = false;
  for (int k = 0; k < rank && !overflow; ++k) {
    const auto extent = static_cast<std::uint64_t>(shape[k] - 1);
    const auto stride = static_cast<std::uint64_t>(strides[k]);
    overflow = extent != 0 && stride > (max - last) / extent;
    if (!overflow) last += extent * stride;
  }
  if (overflow || last >= size)
    throw std::invalid_argument("[strided] " + where + " needs " +
                                (overflow
                                     ? "more than " + std::to_string(max) + " elements"
                                     : std::to_string(last + 1) + " elements (the last at offset " +
                                           std::to_string(last) + ")") +
                                ", the data has " + std::to_string(size));
}

}  // namespace detail

// The same over a contiguous range: a std::span, or what converts to one (std::vector,
// std::array), e.g. contiguous<float, 2>(mean_vector, {n, d}).
// Throws std::invalid_argument unless the range holds exactly the shape's elements.
template <class T, int Rank>
View<T, Rank> contiguous(std::span<const T> data, std::array<std::int64_t, Rank> shape) {
  detail::check_contiguous_size(data.size(), shape.data(), Rank);
  return contiguous<T, Rank>(data.data(), shape);
}

// A strided view over a contiguous range: element (i0, i1, ...) at data[i0 * strides[0] + ...],
// strides in elements and >= 0 (0 repeats, e.g. one row of scales for every distribution).
// For arrays stored side by side, e.g. a network's output [N, 2 D] holding mean | logvar:
//   strided<float, 2>(out, {n, d}, {2 * d, 1}) and
//   strided<float, 2>(std::span<const float>(out).subspan(d), {n, d}, {2 * d, 1}).
// Throws std::invalid_argument unless every element it reaches lies in the range.
template <class T, int Rank>
View<T, Rank> strided(std::span<const T> data, std::array<std::int64_t, Rank> shape,
                      std::array<std::int64_t, Rank> strides) {
  detail::check_strided_reach(data.size(), shape.data(), strides.data(), Rank);
  return View<T, Rank>{data.data(), shape, strides};
}

// How the scale of a diagonal Gaussian is given, per dimension h:
// stddev sigma_h, variance sigma_h^2, logvar log(sigma_h^2), precision 1 / sigma_h^2.
enum class DiagParam { stddev, var, logvar, precision };

// How the covariance of a full Gaussian is given: a lower-triangular factor L with a positive
// diagonal (Sigma = L L^T, entries above the diagonal must be 0), Sigma itself, or Sigma^{-1};
// or L's lower triangle packed row by row (packed_scale_tril, see FullGaussians::packed).
// Symmetric matrices are read from their lower triangle after a symmetry check.
enum class FullParam { scale_tril, covariance, precision_matrix, packed_scale_tril };

// The names of the parameterizations as users write them (the array names of the file format,
// the Python package's keywords), in the order of the enums.
inline constexpr std::array<const char*, 4> diag_param_names = {"std", "var", "logvar",
                                                                "precision"};
inline constexpr std::array<const char*, 4> full_param_names = {
    "scale_tril", "covariance", "precision_matrix", "packed_scale_tril"};
inline constexpr const char* param_name(DiagParam p) {
  return diag_param_names[static_cast<std::size_t>(p)];
}
inline constexpr const char* param_name(FullParam p) {
  return full_param_names[static_cast<std::size_t>(p)];
}

// N Gaussians N(mean_i, diag(sigma_i^2)); mean and scale are [N, D].
template <class T>
struct DiagGaussians {
  View<T, 2> mean;
  View<T, 2> scale;
  DiagParam param = DiagParam::stddev;
};

// N Gaussians N(mean_i, Sigma_i); mean is [N, D], scale is [N, D, D] (packed_scale_tril: unused).
template <class T>
struct FullGaussians {
  View<T, 2> mean;
  View<T, 3> scale;
  FullParam param = FullParam::scale_tril;
  // packed_scale_tril: [N, D (D + 1) / 2], the lower triangle of each L row by row, the order of
  // torch.tril_indices(D, D): L_rc (c <= r) at r (r + 1) / 2 + c. Never unpacked to D x D where
  // the packed form suffices.
  View<T, 2> packed{};
  // packed_scale_tril only: the diagonal entries hold log L_rr (any finite value with
  // exp(2 x) a variance in range), so that an unconstrained parameter gives a valid factor.
  bool log_diagonal = false;
};

// N Gaussians N(mean_i, W_i W_i^T + diag(d_i)); mean [N, D], cov_factor W [N, D, R],
// cov_diag d [N, D]. Never densified: every operation costs O(D R^2), not O(D^3).
template <class T>
struct LowRankGaussians {
  View<T, 2> mean;
  View<T, 3> cov_factor;
  View<T, 2> cov_diag;
};

// A batch of Gaussians of any family. Converts implicitly from each family's view.
template <class T>
class Gaussians {
 public:
  using Variant = std::variant<DiagGaussians<T>, FullGaussians<T>, LowRankGaussians<T>>;

  Gaussians(DiagGaussians<T> g) : v_(std::move(g)) {}
  Gaussians(FullGaussians<T> g) : v_(std::move(g)) {}
  Gaussians(LowRankGaussians<T> g) : v_(std::move(g)) {}

  const Variant& variant() const { return v_; }
  const View<T, 2>& mean() const {
    return std::visit([](const auto& g) -> const View<T, 2>& { return g.mean; }, v_);
  }
  std::int64_t n() const { return mean().shape[0]; }
  std::int64_t d() const { return mean().shape[1]; }

 private:
  Variant v_;
};

// Options shared by every operation.
struct Options {
  // Worker threads; 0 means one per hardware thread. Results do not depend on it. Workers are
  // threads of a pool started on first use: after a call they wait awake (yielding the CPU) for
  // 0.1 ms, then sleep until the next.
  int threads = 0;
  // knn_kl with q = p only: leave out j == i (a distribution's own zero).
  bool exclude_self = false;
  // Bytes the call may allocate: the prepared (factored) copies of the inputs, work buffers and,
  // for pairwise_kl / knn_kl, the blocks of rows of results, which get what the rest leaves. A
  // budget too small for the rest and one row is an error (std::runtime_error) before anything
  // is allocated. 0: no limit, and blocks of limits::default_block_bytes. The caller's inputs
  // and outputs are not counted.
  std::int64_t memory_budget = 0;
  // pairwise_kl and knn_kl: the error each result may have, as |KL - exact KL| / (|exact KL| + 1)
  // before rounding to the output type. Every entry gets a deterministic error bound, and those
  // whose bound exceeds this are recomputed in the exact per-dimension form, so this is a
  // guarantee, not an estimate. 0: the default, limits::default_tolerance<T> for inputs of
  // type T. At most limits::max_tolerance (gausskl/limits.hpp). A larger tolerance lets float
  // diagonal inputs use a float kernel (1.7 times the speed) from about 1e-5 up
  // (kDiagFloatKernelMargin in src/cpu/tunables.hpp).
  double tolerance = 0;
  static constexpr double max_tolerance = limits::max_tolerance;
  // Called on the calling thread after each block of rows: (rows done, rows in all).
  std::function<void(std::int64_t done, std::int64_t total)> progress = nullptr;
  // > 0: a covariance or precision matrix that is not positive definite is factored again with
  // jitter added to its diagonal (to the diagonal only: C + jitter * I); matrices that factor as
  // given are left alone. 0: such a matrix is an error.
  double jitter = 0;
  // Called after the factorization with the number of p or q distributions ("p", "q") that
  // needed the jitter, when there were any.
  std::function<void(const char* side, std::int64_t count)> on_jitter = nullptr;
  // What gausskl::divergence computes (the other operations compute KL and accept only the
  // default, kl).
  Divergence divergence = Divergence::kl;
  // renyi only, and then required: the order, finite, in (0, 1) or (1, inf). For alpha > 1 the
  // mixed covariance alpha Sigma_2 + (1 - alpha) Sigma_1 of every pair must be positive definite
  // (where it is not, the divergence is infinite: an error naming the pair). Must stay 0 (unset)
  // for every other kind.
  double alpha = 0;
};

}  // namespace gausskl
