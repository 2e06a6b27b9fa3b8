// Input rules, checked once at the public entry. The vectorized fast paths that say only
// whether a batch passes are kernels of the CPU backend (cpu/backend.hpp), given the
// bounds to check; the rules, and the messages naming the first bad value, are here.
#include "core/validate.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "cpu/backend.hpp"
#include "gausskl/limits.hpp"
#include "util/rules.hpp"

namespace gausskl::detail {
namespace {

using rules::Rule;

// The variances allowed, as the rules write them: "[1e-300, 1e300]".
std::string variance_range() {
  return show_range(limits::min_variance, limits::max_variance);
}

std::string at2(std::int64_t i, std::int64_t h) {
  return rules::text(Rule::at2, {{"row", show(i)}, {"column", show(h)}});
}

std::string at3(std::int64_t n, std::int64_t r, std::int64_t c) {
  return rules::text(Rule::at3, {{"index", show(n)}, {"row", show(r)}, {"column", show(c)}});
}

// A rule about one value: {name} ... found {value} at {where}.
template <class T>
[[noreturn]] void fail_at(const char* op, Rule rule, const std::string& name, T value,
                          const std::string& where) {
  fail(op, rules::text(rule, {{"name", name},
                              {"value", show(value)},
                              {"where", where},
                              {"range", variance_range()}}));
}

template <int Rank>
std::string shape_text(const std::array<std::int64_t, Rank>& s) {
  std::string t = "[";
  for (int k = 0; k < Rank; ++k)
    t += (k ? ", " : "") + std::to_string(s[k]);
  return t + "]";
}

// a * b and a + b, or checked_mul's and checked_add's errors for name() + what: the name is only
// built on failure, so that checking valid input allocates nothing.
template <class Name>
std::int64_t product(const char* op, std::int64_t a, std::int64_t b, const Name& name,
                     const char* what) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) checked_mul(op, a, b, (name() + what).c_str());
  return r;
}
template <class Name>
std::int64_t sum(const char* op, std::int64_t a, std::int64_t b, const Name& name,
                 const char* what) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) checked_add(op, a, b, (name() + what).c_str());
  return r;
}

// Shape non-negative, data present, and every reachable offset representable in int64. `name()`
// words the array in messages.
template <class T, int Rank, class Name>
void check_view(const char* op, const Name& name, const View<T, Rank>& v) {
  std::int64_t elements = 1;
  std::int64_t reach = 0;
  for (int k = 0; k < Rank; ++k) {
    if (v.shape[k] < 0) fail(op, name() + " has a negative extent " + shape_text<Rank>(v.shape));
    elements = product(op, elements, v.shape[k], name, " element count");
    if (v.shape[k] > 0) {
      if (v.strides[k] == std::numeric_limits<std::int64_t>::min()) {
        fail(op, name() + " has an invalid stride");
      }
      reach = sum(op, reach, product(op, v.shape[k] - 1, std::abs(v.strides[k]), name, " offset"),
                  name, " offset");
    }
  }
  if (elements > 0 && v.data == nullptr) fail(op, name() + " has no data");
}

template <class T, int Rank, class Name>
void check_shape(const char* op, const Name& name, const View<T, Rank>& v,
                 const std::type_identity_t<std::array<std::int64_t, Rank>>& expected) {
  if (v.shape != expected) {
    fail(op, name() + " has shape " + shape_text<Rank>(v.shape) + ", expected " +
                 shape_text<Rank>(expected));
  }
  check_view(op, name, v);
}

// The name of an array for check_view and check_shape: side + suffix, e.g. "p.mean".
auto named(const std::string& side, const char* suffix) {
  return [&side, suffix] { return side + suffix; };
}

// Indices per chunk of first_invalid: a few microseconds of checks for the largest rows here
// (a 32 x 32 factor takes ~0.1 us), so the shared counter costs nothing.
constexpr std::int64_t kValidChunk = 64;

// The lowest i < n with !valid(i), or n: checked on `threads` threads that take chunks of
// increasing i from a shared counter (on a busy machine a descheduled thread leaves its chunks
// to the others), each stopping at its chunk's first failure. Chunks are handed out in order and
// none starting at or past the lowest failure found so far is taken, so every chunk below the
// result has been checked.
template <class Valid>
std::int64_t first_invalid(std::int64_t n, int threads, const Valid& valid) {
  const int workers =
      static_cast<int>(std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(n, 1)));
  if (workers == 1) {  // no shared counter, no std::function (which may allocate)
    for (std::int64_t i = 0; i < n; ++i) {
      if (!valid(i)) return i;
    }
    return n;
  }
  std::atomic<std::int64_t> next{0}, first{n};
  cpu::parallel_for(workers, workers, [&](int, std::int64_t, std::int64_t) {
    for (std::int64_t lo; (lo = next.fetch_add(kValidChunk)) < first.load();) {
      const std::int64_t hi = std::min(n, lo + kValidChunk);
      for (std::int64_t i = lo; i < hi; ++i) {
        if (!valid(i)) {
          std::int64_t seen = first.load();
          while (i < seen && !first.compare_exchange_weak(seen, i)) {
          }
          break;
        }
      }
    }
  });
  return first.load();
}

// How many of the n values at row[0], row[stride], ... are inf or NaN: an integer reduction over
// the exponent bits (all ones: inf or NaN, as isfinite says), which the compiler vectorizes.
template <class T>
std::int64_t count_nonfinite(const T* row, std::int64_t n, std::int64_t stride) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  constexpr Bits kExponent =
      static_cast<Bits>(sizeof(T) == 4 ? 0x7f800000ull : 0x7ff0000000000000ull);
  std::int64_t bad = 0;
  if (stride == 1) {
    for (std::int64_t h = 0; h < n; ++h)
      bad += (std::bit_cast<Bits>(row[h]) & kExponent) == kExponent;
  } else {
    for (std::int64_t h = 0; h < n; ++h)
      bad += (std::bit_cast<Bits>(row[h * stride]) & kExponent) == kExponent;
  }
  return bad;
}

// Every value finite: rows checked on `threads` threads without messages, then element by
// element from the first bad row, to name the value.
template <class T>
void check_finite2(const char* op, const std::string& name, const View<T, 2>& v, int threads) {
  const std::int64_t first = first_invalid(v.shape[0], threads, [&](std::int64_t i) {
    return count_nonfinite(&v(i, 0), v.shape[1], v.strides[1]) == 0;
  });
  for (std::int64_t i = first; i < v.shape[0]; ++i) {
    for (std::int64_t h = 0; h < v.shape[1]; ++h) {
      const T x = v(i, h);
      if (!std::isfinite(x)) fail_at(op, Rule::finite, name, x, at2(i, h));
    }
  }
}

// The parameter values whose implied variance lies in [limits::min_variance, limits::max_variance],
// in the parameter's own units, so that the check per element is two comparisons (NaN fails both).
struct Accepted {
  double lo, hi;
};

Accepted accepted(DiagParam p) {
  switch (p) {
    case DiagParam::stddev:
      return {std::sqrt(limits::min_variance), std::sqrt(limits::max_variance)};
    case DiagParam::var:
      return {limits::min_variance, limits::max_variance};
    case DiagParam::logvar:
      return {std::log(limits::min_variance), std::log(limits::max_variance)};
    case DiagParam::precision:
      return {1 / limits::max_variance, 1 / limits::min_variance};
  }
  return {limits::min_variance, limits::max_variance};
}

// `where` builds the location text, only on failure (this runs once per input element).
template <class T, class Where>
void check_variance(const char* op, const std::string& name, DiagParam p, const Accepted& ok, T x,
                    Where where) {
  const double value = x;
  if (value >= ok.lo && value <= ok.hi) return;
  if (p == DiagParam::logvar && !std::isfinite(x)) {
    fail_at(op, Rule::finite, name, x, where());
  }
  if (p != DiagParam::logvar && !(std::isfinite(x) && x > 0)) {
    fail_at(op, Rule::positive_finite, name, x, where());
  }
  fail_at(op, Rule::variance_range, name, x, where());
}

// [lo, hi] in T: for every T x, lo_T <= x <= hi_T exactly when lo <= double(x) <= hi (the
// nearest floats inside the double bounds), so the fast check below can compare in T.
template <class T>
std::pair<T, T> bounds_in(double lo, double hi) {
  constexpr T kInf = std::numeric_limits<T>::infinity();
  T lo_t = static_cast<T>(lo), hi_t = static_cast<T>(hi);
  if (static_cast<double>(lo_t) < lo) lo_t = std::nextafter(lo_t, kInf);
  if (static_cast<double>(hi_t) > hi) hi_t = std::nextafter(hi_t, -kInf);
  return {lo_t, hi_t};
}

// True if the n values at row[0], row[stride], ... all lie in [lo, hi] (NaN does not): the
// result is kept as a value selected per element, a form GCC vectorizes (a count or an OR of
// the comparisons, it does not).
template <class T>
bool all_within(const T* row, std::int64_t n, std::int64_t stride, T lo, T hi) {
  T outside = 0;
  if (stride == 1) {
    for (std::int64_t h = 0; h < n; ++h)
      outside = (row[h] >= lo && row[h] <= hi) ? outside : T(1);
  } else {
    for (std::int64_t h = 0; h < n; ++h)
      outside = (row[h * stride] >= lo && row[h * stride] <= hi) ? outside : T(1);
  }
  return outside == 0;
}

template <class T>
void validate_family(const char* op, const std::string& side, const DiagGaussians<T>& g,
                     int threads) {
  const Accepted ok = accepted(g.param);
  check_shape(op, named(side, ".scale"), g.scale, g.mean.shape);
  const std::int64_t d = g.scale.shape[1];
  const auto [lo, hi] = bounds_in<T>(ok.lo, ok.hi);
  const std::int64_t first = first_invalid(g.scale.shape[0], threads, [&](std::int64_t i) {
    return all_within(&g.scale(i, 0), d, g.scale.strides[1], lo, hi);
  });
  if (first == g.scale.shape[0]) return;
  const std::string name = side + ".scale (" + param_name(g.param) + ")";
  for (std::int64_t i = first; i < g.scale.shape[0]; ++i) {
    for (std::int64_t h = 0; h < d; ++h) {
      check_variance(op, name, g.param, ok, g.scale(i, h), [=] { return at2(i, h); });
    }
  }
}

// check_view's rules without its messages.
template <class T, int Rank>
bool view_ok(const View<T, Rank>& v) {
  std::int64_t elements = 1, reach = 0, extent = 0;
  for (int k = 0; k < Rank; ++k) {
    if (v.shape[k] < 0 || __builtin_mul_overflow(elements, v.shape[k], &elements)) return false;
    if (v.shape[k] > 0) {
      if (v.strides[k] == std::numeric_limits<std::int64_t>::min() ||
          __builtin_mul_overflow(v.shape[k] - 1, std::abs(v.strides[k]), &extent) ||
          __builtin_add_overflow(reach, extent, &reach)) {
        return false;
      }
    }
  }
  return elements == 0 || v.data != nullptr;
}

// True if rows [lo, hi) of v lie in [min, max] (|x| <= max when abs): unit column strides by the
// vectorized checks (rows stored back to back as one run), others element by element.
template <class T>
bool rows_within(const View<T, 2>& v, std::int64_t lo, std::int64_t hi, bool abs, T min, T max) {
  const std::int64_t d = v.shape[1];
  if (hi <= lo) return true;
  if (v.strides[1] == 1) {
    const bool run = v.strides[0] == d;
    const std::int64_t rows = run ? 1 : hi - lo, n = run ? (hi - lo) * d : d;
    return abs ? cpu::all_abs_within_rows(&v(lo, 0), rows, v.strides[0], n, max)
               : cpu::all_within_rows(&v(lo, 0), rows, v.strides[0], n, min, max);
  }
  for (std::int64_t i = lo; i < hi; ++i) {
    if (!all_within(&v(i, 0), d, v.strides[1], abs ? -max : min, max)) return false;
  }
  return true;
}

// Whether a batch passes every rule of validate, without building any message, so that a valid
// diagonal batch (the VAE's thousands of small calls) costs no string. One that fails is checked
// again by the rules with messages, which name its first bad value. Other families: always
// checked with messages.
template <class F>
bool quietly_valid(const F&, int) {
  return false;
}
template <class T>
bool quietly_valid(const DiagGaussians<T>& g, int threads) {
  const View<T, 2>&mean = g.mean, &scale = g.scale;
  if (!view_ok(mean) || mean.shape[1] < 1 || scale.shape != mean.shape || !view_ok(scale)) {
    return false;
  }
  const Accepted ok = accepted(g.param);
  const auto [lo, hi] = bounds_in<T>(ok.lo, ok.hi);
  // Logvar's range straddles 0: checked as |x| <= the smaller bound, which can only refuse a
  // valid value within an ulp of the other bound (the checks with messages then accept it).
  const bool abs = lo <= 0;
  const T min = abs ? T(0) : lo, max = abs ? std::min(-lo, hi) : hi;
  constexpr T kMax = std::numeric_limits<T>::max();
  const auto rows_ok = [&](std::int64_t a, std::int64_t b) {
    return rows_within(mean, a, b, true, T(0), kMax) && rows_within(scale, a, b, abs, min, max);
  };
  const std::int64_t n = mean.shape[0];
  const int workers =
      static_cast<int>(std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(n, 1)));
  if (workers == 1) return rows_ok(0, n);
  std::atomic<bool> good{true};
  cpu::parallel_for(n, workers, [&](int, std::int64_t a, std::int64_t b) {
    if (!rows_ok(a, b)) good.store(false);
  });
  return good.load();
}

// Symmetric within round-off: |a - b| <= sqrt(eps) * scale. A float32 C = A A^T from a GEMM
// differs from its transpose by about D * eps, far below sqrt(eps); an asymmetry beyond that
// means the matrix is not what the parameterization says, and using one triangle would
// silently give a wrong number.
template <class T>
bool symmetric_at(const View<T, 3>& s, std::int64_t n, std::int64_t r, std::int64_t c) {
  static const double tol = std::sqrt(static_cast<double>(std::numeric_limits<T>::epsilon()));
  const double a = s(n, r, c), b = s(n, c, r);
  const double scale =
      std::max({std::abs(a), std::abs(b), std::sqrt(std::abs(double(s(n, r, r)) * s(n, c, c)))});
  return std::abs(a - b) <= tol * scale;
}

// A diagonal entry of a scale_tril: positive, with a square in the variance range.
template <class T>
bool tril_diagonal_ok(T diag) {
  const double v = double(diag) * double(diag);
  return diag > 0 && v >= limits::min_variance && v <= limits::max_variance;
}

// True if every value of distribution i is finite and, for scale_tril, the part above the
// diagonal is 0 (within [0, 0]), by the vectorized row checks above: about 5x faster than the
// element-wise checks.
template <class T>
bool full_looks_valid(const View<T, 3>& s, std::int64_t i, bool lower) {
  const std::int64_t d = s.shape[1], stride = s.strides[2];
  for (std::int64_t r = 0; r < d; ++r) {
    const T* row = &s(i, r, 0);
    if (count_nonfinite(row, d, stride) != 0) return false;
    if (lower && r + 1 < d && !all_within(row + (r + 1) * stride, d - r - 1, stride, T(0), T(0))) {
      return false;
    }
  }
  return true;
}

// cpu::tril_rows' mask: row r's is window + d - 1 - r, 1 exactly right of the diagonal.
template <class T>
std::vector<T> upper_window(std::int64_t d) {
  std::vector<T> window(static_cast<std::size_t>(2 * d - 1), T(0));
  std::fill(window.begin() + d, window.end(), T(1));
  return window;
}

// Whether distribution i passes every rule of check_full, without saying which one fails.
// window: upper_window(d) when lower and the rows are contiguous, else empty.
template <class T>
bool full_valid(const View<T, 3>& s, std::int64_t i, bool lower, const std::vector<T>& window) {
  const std::int64_t d = s.shape[1];
  if (!window.empty()) {
    return cpu::tril_rows(&s(i, 0, 0), s.strides[1], d, window.data(), limits::min_variance,
                          limits::max_variance);
  }
  if (!full_looks_valid(s, i, lower)) return false;
  for (std::int64_t r = 0; r < d; ++r) {
    if (lower && !tril_diagonal_ok(s(i, r, r))) return false;
    for (std::int64_t c = 0; !lower && c < r; ++c) {
      if (!symmetric_at(s, i, r, c)) return false;
    }
  }
  return true;
}

// The rules for distribution i, element by element: throws naming the first bad value.
template <class T>
void check_full(const char* op, const std::string& name, const View<T, 3>& s, std::int64_t i,
                bool lower) {
  const std::int64_t d = s.shape[1];
  for (std::int64_t r = 0; r < d; ++r) {
    for (std::int64_t c = 0; c < d; ++c) {
      const T x = s(i, r, c);
      if (!std::isfinite(x)) {
        fail_at(op, Rule::finite, name, x, at3(i, r, c));
      }
      if (lower && c > r && x != 0) {
        fail_at(op, Rule::lower_triangular, name, x, at3(i, r, c));
      }
    }
  }
  for (std::int64_t r = 0; r < d; ++r) {
    if (lower && !tril_diagonal_ok(s(i, r, r))) {
      fail_at(op, Rule::tril_diagonal, name, s(i, r, r), at3(i, r, r));
    }
    for (std::int64_t c = 0; !lower && c < r; ++c) {
      if (!symmetric_at(s, i, r, c)) {
        fail(op, rules::text(Rule::symmetric, {{"name", name},
                                               {"value", show(s(i, r, c))},
                                               {"other", show(s(i, c, r))},
                                               {"where", at3(i, r, c)}}));
      }
    }
  }
}

// packed_scale_tril: [N, K], K = D (D + 1) / 2, L_rc (c <= r) at column r (r + 1) / 2 + c, so
// the diagonal L_rr at r (r + 3) / 2. Values must be finite; the diagonal obeys the scale_tril
// rule, or with log_diagonal holds x = log L_rr whose 2 x lies in logvar's accepted range (exp(2 x)
// in [limits::min_variance, limits::max_variance]). As for the other families: every distribution
// checked without messages first, then the first that fails element by element, finiteness before
// the diagonal.
template <class T>
void validate_packed(const char* op, const std::string& side, const FullGaussians<T>& g,
                     int threads) {
  const auto name = [&side] { return side + ".scale (packed_scale_tril)"; };
  const std::int64_t n = g.mean.shape[0], d = g.mean.shape[1];
  // K = D (D + 1) / 2, halving the even factor first: it overflows only if K does.
  const std::int64_t k = d % 2 == 0 ? product(op, d / 2, d + 1, name, " row length D (D + 1) / 2")
                                    : product(op, d, sum(op, d, 1, name, " D + 1") / 2, name,
                                              " row length D (D + 1) / 2");
  const View<T, 2>& v = g.packed;
  if (v.shape != std::array<std::int64_t, 2>{n, k}) {
    fail(op, name() + " has shape " + shape_text<2>(v.shape) + ", expected " +
                 shape_text<2>({n, k}) + " ([N, D (D + 1) / 2] with D = " + show(d) + " from " +
                 side + ".mean)");
  }
  check_view(op, name, v);
  checked_mul(op, n, k, "N * D (D + 1) / 2");
  const Accepted log_ok = accepted(DiagParam::logvar);
  const auto [lo, hi] = bounds_in<T>(log_ok.lo / 2, log_ok.hi / 2);  // exact halves
  const std::int64_t stride = v.strides[1];
  const std::int64_t first = first_invalid(n, threads, [&](std::int64_t i) {
    const T* row = &v(i, 0);
    if (count_nonfinite(row, k, stride) != 0) return false;
    bool bad = false;
    for (std::int64_t r = 0; r < d; ++r) {
      const T x = row[r * (r + 3) / 2 * stride];
      bad |= g.log_diagonal ? !(x >= lo && x <= hi) : !tril_diagonal_ok(x);
    }
    return !bad;
  });
  if (first == n) return;
  // Where an entry is, in the packed array and in the factor.
  const auto where = [&](std::int64_t c, std::int64_t r, std::int64_t s) {
    return rules::text(Rule::at_packed,
                       {{"row", show(first)}, {"column", show(c)}, {"r", show(r)}, {"c", show(s)}});
  };
  for (std::int64_t r = 0, c = 0; r < d; ++r) {
    for (std::int64_t s = 0; s <= r; ++s, ++c) {
      const T x = v(first, c);
      if (!std::isfinite(x)) fail_at(op, Rule::finite, name(), x, where(c, r, s));
    }
  }
  for (std::int64_t r = 0; r < d; ++r) {
    const std::int64_t c = r * (r + 3) / 2;
    const T x = v(first, c);
    if (g.log_diagonal && !(x >= lo && x <= hi)) {
      fail_at(op, Rule::log_diagonal, name(), x, where(c, r, r));
    }
    if (!g.log_diagonal && !tril_diagonal_ok(x)) {
      throw InputError(ErrorKind::invalid_input, op,
                       rules::text(Rule::tril_diagonal, {{"name", name()},
                                                         {"value", show(x)},
                                                         {"where", where(c, r, r)},
                                                         {"range", variance_range()}}),
                       side, first, hints::log_diagonal, "log_diagonal");
    }
  }
}

// Every distribution is checked without messages, on `threads` threads; the element-wise checks
// then run on the first that fails and name its first bad value.
template <class T>
void validate_family(const char* op, const std::string& side, const FullGaussians<T>& g,
                     int threads) {
  if (g.param == FullParam::packed_scale_tril) {
    validate_packed(op, side, g, threads);
    return;
  }
  if (g.log_diagonal) {
    fail(op, side + ".log_diagonal is set, but it applies to packed_scale_tril only (" + side +
                 ".scale is " + param_name(g.param) + ")");
  }
  const std::int64_t n = g.mean.shape[0], d = g.mean.shape[1];
  check_shape(op, named(side, ".scale"), g.scale, {n, d, d});
  checked_mul(op, checked_mul(op, n, d, "N * D * D"), d, "N * D * D");
  const bool lower = g.param == FullParam::scale_tril;
  const std::vector<T> window =
      lower && d > 0 && g.scale.strides[2] == 1 ? upper_window<T>(d) : std::vector<T>();
  const std::int64_t first = first_invalid(
      n, threads, [&](std::int64_t i) { return full_valid(g.scale, i, lower, window); });
  if (first == n) return;
  const std::string name = side + ".scale (" + param_name(g.param) + ")";
  for (std::int64_t i = first; i < n; ++i)
    check_full(op, name, g.scale, i, lower);
}

template <class T>
void validate_family(const char* op, const std::string& side, const LowRankGaussians<T>& g,
                     int threads) {
  const std::int64_t n = g.mean.shape[0], d = g.mean.shape[1];
  const std::int64_t r = g.cov_factor.shape[2];
  check_shape(op, named(side, ".cov_factor"), g.cov_factor, {n, d, r});
  check_shape(op, named(side, ".cov_diag"), g.cov_diag, g.mean.shape);
  checked_mul(op, checked_mul(op, n, d, "N * D * R"), r, "N * D * R");
  const std::string diag_name = side + ".cov_diag";
  const Accepted ok = accepted(DiagParam::var);
  // Distributions checked without messages first, as for the other families.
  const auto [lo, hi] = bounds_in<T>(ok.lo, ok.hi);
  const std::int64_t first = first_invalid(n, threads, [&](std::int64_t i) {
    if (!all_within(&g.cov_diag(i, 0), d, g.cov_diag.strides[1], lo, hi)) return false;
    for (std::int64_t h = 0; h < d && r > 0; ++h) {
      if (count_nonfinite(&g.cov_factor(i, h, 0), r, g.cov_factor.strides[2]) != 0) return false;
    }
    return true;
  });
  for (std::int64_t i = first; i < n; ++i) {
    for (std::int64_t h = 0; h < d; ++h) {
      for (std::int64_t k = 0; k < r; ++k) {
        const T x = g.cov_factor(i, h, k);
        if (!std::isfinite(x)) {
          fail_at(op, Rule::finite, side + ".cov_factor", x, at3(i, h, k));
        }
      }
      check_variance(op, diag_name, DiagParam::var, ok, g.cov_diag(i, h),
                     [=] { return at2(i, h); });
    }
  }
}

}  // namespace

template <class T>
void validate(const char* op, const char* side_c, const Gaussians<T>& g, int threads) {
  std::visit(
      [&](const auto& family) {
        if (quietly_valid(family, threads)) return;
        const std::string side = side_c;
        const View<T, 2>& mean = g.mean();
        check_view(op, named(side, ".mean"), mean);
        if (mean.shape[1] < 1) fail(op, rules::text(Rule::empty_d, {{"side", side}}));
        check_finite2(op, side + ".mean", mean, threads);
        validate_family(op, side, family, threads);
      },
      g.variant());
}

template <class T>
void validate_same_d(const char* op, const Gaussians<T>& p, const Gaussians<T>& q) {
  if (p.d() != q.d()) {
    fail(op, rules::text(Rule::same_d, {{"p", show(p.d())}, {"q", show(q.d())}}));
  }
}

template <class T>
std::int64_t broadcast_rows(const char* op, const Gaussians<T>& p, const Gaussians<T>& q) {
  if (p.n() == q.n() || q.n() == 1) return p.n();
  if (p.n() == 1) return q.n();
  fail(op, rules::text(Rule::rows, {{"p", show(p.n())}, {"q", show(q.n())}}));
}

void check_size(const char* op, const char* name, std::size_t got, std::int64_t expected) {
  if (static_cast<std::int64_t>(got) != expected) {
    fail(op, std::string(name) + " has " + show(got) + " elements, expected " + show(expected));
  }
}

#define GAUSSKL_INSTANTIATE(T)                                                             \
  template void validate<T>(const char*, const char*, const Gaussians<T>&, int);           \
  template void validate_same_d<T>(const char*, const Gaussians<T>&, const Gaussians<T>&); \
  template std::int64_t broadcast_rows<T>(const char*, const Gaussians<T>&, const Gaussians<T>&);
GAUSSKL_INSTANTIATE(float)
GAUSSKL_INSTANTIATE(double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::detail
