// gausskl::kl_with_gradients, kl_standard_normal_with_gradients, scale_rows and sum_scaled_rows
// (gausskl/gradients.hpp): the values against the long-double reference KL, and the kept
// gradients, in double or in T (then scaled in place), scaled by an upstream gradient, against
// the gradient oracle (support/
// gradient_oracle.hpp, itself checked against finite differences in kl_backward_test.cpp): every
// diagonal parameterization on each side (p and q both logvar take the one-pass kernel, the others
// the forward and backward kernels in turn), all data sets, D with and without a partial vector,
// strided views, thread counts, and the input rules.
//
// Bars as kl_backward_test.cpp's: 1e-13 for double outputs, 1.2e-7 for float outputs (their
// rounding; kept in float and scaled in place, two roundings: 1.8e-7); values: |got - ref| /
// (|ref| + 1) within 1e-13, or float's rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/reference.hpp"
#include "gausskl/gradients.hpp"
#include "gausskl/ops.hpp"
#include "hwy/targets.h"
#include "support/batches.hpp"
#include "support/expect.hpp"
#include "support/generators.hpp"
#include "support/gradient_oracle.hpp"

namespace gausskl::test {
namespace {

constexpr DiagParam kParams[] = {DiagParam::stddev, DiagParam::var, DiagParam::logvar,
                                 DiagParam::precision};

template <class T>
constexpr double bar() {
  return std::is_same_v<T, double> ? 1e-13 : 1.2e-7;
}

template <class T>
std::vector<T> upstream(std::int64_t n) {
  std::vector<T> g(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    g[i] = static_cast<T>((i % 2 ? -1.0 : 1.0) * (0.5 + 0.25 * i));
  return g;
}

// The values and the kept gradients (every one wanted), in S: T or double.
template <class T, class S = double>
struct Kept {
  std::vector<T> values;
  std::vector<S> unit[4];  // p.mean, p.scale, q.mean, q.scale
};

// The pairs' count: a side of one row is paired with every row of the other.
template <class T>
std::int64_t pairs(const Gaussians<T>& p, const Gaussians<T>* q) {
  return q ? std::max(p.n(), q->n()) : p.n();
}

template <class T, class S = double>
Kept<T, S> with_gradients(const Gaussians<T>& p, const Gaussians<T>* q,
                          const Options& options = {}) {
  Kept<T, S> k;
  const std::int64_t n = pairs(p, q);
  k.values.resize(static_cast<std::size_t>(n));
  for (int a = 0; a < (q ? 4 : 2); ++a)
    k.unit[a].resize(static_cast<std::size_t>(n * p.d()));
  if (q) {
    kl_with_gradients(p, *q, std::span<T>(k.values), Gradients<S>{k.unit[0], k.unit[1]},
                      Gradients<S>{k.unit[2], k.unit[3]}, options);
  } else {
    kl_standard_normal_with_gradients(p, std::span<T>(k.values), Gradients<S>{k.unit[0], k.unit[1]},
                                      options);
  }
  return k;
}

template <class T>
void check(const Gaussians<T>& p, const Gaussians<T>* q, bool alike, bool exact_zero,
           const std::string& label) {
  const Kept<T> got = with_gradients(p, q);
  const std::int64_t n = pairs(p, q);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t ip = p.n() == 1 ? 0 : i;
    const long double want =
        q ? reference::kl(p, ip, *q, q->n() == 1 ? 0 : i) : reference::kl_standard_normal(p, ip);
    const double error =
        static_cast<double>(std::fabs(got.values[i] - want) / (std::fabs(want) + 1));
    EXPECT_LE(error, (std::is_same_v<T, double> ? 1e-13 : 6e-8)) << label << " value " << i;
    if (exact_zero) {
      ASSERT_EQ(got.values[i], T(0)) << label << " value " << i;
    }
  }
  const std::vector<T> grad = upstream<T>(n);
  const RefGradients ref = reference_backward(p, q, std::span<const T>(grad));
  const RefArray* refs[] = {&ref.p.mean, &ref.p.scale, &ref.q.mean, &ref.q.scale};
  const char* names[] = {"p.mean", "p.scale", "q.mean", "q.scale"};
  for (int a = 0; a < (q ? 4 : 2); ++a) {
    // A side of one row paired with every row: its gradient is the sum over the pairs.
    const bool summed = (a < 2 ? p.n() : q->n()) < n;
    std::vector<T> scaled(got.unit[a].size() / (summed ? static_cast<std::size_t>(n) : 1));
    if (summed) {
      sum_scaled_rows(std::span<const double>(got.unit[a]), std::span<const T>(grad),
                      std::span<T>(scaled));
    } else {
      scale_rows(std::span<const double>(got.unit[a]), std::span<const T>(grad),
                 std::span<T>(scaled));
    }
    const std::span<const T> values(scaled);
    EXPECT_LE(gradient_error(values, *refs[a], Measure::terms), bar<T>())
        << label << " " << names[a];
    if (alike) {
      EXPECT_LE(gradient_error(values, *refs[a], Measure::near), bar<T>())
          << label << " " << names[a] << " (near)";
    }
    if (exact_zero) {
      for (const double x : got.unit[a])
        ASSERT_EQ(x, 0.0) << label << " " << names[a];
    }
  }
  // Kept in T: the double values rounded once (the same bits as rounding the double span), and
  // for a side with a row per pair, scaled in place within the oracle's bar plus one rounding.
  const Kept<T, T> narrow = with_gradients<T, T>(p, q);
  EXPECT_EQ(narrow.values, got.values) << label;
  for (int a = 0; a < (q ? 4 : 2); ++a) {
    for (std::size_t k = 0; k < got.unit[a].size(); ++k)
      ASSERT_EQ(narrow.unit[a][k], static_cast<T>(got.unit[a][k])) << label << " " << k;
    if ((a < 2 ? p.n() : q->n()) < n) continue;
    std::vector<T> rows = narrow.unit[a];
    scale_rows(std::span<const T>(grad), std::span<T>(rows));
    EXPECT_LE(gradient_error(std::span<const T>(rows), *refs[a], Measure::terms), 1.5 * bar<T>())
        << label << " " << names[a] << " (in place)";
  }
}

template <class T>
void check_diag(Rng& rng, Data data, std::int64_t n, std::int64_t d, std::int64_t nq = 0) {
  const auto [ps, qs] = make_specs(rng, data, Family::diag, Family::diag, n, nq ? nq : n, d);
  for (const DiagParam pp : kParams) {
    const DiagBatch<T> p = make_diag<T>(std::get<DiagSpec>(ps), pp);
    const Gaussians<T> pg(p.view());
    const std::string label = name(data) + " D " + std::to_string(d) + " p " + param_name(pp);
    check<T>(pg, nullptr, true, false, label + " q N(0, I)");
    for (const DiagParam qp : kParams) {
      const DiagBatch<T> q = make_diag<T>(std::get<DiagSpec>(qs), qp);
      const Gaussians<T> qg(q.view());
      check<T>(pg, &qg, pp == qp, data == Data::identical && pp == qp,
               label + " q " + param_name(qp));
    }
  }
}

TEST(KlWithGradients, EveryParameterizationOnAllData) {
  Rng rng(121);
  for (const Data data : all_data()) {
    for (const std::int64_t d : {1, 5, 8, 32, 37}) {
      check_diag<float>(rng, data, 9, d);
      check_diag<double>(rng, data, 9, d);
    }
  }
  check_diag<float>(rng, Data::adversarial, 3, 256);
  check_diag<double>(rng, Data::near_duplicate_1e8, 3, 1024);
}

// One distribution on either side paired with every row of the other (a learned prior shared by
// the batch): its spans hold every pair's gradient, and sum_scaled_rows sums them to the oracle's.
TEST(KlWithGradients, OneRowPairedWithEveryRow) {
  Rng rng(124);
  for (const Data data : all_data()) {
    for (const std::int64_t d : {1, 5, 32, 37}) {
      check_diag<float>(rng, data, 9, d, 1);
      check_diag<double>(rng, data, 9, d, 1);
      check_diag<double>(rng, data, 1, d, 9);
    }
  }
  check_diag<float>(rng, Data::adversarial, 200, 64, 1);
}

// The one-pass kernel against the forward and backward operations on the VAE's sizes: values
// within a few roundings of kl's (float: equal), gradients within bar of kl_backward's.
TEST(KlWithGradients, AgreesWithKlThenKlBackward) {
  Rng rng(122);
  const auto [ps, qs] = make_specs(rng, Data::random, Family::diag, Family::diag, 128, 128, 32);
  const DiagBatch<float> p = make_diag<float>(std::get<DiagSpec>(ps), DiagParam::logvar);
  const DiagBatch<float> q = make_diag<float>(std::get<DiagSpec>(qs), DiagParam::logvar);
  const Gaussians<float> pg(p.view()), qg(q.view());
  for (const bool standard : {false, true}) {
    const Gaussians<float>* qp = standard ? nullptr : &qg;
    const Kept<float> got = with_gradients(pg, qp);
    std::vector<float> values(128);
    if (standard) {
      kl_standard_normal(pg, std::span<float>(values));
    } else {
      kl(pg, qg, std::span<float>(values));
    }
    for (std::size_t i = 0; i < values.size(); ++i)
      EXPECT_NEAR(got.values[i], values[i], 2e-7 * (values[i] + 1)) << standard << " " << i;
    const std::vector<float> grad = upstream<float>(128);
    std::vector<float> want[4];
    for (auto& w : want)
      w.resize(128 * 32);
    if (standard) {
      kl_standard_normal_backward(pg, grad, Gradients<float>{want[0], want[1]});
    } else {
      kl_backward(pg, qg, grad, Gradients<float>{want[0], want[1]},
                  Gradients<float>{want[2], want[3]});
    }
    for (int a = 0; a < (standard ? 2 : 4); ++a) {
      std::vector<float> scaled(want[a].size());
      scale_rows(std::span<const double>(got.unit[a]), std::span<const float>(grad),
                 std::span<float>(scaled));
      for (std::size_t k = 0; k < scaled.size(); ++k)
        ASSERT_NEAR(scaled[k], want[a][k], 1.2e-7 * std::fabs(want[a][k]) + 1e-30)
            << standard << " array " << a << " entry " << k;
    }
  }
}

// scale_rows and sum_scaled_rows on every SIMD target the CPU runs: each element one product in
// double rounded once (a sum: products added in row order; in place: one product in float), the
// bits of that scalar loop; rows of 1, 37 (a partial vector) and 1100 (past sum_scaled_rows'
// 512-column block) elements.
TEST(KlWithGradients, ScalingOnEveryTarget) {
  Rng rng(125);
  for (const std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (const std::int64_t k : {1, 37, 1100}) {
      const std::int64_t n = 5;
      std::vector<double> unit(static_cast<std::size_t>(n * k));
      std::normal_distribution<double> normal(0.0, 1e3);
      for (double& x : unit)
        x = normal(rng);
      const std::vector<float> grad = upstream<float>(n);
      std::vector<float> rows(unit.size()), sums(static_cast<std::size_t>(k));
      scale_rows(std::span<const double>(unit), std::span<const float>(grad),
                 std::span<float>(rows));
      sum_scaled_rows(std::span<const double>(unit), std::span<const float>(grad),
                      std::span<float>(sums));
      std::vector<float> in_place(unit.begin(), unit.end());
      scale_rows(std::span<const float>(grad), std::span<float>(in_place));
      for (std::int64_t j = 0; j < k; ++j) {
        double sum = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          const double product = static_cast<double>(grad[i]) * unit[i * k + j];
          ASSERT_EQ(rows[i * k + j], static_cast<float>(product)) << k << " " << i << " " << j;
          const float narrow = grad[i] * static_cast<float>(unit[i * k + j]);
          ASSERT_EQ(in_place[i * k + j], narrow) << k << " " << i << " " << j;
          sum += product;
        }
        ASSERT_EQ(sums[j], static_cast<float>(sum)) << k << " " << j;
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Strided views give what contiguous ones give (the logvar pair then takes the two kernels in
// turn), and every thread count gives the same bits.
TEST(KlWithGradients, StridesAndThreads) {
  Rng rng(123);
  const auto [ps, qs] = make_specs(rng, Data::random, Family::diag, Family::diag, 300, 300, 70);
  const DiagBatch<double> p = make_diag<double>(std::get<DiagSpec>(ps), DiagParam::logvar);
  const DiagBatch<double> q = make_diag<double>(std::get<DiagSpec>(qs), DiagParam::logvar);
  std::vector<double> s[4];
  const DiagGaussians<double> pv = p.view(), qv = q.view();
  const DiagGaussians<double> p_s{restrided(pv.mean, s[0]), restrided(pv.scale, s[1]), pv.param};
  const DiagGaussians<double> q_s{restrided(qv.mean, s[2]), restrided(qv.scale, s[3]), qv.param};
  const Gaussians<double> pg(pv), qg(qv), psg(p_s), qsg(q_s);
  const Kept<double> plain = with_gradients<double>(pg, &qg, {.threads = 1});
  for (const int threads : {1, 2, 0}) {
    const Kept<double> again = with_gradients<double>(pg, &qg, {.threads = threads});
    EXPECT_EQ(again.values, plain.values) << threads;
    for (int a = 0; a < 4; ++a)
      EXPECT_EQ(again.unit[a], plain.unit[a]) << threads << " " << a;
    const Kept<double> strided = with_gradients<double>(psg, &qsg, {.threads = threads});
    for (std::size_t i = 0; i < plain.values.size(); ++i)
      EXPECT_NEAR(strided.values[i], plain.values[i], 1e-14 * (plain.values[i] + 1)) << i;
    for (int a = 0; a < 4; ++a) {
      for (std::size_t k = 0; k < plain.unit[a].size(); ++k)
        ASSERT_NEAR(strided.unit[a][k], plain.unit[a][k], 1e-15 * (std::fabs(plain.unit[a][k]) + 1))
            << threads << " " << a << " " << k;
    }
  }
}

TEST(KlWithGradients, InputRules) {
  const DiagBatch<double> p{3, 2, DiagParam::logvar, std::vector<double>(6, 0.0),
                            std::vector<double>(6, 0.0)};
  const Gaussians<double> pg(p.view());
  std::vector<double> out3(3), out2(2), six(6), five(5);
  const Gradients<double> ok{six, six};
  expect_invalid([&] { kl_with_gradients(pg, pg, std::span<double>(out2), ok, ok); },
                 {"[kl]", "out has 2 elements, expected 3"});
  expect_invalid(
      [&] {
        kl_with_gradients(pg, pg, std::span<double>(out3), Gradients<double>{five, six}, ok);
      },
      {"[kl]", "p.mean", "5 elements, expected 6"});
  expect_invalid(
      [&] {
        kl_standard_normal_with_gradients(pg, std::span<double>(out3),
                                          Gradients<double>{six, five});
      },
      {"[kl_standard_normal]", "p.scale"});
  // The forward's rules and messages.
  DiagBatch<double> bad = p;
  bad.scale[3] = 800;  // a logvar past the variances' range
  expect_invalid(
      [&] {
        kl_with_gradients(Gaussians<double>(bad.view()), pg, std::span<double>(out3), ok, ok);
      },
      {"[kl]", "800"});
  // A side of one row takes every pair's gradients, and other families.
  const DiagBatch<double> one{1, 2, DiagParam::logvar, {0.0, 0.0}, {0.0, 0.0}};
  std::vector<double> two(2);
  expect_invalid(
      [&] {
        kl_with_gradients(pg, Gaussians<double>(one.view()), std::span<double>(out3), ok,
                          Gradients<double>{two, two});
      },
      {"[kl]", "the gradient of q.mean has 2 elements, expected 6"});
  FullBatch<double> tril{3, 2, FullParam::scale_tril, std::vector<double>(6, 0.0),
                         std::vector<double>(12, 0.0)};
  for (std::int64_t i = 0; i < 3; ++i)
    tril.scale[i * 4] = tril.scale[i * 4 + 3] = 1;
  expect_invalid(
      [&] {
        kl_standard_normal_with_gradients(Gaussians<double>(tril.view()), std::span<double>(out3),
                                          {});
      },
      {"[kl_standard_normal]", "diagonal batches"});
  // Nothing is written when an input is rejected.
  std::vector<double> untouched(6, -7.0), values(3, -7.0);
  EXPECT_THROW(kl_with_gradients(Gaussians<double>(bad.view()), pg, std::span<double>(values),
                                 Gradients<double>{untouched, untouched}, {}),
               std::invalid_argument);
  EXPECT_EQ(untouched, std::vector<double>(6, -7.0));
  EXPECT_EQ(values, std::vector<double>(3, -7.0));
  // scale_rows: whole rows of grad, and dst as unit.
  std::vector<double> g3(3, 1.0), g4(4, 1.0);
  expect_invalid(
      [&] {
        scale_rows(std::span<const double>(six), std::span<const double>(g4),
                   std::span<double>(six));
      },
      {"[scale_rows]", "unit has 6 elements, not rows of grad's 4"});
  expect_invalid(
      [&] {
        scale_rows(std::span<const double>(six), std::span<const double>(g3),
                   std::span<double>(five));
      },
      {"[scale_rows]", "dst has 5 elements, expected 6"});
  expect_invalid([&] { scale_rows(std::span<const double>(g4), std::span<double>(six)); },
                 {"[scale_rows]", "rows has 6 elements, not rows of grad's 4"});
  expect_invalid([&] { scale_rows(std::span<const double>(), std::span<double>(six)); },
                 {"[scale_rows]", "rows has 6 elements, not rows of grad's 0"});
  // sum_scaled_rows: grad's rows of dst's size.
  expect_invalid(
      [&] {
        sum_scaled_rows(std::span<const double>(six), std::span<const double>(g4),
                        std::span<double>(two));
      },
      {"[sum_scaled_rows]", "unit has 6 elements, not 4 rows (grad) of 2 (dst)"});
  // Empty batches: nothing to do; a side of one row paired with no rows has gradient 0.
  const DiagBatch<float> empty{0, 4, DiagParam::logvar, {}, {}};
  kl_standard_normal_with_gradients(Gaussians<float>(empty.view()), std::span<float>(),
                                    Gradients<float>{});
  scale_rows(std::span<const double>(), std::span<const float>(), std::span<float>());
  scale_rows(std::span<const float>(), std::span<float>());
  std::vector<float> zero(4, -7.0f);
  sum_scaled_rows(std::span<const double>(), std::span<const float>(), std::span<float>(zero));
  EXPECT_EQ(zero, std::vector<float>(4, 0.0f));
}

}  // namespace
}  // namespace gausskl::test
