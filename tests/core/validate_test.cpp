// Every input rule: std::invalid_argument "[op] what, where", raised before any output is
// written. Messages are checked by the parts a user acts on (tag, array, value, place).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/validate.hpp"
#include "gausskl/ops.hpp"
#include "hwy/tests/hwy_gtest.h"
#include "support/allocations.hpp"
#include "support/batches.hpp"
#include "support/expect.hpp"
#include "support/generators.hpp"

namespace gausskl::test {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Well-posed inputs to break one entry at a time: n rows of N(0, I) in dimension d.
DiagBatch<double> diag(std::int64_t n, std::int64_t d, DiagParam param = DiagParam::stddev) {
  const double one_scale = param == DiagParam::logvar ? 0.0 : 1.0;
  return {n, d, param, std::vector<double>(n * d, 0.0), std::vector<double>(n * d, one_scale)};
}

FullBatch<double> full(std::int64_t n, std::int64_t d, FullParam param) {
  FullBatch<double> b{n, d, param, std::vector<double>(n * d, 0.0),
                      std::vector<double>(n * d * d, 0.0)};
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t h = 0; h < d; ++h)
      b.scale[(i * d + h) * d + h] = 1;
  return b;
}

// n packed factors of N(0, I)-like Gaussians: off-diagonals -0.25, diagonal 1 (logs: 0).
template <class T = double>
FullBatch<T> packed(std::int64_t n, std::int64_t d, bool log_diagonal = false) {
  const std::int64_t k = d * (d + 1) / 2;
  FullBatch<T> b{n,
                 d,
                 FullParam::packed_scale_tril,
                 std::vector<T>(n * d, T(0)),
                 std::vector<T>(n * k, T(-0.25)),
                 log_diagonal};
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t r = 0; r < d; ++r)
      b.scale[i * k + r * (r + 3) / 2] = log_diagonal ? T(0) : T(1);
  return b;
}

LowRankBatch<double> low_rank(std::int64_t n, std::int64_t d, std::int64_t r) {
  return {n,
          d,
          r,
          std::vector<double>(n * d, 0.0),
          std::vector<double>(n * d * r, 0.5),
          std::vector<double>(n * d, 1.0)};
}

// kl(p, q) into an output of the right size.
void run_kl(const Gaussians<double>& p, const Gaussians<double>& q) {
  std::vector<double> out(p.n() == 1 ? q.n() : p.n());
  kl(p, q, std::span<double>(out));
}

TEST(Validate, DiagonalScales) {
  const auto q = diag(20, 5);
  auto p = diag(20, 5);
  p.scale[17 * 5 + 3] = -0.5;
  expect_invalid([&] { run_kl(p.view(), q.view()); },
                 {"[kl] ", "p.scale (std)", "positive", "-0.5", "row 17, column 3"});

  p = diag(20, 5, DiagParam::var);
  p.scale[2 * 5 + 4] = 0;
  expect_invalid([&] { run_kl(p.view(), q.view()); },
                 {"[kl] ", "p.scale (var)", "positive", "found 0", "row 2, column 4"});

  auto qp = diag(20, 5, DiagParam::precision);
  qp.scale[19 * 5 + 0] = kInf;
  expect_invalid([&] { run_kl(q.view(), qp.view()); },
                 {"[kl] ", "q.scale (precision)", "inf", "row 19, column 0"});

  p = diag(20, 5, DiagParam::logvar);
  p.scale[1] = kNan;
  expect_invalid([&] { run_kl(p.view(), q.view()); },
                 {"[kl] ", "p.scale (logvar)", "finite", "nan", "row 0, column 1"});
  p.scale[1] = 800;  // exp(800) overflows double
  expect_invalid([&] { run_kl(p.view(), q.view()); },
                 {"[kl] ", "p.scale (logvar)", "variance", "800", "row 0, column 1"});

  p = diag(20, 5);
  p.scale[6] = 1e-200;  // std^2 underflows double
  expect_invalid([&] { run_kl(p.view(), q.view()); },
                 {"[kl] ", "p.scale (std)", "variance", "1e-200", "row 1, column 1"});
}

// The fast row check compares in the input's own type; at the edges of the accepted range it
// must agree with the rule in double: accepted exactly when the implied variance is in
// [1e-300, 1e300]. Values around each edge, for float and double inputs, each parameterization.
template <class T>
void check_range_edges() {
  struct Edge {
    DiagParam param;
    double lo, hi;
  };
  const Edge edges[] = {{DiagParam::stddev, std::sqrt(1e-300), std::sqrt(1e300)},
                        {DiagParam::var, 1e-300, 1e300},
                        {DiagParam::precision, 1 / 1e300, 1 / 1e-300},
                        {DiagParam::logvar, std::log(1e-300), std::log(1e300)}};
  for (const Edge& e : edges) {
    std::vector<T> candidates = {T(0), -T(0), std::numeric_limits<T>::denorm_min(),
                                 std::numeric_limits<T>::max(), -std::numeric_limits<T>::max()};
    for (const double edge : {e.lo, e.hi}) {
      T x = static_cast<T>(edge);
      candidates.push_back(x);
      candidates.push_back(std::nextafter(x, std::numeric_limits<T>::infinity()));
      candidates.push_back(std::nextafter(x, -std::numeric_limits<T>::infinity()));
    }
    for (const T x : candidates) {
      const std::vector<T> mean(3, T(0)), scale = {T(1), x, T(1)};
      const DiagGaussians<T> p{contiguous<T, 2>(mean.data(), {1, 3}),
                               contiguous<T, 2>(scale.data(), {1, 3}), e.param};
      const double v = static_cast<double>(x);
      const bool ok = v >= e.lo && v <= e.hi;
      std::vector<T> out(1);
      bool accepted = true;
      try {
        kl_standard_normal(p, std::span<T>(out));
      } catch (const std::invalid_argument&) {
        accepted = false;
      }
      EXPECT_EQ(accepted, ok) << param_name(e.param) << " " << v;
    }
  }
}

TEST(Validate, RangeEdgesFloat) {
  check_range_edges<float>();
}
TEST(Validate, RangeEdgesDouble) {
  check_range_edges<double>();
}

TEST(Validate, FloatValuesAreShownAsFloats) {
  const std::vector<float> mean(6, 0.0f), scale = {1, 1, 1, 1, -0.1f, 1};
  const DiagGaussians<float> p{contiguous<float, 2>(mean.data(), {2, 3}),
                               contiguous<float, 2>(scale.data(), {2, 3}), DiagParam::stddev};
  std::vector<float> out(2);
  expect_invalid([&] { kl_standard_normal(p, std::span<float>(out)); },
                 {"[kl_standard_normal] ", "p.scale (std)", "found -0.1 at row 1, column 1"});
}

TEST(Validate, Means) {
  const auto p = diag(2, 3);
  auto q = diag(2, 3);
  q.mean[1] = kNan;
  expect_invalid([&] { run_kl(p.view(), q.view()); },
                 {"[kl] ", "q.mean must be finite", "nan", "row 0, column 1"});
  q.mean[1] = 0;
  q.mean[5] = -kInf;
  expect_invalid([&] { run_kl(p.view(), q.view()); }, {"q.mean", "-inf", "row 1, column 2"});
}

TEST(Validate, LowRank) {
  const auto q = diag(2, 3);
  auto p = low_rank(2, 3, 2);
  p.diag[1 * 3 + 2] = 0;
  expect_invalid([&] { run_kl(p.view(), q.view()); },
                 {"[kl] ", "p.cov_diag", "positive", "found 0", "row 1, column 2"});
  p = low_rank(2, 3, 2);
  p.factor[(0 * 3 + 1) * 2 + 0] = kInf;
  expect_invalid([&] { run_kl(p.view(), q.view()); }, {"[kl] ", "p.cov_factor must be finite",
                                                       "inf", "distribution 0, row 1, column 0"});
}

TEST(Validate, ScaleTril) {
  const auto p = diag(4, 3);
  auto q = full(4, 3, FullParam::scale_tril);
  q.scale[(2 * 3 + 1) * 3 + 1] = -1;
  expect_invalid([&] { run_kl(p.view(), q.view()); },
                 {"[kl] ", "q.scale (scale_tril)", "positive diagonal", "-1",
                  "distribution 2, row 1, column 1"});
  q = full(4, 3, FullParam::scale_tril);
  q.scale[(2 * 3 + 0) * 3 + 1] = 0.3;
  expect_invalid([&] { run_kl(p.view(), q.view()); },
                 {"[kl] ", "q.scale (scale_tril)", "lower triangular", "0.3",
                  "distribution 2, row 0, column 1"});
  q = full(4, 3, FullParam::scale_tril);
  q.scale[(3 * 3 + 2) * 3 + 0] = kNan;
  expect_invalid([&] { run_kl(p.view(), q.view()); },
                 {"q.scale (scale_tril)", "finite", "nan", "distribution 3, row 2, column 0"});
}

// The SIMD check of scale_tril rows with unit column stride (x * 0 for finite, x * 1 for zero
// above the diagonal, the diagonal alongside), on every compiled Highway target, in float and
// double, at D = 32 (whole vectors) and 7 (a tail on the wide targets), rows contiguous or padded:
// each rule broken at the first and last entries that carry it, in one of 300 distributions
// (several chunks of first_invalid) on 2 threads, with a second bad value in a later distribution;
// -0 above the diagonal is 0, a subnormal is not.
template <class T>
void check_tril_rows(std::int64_t d, std::int64_t row_stride) {
  const std::int64_t n = 300, matrix = d * row_stride;
  std::vector<T> mean(static_cast<std::size_t>(n * d), T(0)),
      scale(static_cast<std::size_t>(n * matrix), T(7));  // padding: not read
  const auto at = [&](std::int64_t i, std::int64_t r, std::int64_t c) -> std::size_t {
    return static_cast<std::size_t>(i * matrix + r * row_stride + c);
  };
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t r = 0; r < d; ++r)
      for (std::int64_t c = 0; c < d; ++c)
        scale[at(i, r, c)] = c == r ? T(1) : c < r ? T(-0.25) : T(0);
  const DiagBatch<T> p{n, d, DiagParam::stddev, std::vector<T>(mean.size(), T(0)),
                       std::vector<T>(mean.size(), T(1))};
  const auto run = [&](const std::vector<T>& s) {
    std::vector<T> out(static_cast<std::size_t>(n));
    Options options;
    options.threads = 2;
    const View<T, 3> view{s.data(), {n, d, d}, {matrix, row_stride, 1}};
    kl(Gaussians<T>(p.view()),
       Gaussians<T>(
           FullGaussians<T>{contiguous<T, 2>(mean.data(), {n, d}), view, FullParam::scale_tril}),
       std::span<T>(out), options);
  };
  run(scale);  // valid
  std::vector<T> signed_zero = scale;
  signed_zero[at(5, 0, d - 1)] = T(-0.0);
  run(signed_zero);  // -0 above the diagonal is 0
  struct Case {
    std::int64_t r, c;
    T value;
    const char* rule;
  };
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const Case cases[] = {
      {0, 1, T(0.5), "lower triangular"},
      {d - 2, d - 1, std::numeric_limits<T>::denorm_min(), "lower triangular"},
      {0, d - 1, inf, "finite"},  // finiteness is checked first
      {d - 1, 0, nan, "finite"},
      {d - 1, d - 2, -inf, "finite"},
      {0, 0, T(0), "positive diagonal"},
      {d - 1, d - 1, T(-2), "positive diagonal"},
      {d / 2, d / 2, nan, "finite"},
  };
  for (const std::int64_t i : {std::int64_t{0}, std::int64_t{70}, std::int64_t{130}, n - 1}) {
    for (const Case& k : cases) {
      std::vector<T> bad = scale;
      bad[at(i, k.r, k.c)] = k.value;
      if (i + 1 < n) bad[at(n - 1, 1, 0)] = nan;
      expect_invalid([&] { run(bad); },
                     {"[kl] ", "q.scale (scale_tril)", k.rule,
                      "distribution " + std::to_string(i) + ", row " + std::to_string(k.r) +
                          ", column " + std::to_string(k.c)});
    }
  }
}

class ValidateTargets : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(ValidateTargets);

TEST_P(ValidateTargets, ScaleTrilRows) {
  for (const std::int64_t d : {32, 7}) {
    for (const std::int64_t row_stride : {d, d + 3}) {
      check_tril_rows<float>(d, row_stride);
      check_tril_rows<double>(d, row_stride);
    }
  }
}

// The checks of diagonal batches without messages (cpu/backend.hpp), on every compiled Highway
// target, in float and double: rows stored as one run, rows padded (row stride D + 3) and
// columns strided (column stride 2), at D = 32 (whole vectors), 7 and 1 (tails), on 1 and 2
// threads. Each rule is broken at the first and last entries of a row in one of 300 rows, with a
// second bad value of the same array in a later row; the message names the first. The values at the
// ends of each range are accepted (logvar's fast check is |x| <= the smaller bound: the other one
// must still pass).
template <class T>
void check_diag_rows(std::int64_t d, std::int64_t row_stride, std::int64_t col_stride) {
  const std::int64_t n = 300, size = (n - 1) * row_stride + (d - 1) * col_stride + 1;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T big = std::numeric_limits<T>::max();
  struct Param {
    DiagParam param;
    double lo, hi;
  };
  const Param params[] = {{DiagParam::stddev, std::sqrt(1e-300), std::sqrt(1e300)},
                          {DiagParam::var, 1e-300, 1e300},
                          {DiagParam::precision, 1 / 1e300, 1 / 1e-300},
                          {DiagParam::logvar, std::log(1e-300), std::log(1e300)}};
  // The representable values of T nearest to the range's ends from inside (or T's own limits).
  const auto inside = [](double edge, bool up) {
    const T x = static_cast<T>(
        std::clamp<double>(edge, -std::numeric_limits<T>::max(), std::numeric_limits<T>::max()));
    if (up ? static_cast<double>(x) < edge : static_cast<double>(x) > edge) {
      return std::nextafter(
          x, up ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity());
    }
    return x;
  };
  for (const Param& pr : params) {
    const T one = pr.param == DiagParam::logvar ? T(0) : T(1);
    const T lo = std::max(inside(pr.lo, true), std::numeric_limits<T>::denorm_min());
    const T hi = inside(pr.hi, false);
    std::vector<T> mean(static_cast<std::size_t>(size), T(7)), scale(mean.size(), T(-7));
    const auto at = [&](std::int64_t i, std::int64_t h) {
      return static_cast<std::size_t>(i * row_stride + h * col_stride);
    };
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t h = 0; h < d; ++h)
        mean[at(i, h)] = T(0.5), scale[at(i, h)] = one;
    const auto run = [&](const std::vector<T>& m, const std::vector<T>& s, int threads) {
      const DiagGaussians<T> p{View<T, 2>{m.data(), {n, d}, {row_stride, col_stride}},
                               View<T, 2>{s.data(), {n, d}, {row_stride, col_stride}}, pr.param};
      std::vector<T> out(static_cast<std::size_t>(n));
      kl_standard_normal(p, std::span<T>(out), {.threads = threads});
    };
    for (const int threads : {1, 2}) {
      std::vector<T> edges = scale, means = mean;
      edges[at(3, 0)] = lo, edges[at(4, d - 1)] = hi, edges[at(n - 1, 0)] = hi;
      means[at(3, 0)] = -big, means[at(4, d - 1)] = big, means[at(n - 1, d - 1)] = T(-0.0);
      run(means, edges, threads);  // valid
      struct Case {
        bool on_mean;
        T value;
        const char* rule;
      };
      const Case cases[] = {
          {true, nan, "finite"},
          {true, inf, "finite"},
          {true, -inf, "finite"},
          {false, nan, "finite"},
          {false, inf, "finite"},
          {false, -inf, "finite"},
          {false, pr.param == DiagParam::logvar ? T(-800) : T(0), ""},
          {false, pr.param == DiagParam::logvar ? big : -one, ""},
          {false, pr.param == DiagParam::logvar ? T(800) : T(-0.0), ""},
      };
      for (const std::int64_t i : {std::int64_t{0}, std::int64_t{130}, n - 1}) {
        for (const std::int64_t h : {std::int64_t{0}, d - 1}) {
          for (const Case& k : cases) {
            std::vector<T> m = mean, s = scale;
            std::vector<T>& bad = k.on_mean ? m : s;
            bad[at(i, h)] = k.value;
            if (i + 1 < n) bad[at(n - 1, 0)] = nan;
            expect_invalid([&] { run(m, s, threads); },
                           {"[kl_standard_normal] ", k.on_mean ? "p.mean" : "p.scale", k.rule,
                            "at row " + std::to_string(i) + ", column " + std::to_string(h)});
          }
        }
      }
    }
  }
}

TEST_P(ValidateTargets, DiagonalRows) {
  for (const std::int64_t d : {32, 7, 1}) {
    for (const auto& [row_stride, col_stride] :
         {std::pair{d, std::int64_t{1}}, std::pair{d + 3, std::int64_t{1}},
          std::pair{2 * d, std::int64_t{2}}}) {
      check_diag_rows<float>(d, row_stride, col_stride);
      check_diag_rows<double>(d, row_stride, col_stride);
    }
  }
}

// The same checks through a strided view (the fast pass has a separate loop for it): every
// matrix stored transposed, read with strides {9, 1, 3}.
TEST(Validate, ScaleTrilStrided) {
  const auto p = diag(4, 3);
  auto q = full(4, 3, FullParam::scale_tril);
  std::vector<double> transposed(q.scale.size());
  for (int i = 0; i < 4; ++i)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c)
        transposed[(i * 3 + c) * 3 + r] = q.scale[(i * 3 + r) * 3 + c];
  auto view_of = [&](const std::vector<double>& t) {
    return FullGaussians<double>{contiguous<double, 2>(q.mean.data(), {4, 3}),
                                 View<double, 3>{t.data(), {4, 3, 3}, {9, 1, 3}},
                                 FullParam::scale_tril};
  };
  std::vector<double> out(4);
  kl(p.view(), Gaussians<double>(view_of(transposed)), std::span<double>(out));  // valid
  std::vector<double> bad = transposed;
  bad[(1 * 3 + 2) * 3 + 0] = 0.5;  // stored (1, 2, 0): element (1, 0, 2), above the diagonal
  expect_invalid([&] { kl(p.view(), Gaussians<double>(view_of(bad)), std::span<double>(out)); },
                 {"[kl] ", "q.scale (scale_tril)", "lower triangular", "0.5",
                  "distribution 1, row 0, column 2"});
  bad = transposed;
  bad[(3 * 3 + 0) * 3 + 2] = kInf;  // element (3, 2, 0)
  expect_invalid([&] { kl(p.view(), Gaussians<double>(view_of(bad)), std::span<double>(out)); },
                 {"q.scale (scale_tril)", "finite", "inf", "distribution 3, row 2, column 0"});
}

// packed_scale_tril [N, K], K = D (D + 1) / 2: each rule, named in the packed array's row and
// column and as the factor's entry. Here D = 3: L[r, c] at column r (r + 1) / 2 + c.
TEST(Validate, PackedScaleTril) {
  const auto p = diag(4, 3);
  const auto run = [&](const FullBatch<double>& q) { run_kl(p.view(), q.view()); };
  run(packed(4, 3));
  run(packed(4, 3, true));
  auto q = packed(4, 3);
  q.scale[2 * 6 + 0] = kNan;
  expect_invalid([&] { run(q); }, {"[kl] ", "q.scale (packed_scale_tril) must be finite", "nan",
                                   "at row 2, column 0 (L[0, 0])"});
  q = packed(4, 3, true);
  q.scale[3 * 6 + 4] = -kInf;
  expect_invalid([&] { run(q); }, {"[kl] q.scale (packed_scale_tril) must be finite, found -inf "
                                   "at row 3, column 4 (L[2, 1])"});
  q = packed(4, 3);
  q.scale[1 * 6 + 5] = -1;
  expect_invalid([&] { run(q); },
                 {"[kl] q.scale (packed_scale_tril) must have a positive diagonal with squares in "
                  "[1e-300, 1e300], found -1 at row 1, column 5 (L[2, 2])",
                  "log_diagonal"});
  q.scale[1 * 6 + 5] = 1e-200;  // squares to below 1e-300
  expect_invalid([&] { run(q); }, {"positive diagonal", "1e-200", "row 1, column 5 (L[2, 2])"});
  q.scale[1 * 6 + 5] = 1e160;  // squares to above 1e300
  expect_invalid([&] { run(q); }, {"positive diagonal", "1e+160", "row 1, column 5 (L[2, 2])"});
  q = packed(4, 3);
  q.scale[0 * 6 + 2] = 0;
  expect_invalid([&] { run(q); }, {"positive diagonal", "found 0", "row 0, column 2 (L[1, 1])"});

  // With log_diagonal the diagonal holds log L_rr: any sign, exp(2 x) in range.
  q = packed(4, 3, true);
  q.scale[0 * 6 + 0] = -1;
  q.scale[3 * 6 + 5] = -300;
  run(q);
  q.scale[3 * 6 + 5] = 400;
  expect_invalid(
      [&] { run(q); },
      {"[kl] q.scale (packed_scale_tril) must have diagonal entries x = log L_rr (log_diagonal) "
       "with exp(2 x) in [1e-300, 1e300], found 400 at row 3, column 5 (L[2, 2])"});
  q.scale[3 * 6 + 5] = 0;
  q.scale[2 * 6 + 0] = -400;
  expect_invalid([&] { run(q); }, {"log L_rr", "-400", "row 2, column 0 (L[0, 0])"});
  // Off-diagonal entries are unconstrained, however large.
  q = packed(4, 3);
  q.scale[2 * 6 + 3] = -1e300;
  run(q);
  // p is named p, and every op says so.
  auto bad = packed(2, 2);
  bad.scale[1 * 3 + 1] = kNan;
  std::vector<double> out(4);
  std::vector<std::int64_t> indices(2);
  const std::string where =
      "p.scale (packed_scale_tril) must be finite, found nan at row 1, "
      "column 1 (L[1, 0])";
  expect_invalid([&] { kl_standard_normal(bad.view(), std::span<double>(out).first(2)); },
                 {"[kl_standard_normal] " + where});
  expect_invalid([&] { pairwise_kl(bad.view(), std::span<double>(out)); },
                 {"[pairwise_kl] " + where});
  expect_invalid(
      [&] {
        knn_kl(bad.view(), 1, std::span<std::int64_t>(indices), std::span<double>(out).first(2));
      },
      {"[knn_kl] " + where});
}

TEST(Validate, PackedScaleTrilShapes) {
  const auto p = diag(4, 3);
  const auto batch = packed(4, 3);
  FullGaussians<double> q = batch.view();
  q.packed.shape = {4, 5};
  expect_invalid([&] { run_kl(p.view(), q); },
                 {"[kl] q.scale (packed_scale_tril) has shape [4, 5], expected [4, 6] ([N, D (D + "
                  "1) / 2] with D = 3 from q.mean)"});
  q.packed.shape = {3, 6};
  expect_invalid([&] { run_kl(p.view(), q); }, {"has shape [3, 6], expected [4, 6]"});
  q = batch.view();
  q.packed.data = nullptr;
  expect_invalid([&] { run_kl(p.view(), q); }, {"[kl] q.scale (packed_scale_tril) has no data"});
  // K = D (D + 1) / 2 beyond int64, with N = 0 so that nothing else stops it first.
  const std::int64_t huge = std::int64_t{1} << 33;
  const FullGaussians<double> none{View<double, 2>{nullptr, {0, huge}, {huge, 1}},
                                   {},
                                   FullParam::packed_scale_tril,
                                   View<double, 2>{nullptr, {0, 0}, {0, 1}}};
  std::vector<double> out;
  expect_invalid([&] { kl_standard_normal(Gaussians<double>(none), std::span<double>(out)); },
                 {"[kl_standard_normal] p.scale (packed_scale_tril) row length D (D + 1) / 2 "
                  "overflows int64"});
  // log_diagonal belongs to packed factors only.
  const auto tril_batch = full(4, 3, FullParam::scale_tril);
  FullGaussians<double> tril = tril_batch.view();
  tril.log_diagonal = true;
  expect_invalid([&] { run_kl(p.view(), tril); },
                 {"[kl] q.log_diagonal is set, but it applies to packed_scale_tril only (q.scale "
                  "is scale_tril)"});
}

// The rules of packed rows at both ends of a row (column 0 is L[0, 0], column K - 1 is
// L[D - 1, D - 1]), in one of 300 distributions (several chunks of first_invalid) on 2 threads
// with a second bad value in a later distribution, float and double, contiguous or read through
// restrided (padded, backwards) views.
template <class T>
void check_packed_rows(std::int64_t d, bool strided) {
  const std::int64_t n = 300, k = d * (d + 1) / 2;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  struct Case {
    std::int64_t c;
    T value;
    bool log_diagonal;
    const char* rule;
    std::string entry;
  };
  const std::string first = "(L[0, 0])",
                    last = "(L[" + std::to_string(d - 1) + ", " + std::to_string(d - 1) + "])";
  const Case cases[] = {
      {0, nan, false, "must be finite", first},
      {k - 1, inf, true, "must be finite", last},
      {k - 2, -inf, false, "must be finite",
       "(L[" + std::to_string(d - 1) + ", " + std::to_string(d - 2) + "])"},
      {0, T(0), false, "positive diagonal", first},
      {k - 1, T(-2), false, "positive diagonal", last},
      {0, T(400), true, "exp(2 x) in [1e-300, 1e300]", first},
      {k - 1, T(-400), true, "exp(2 x) in [1e-300, 1e300]", last},
  };
  const DiagBatch<T> p{n, d, DiagParam::stddev, std::vector<T>(n * d, T(0)),
                       std::vector<T>(n * d, T(1))};
  for (const bool log_diagonal : {false, true}) {
    const FullBatch<T> valid = packed<T>(n, d, log_diagonal);
    const auto run = [&](const FullBatch<T>& q) {
      std::vector<T> out(static_cast<std::size_t>(n)), storage;
      FullGaussians<T> view = q.view();
      if (strided) view.packed = restrided(view.packed, storage);
      kl(Gaussians<T>(p.view()), Gaussians<T>(view), std::span<T>(out), {.threads = 2});
    };
    run(valid);
    for (const std::int64_t i : {std::int64_t{0}, std::int64_t{70}, std::int64_t{130}, n - 1}) {
      for (const Case& c : cases) {
        if (c.log_diagonal != log_diagonal) continue;
        FullBatch<T> bad = valid;
        bad.scale[i * k + c.c] = c.value;
        if (i + 1 < n) bad.scale[(n - 1) * k + 1] = nan;
        expect_invalid([&] { run(bad); }, {"[kl] ", "q.scale (packed_scale_tril)", c.rule,
                                           "at row " + std::to_string(i) + ", column " +
                                               std::to_string(c.c) + " " + c.entry});
      }
    }
  }
}

TEST(Validate, PackedScaleTrilRows) {
  for (const std::int64_t d : {2, 7, 32})
    for (const bool strided : {false, true}) {
      check_packed_rows<float>(d, strided);
      check_packed_rows<double>(d, strided);
    }
}

// Log diagonals at the edges of the accepted range: accepted exactly when exp(2 x) is in
// [1e-300, 1e300], i.e. 2 x in logvar's range, for float and double.
template <class T>
void check_log_diagonal_edges() {
  const double lo = std::log(1e-300), hi = std::log(1e300);
  std::vector<T> candidates = {std::numeric_limits<T>::max(), -std::numeric_limits<T>::max()};
  for (const double edge : {lo / 2, hi / 2}) {
    const T x = static_cast<T>(edge);
    candidates.push_back(x);
    candidates.push_back(std::nextafter(x, std::numeric_limits<T>::infinity()));
    candidates.push_back(std::nextafter(x, -std::numeric_limits<T>::infinity()));
  }
  for (const T x : candidates) {
    const std::vector<T> mean(2, T(0)), values = {T(0), T(0.5), x};  // log L_11 = x
    const FullGaussians<T> g{contiguous<T, 2>(mean.data(), {1, 2}),
                             {},
                             FullParam::packed_scale_tril,
                             contiguous<T, 2>(values.data(), {1, 3}),
                             true};
    const double twice = 2 * static_cast<double>(x);
    bool accepted = true;
    try {
      detail::validate("kl", "p", Gaussians<T>(g));
    } catch (const std::invalid_argument&) {
      accepted = false;
    }
    EXPECT_EQ(accepted, twice >= lo && twice <= hi) << static_cast<double>(x);
  }
}

TEST(Validate, LogDiagonalEdgesFloat) {
  check_log_diagonal_edges<float>();
}
TEST(Validate, LogDiagonalEdgesDouble) {
  check_log_diagonal_edges<double>();
}

// Validating packed factors builds no strings and starts no threads: nothing is allocated, at the
// common tiny sizes or many rows on one thread.
TEST(Validate, PackedScaleTrilAllocatesNothing) {
  for (const std::int64_t n : {1, 300})
    for (const bool log_diagonal : {false, true}) {
      const FullBatch<double> q = packed(n, 3, log_diagonal);
      const Gaussians<double> g = q.view();
      const CountAllocations count;
      detail::validate("kl", "q", g, 1);
      EXPECT_EQ(count.total_bytes(), 0u) << n << " " << log_diagonal;
    }
}

TEST(Validate, SymmetricMatrices) {
  const auto q = diag(1, 3);
  auto p = full(1, 3, FullParam::covariance);
  p.scale[1 * 3 + 0] = 1;
  p.scale[0 * 3 + 1] = 2;
  expect_invalid([&] { run_kl(p.view(), q.view()); },
                 {"[kl] ", "p.scale (covariance)", "symmetric", "1 and 2", "distribution 0",
                  "row 1, column 0"});
  p = full(1, 3, FullParam::precision_matrix);
  p.scale[2 * 3 + 1] = 0.5;
  expect_invalid([&] { run_kl(p.view(), q.view()); },
                 {"p.scale (precision_matrix)", "symmetric", "distribution 0", "row 2, column 1"});
}

TEST(Validate, NotPositiveDefinite) {
  const auto p = diag(4, 3);
  auto q = full(4, 3, FullParam::covariance);
  q.scale[(3 * 3 + 2) * 3 + 2] = -0.013;
  expect_invalid([&] { run_kl(p.view(), q.view()); },
                 {"[kl] ", "q.scale (covariance)", "not positive definite", "distribution 3",
                  "pivot 2", "-0.013"});

  // Symmetric with a positive diagonal, yet indefinite: the second pivot is 1 - 4 = -3.
  auto c = full(2, 2, FullParam::covariance);
  c.scale[4 + 1] = c.scale[4 + 2] = 2;
  std::vector<double> out(4);
  expect_invalid([&] { pairwise_kl(c.view(), std::span<double>(out)); },
                 {"[pairwise_kl] ", "p.scale (covariance)", "distribution 1", "pivot 1", "-3"});

  auto precision = full(3, 3, FullParam::precision_matrix);
  precision.scale[(1 * 3 + 1) * 3 + 1] = -0.5;
  std::vector<std::int64_t> indices(3);
  std::vector<double> values(3);
  const auto q3 = diag(3, 3);
  expect_invalid(
      [&] {
        knn_kl(q3.view(), precision.view(), 1, std::span<std::int64_t>(indices),
               std::span<double>(values));
      },
      {"[knn_kl] ", "q.scale (precision_matrix)", "not positive definite", "distribution 1",
       "-0.5"});
}

TEST(Validate, ShapesOfPAndQ) {
  expect_invalid([&] { run_kl(diag(3, 2).view(), diag(5, 2).view()); },
                 {"[kl] ", "p and q have N = 3 and N = 5", "N = 1"});
  expect_invalid([&] { run_kl(diag(3, 3).view(), full(3, 4, FullParam::covariance).view()); },
                 {"[kl] ", "p and q have D = 3 and D = 4"});
  std::vector<double> out(6);
  expect_invalid([&] { pairwise_kl(diag(2, 3).view(), diag(3, 4).view(), std::span<double>(out)); },
                 {"[pairwise_kl] ", "D = 3 and D = 4"});
}

TEST(Validate, ShapesWithinABatch) {
  const auto q = diag(3, 5);
  const auto p = diag(3, 5);
  DiagGaussians<double> d = p.view();
  d.scale.shape = {3, 4};
  expect_invalid([&] { run_kl(d, q.view()); },
                 {"[kl] ", "p.scale has shape [3, 4], expected [3, 5]"});

  const auto f = full(3, 5, FullParam::scale_tril);
  FullGaussians<double> fv = f.view();
  fv.scale.shape = {3, 5, 4};
  expect_invalid([&] { run_kl(q.view(), fv); },
                 {"q.scale has shape [3, 5, 4], expected [3, 5, 5]"});

  const auto l = low_rank(3, 5, 2);
  LowRankGaussians<double> lv = l.view();
  lv.cov_diag.shape = {3, 4};
  expect_invalid([&] { run_kl(lv, q.view()); }, {"p.cov_diag has shape [3, 4], expected [3, 5]"});
  lv = l.view();
  lv.cov_factor.shape = {2, 5, 2};
  expect_invalid([&] { run_kl(lv, q.view()); },
                 {"p.cov_factor has shape [2, 5, 2], expected [3, 5, 2]"});
}

TEST(Validate, Views) {
  const auto p = diag(2, 3);
  std::vector<double> out(2);
  // Not run_kl: some of these shapes claim more rows than memory holds.
  const auto run = [&](const DiagGaussians<double>& a, const DiagGaussians<double>& b) {
    kl(a, b, std::span<double>(out));
  };
  DiagGaussians<double> v = p.view();
  v.mean.shape = {2, 0};
  v.scale.shape = {2, 0};
  expect_invalid([&] { run(v, v); }, {"[kl] ", "p.mean", "D = 0"});

  v = p.view();
  v.mean.shape = {-1, 3};
  expect_invalid([&] { run(v, p.view()); }, {"[kl] ", "p.mean", "negative"});

  v = p.view();
  v.scale.data = nullptr;
  expect_invalid([&] { run(p.view(), v); }, {"[kl] ", "q.scale", "no data"});

  // Sizes and offsets that do not fit in int64, rejected before anything is read.
  v = p.view();
  v.mean.shape = {std::int64_t{1} << 32, std::int64_t{1} << 32};
  expect_invalid([&] { run(v, p.view()); }, {"[kl] ", "p.mean", "overflows int64"});
  v = p.view();
  v.mean.strides = {std::int64_t{1} << 62, std::int64_t{1} << 62};
  expect_invalid([&] { run(v, p.view()); }, {"[kl] ", "p.mean", "overflows int64"});
}

TEST(Validate, OutputSizes) {
  const auto p = diag(5, 2), q = diag(5, 2);
  std::vector<double> out(4);
  expect_invalid([&] { kl(p.view(), q.view(), std::span<double>(out)); },
                 {"[kl] ", "out has 4 elements, expected 5"});
  expect_invalid([&] { kl_standard_normal(p.view(), std::span<double>(out)); },
                 {"[kl_standard_normal] ", "out has 4 elements, expected 5"});
  std::vector<float> pairs(24);
  expect_invalid([&] { pairwise_kl(p.view(), std::span<float>(pairs)); },
                 {"[pairwise_kl] ", "out has 24 elements, expected 25"});
  std::vector<std::int64_t> indices(10);
  std::vector<double> values(9);
  expect_invalid(
      [&] {
        knn_kl(p.view(), q.view(), 2, std::span<std::int64_t>(indices), std::span<double>(values));
      },
      {"[knn_kl] ", "values has 9 elements, expected 10"});
}

TEST(Validate, KnnK) {
  const auto p = diag(3, 2), q = diag(5, 2);
  std::vector<std::int64_t> indices(21);
  std::vector<double> values(21);
  const auto run = [&](std::int64_t k, const Options& options, bool with_q) {
    const std::span<std::int64_t> is(indices.data(), 3 * k);
    const std::span<double> vs(values.data(), 3 * k);
    if (with_q) {
      knn_kl(p.view(), q.view(), k, is, vs, options);
    } else {
      knn_kl(p.view(), k, is, vs, options);
    }
  };
  expect_invalid([&] { run(7, {}, true); }, {"[knn_kl] ", "k = 7 must be between 1 and M = 5"});
  expect_invalid([&] { run(0, {}, true); }, {"[knn_kl] ", "k = 0", "M = 5"});
  expect_invalid([&] { run(3, {.exclude_self = true}, false); },
                 {"[knn_kl] ", "k = 3", "M - 1 = 2"});
  expect_invalid([&] { run(1, {.exclude_self = true}, true); }, {"[knn_kl] ", "exclude_self"});
}

TEST(Validate, Options) {
  const auto p = diag(2, 2);
  std::vector<double> out(2);
  expect_invalid([&] { kl(p.view(), p.view(), std::span<double>(out), {.threads = -1}); },
                 {"[kl] ", "threads", "-1"});
}

// The same bad input through every op carries that op's tag.
TEST(Validate, EveryOpTagsItsMessages) {
  auto p = diag(2, 2);
  p.scale[3] = -2;
  const auto q = diag(2, 2);
  const std::string where =
      "p.scale (std) must be positive and finite, found -2 at row 1, column 1";
  std::vector<double> out(4);
  std::vector<std::int64_t> indices(2);
  expect_invalid([&] { kl(p.view(), q.view(), std::span<double>(out).first(2)); },
                 {"[kl] " + where});
  expect_invalid([&] { kl_standard_normal(p.view(), std::span<double>(out).first(2)); },
                 {"[kl_standard_normal] " + where});
  expect_invalid([&] { pairwise_kl(p.view(), q.view(), std::span<double>(out)); },
                 {"[pairwise_kl] " + where});
  expect_invalid([&] { pairwise_kl(p.view(), std::span<double>(out)); },
                 {"[pairwise_kl] " + where});
  expect_invalid(
      [&] {
        knn_kl(p.view(), 1, std::span<std::int64_t>(indices), std::span<double>(out).first(2));
      },
      {"[knn_kl] " + where});
  // q is named q.
  expect_invalid([&] { kl(q.view(), p.view(), std::span<double>(out).first(2)); },
                 {"[kl] q.scale (std)"});
}

// Validation is complete before the first output is written, including the positive
// definiteness found while factoring, even when rows are processed in several chunks (a full q
// at D = 128 takes 256 KiB prepared; 300 rows exceed one 64 MiB chunk).
TEST(Validate, NothingIsWrittenOnError) {
  const auto p = diag(300, 128);
  auto q = full(300, 128, FullParam::covariance);
  q.scale[((299 * 128) + 5) * 128 + 5] = -1;
  std::vector<double> out(300, -7.0);
  expect_invalid([&] { kl(p.view(), q.view(), std::span<double>(out)); },
                 {"[kl] ", "q.scale (covariance)", "not positive definite", "distribution 299"});
  EXPECT_EQ(std::count(out.begin(), out.end(), -7.0), 300) << "outputs written before the error";

  out.assign(300, -7.0);
  auto bad_mean = diag(300, 128);
  bad_mean.mean.back() = kNan;
  expect_invalid([&] { kl(p.view(), bad_mean.view(), std::span<double>(out)); }, {"q.mean"});
  EXPECT_EQ(std::count(out.begin(), out.end(), -7.0), 300) << "outputs written before the error";

  std::vector<double> pairs(300 * 300, -7.0);
  expect_invalid([&] { pairwise_kl(p.view(), q.view(), std::span<double>(pairs)); },
                 {"[pairwise_kl] ", "distribution 299"});
  EXPECT_EQ(std::count(pairs.begin(), pairs.end(), -7.0), 300 * 300);
}

}  // namespace
}  // namespace gausskl::test
