// The row-wise diagonal backward kernel of every compiled Highway target against the long-double
// gradient oracle (support/gradient_oracle.hpp): every parameterization on each side and
// q = N(0, I); random and adversarial data, near-duplicates, p = q; float and double; strided
// and broadcast input; sums for a broadcast side; wanted and unwanted gradients; variances at the
// ends of the accepted range.
#include "cpu/rowwise/ukr_diag_backward.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "support/batches.hpp"
#include "support/generators.hpp"
#include "support/gradient_oracle.hpp"
#include "support/oracle.hpp"

namespace gausskl::cpu {
namespace {

using test::Data;
using test::DiagBatch;
using test::DiagSpec;
using test::Measure;
using test::Rng;

constexpr DiagParam kParams[] = {DiagParam::stddev, DiagParam::var, DiagParam::logvar,
                                 DiagParam::precision};

// The bars, largest error per measure (gradient_oracle.hpp) for T = double outputs. The kernel
// computes in double, so an entry carries a few roundings: ~1e-16 against its terms, and, in the
// difference forms of alike parameterizations, against its own size plus the near terms (which
// only the q side's E + Q, a sum of a signed and a positive term, has). 1e-14 leaves room for
// the ~30 ulp of Highway's Exp, Expm1 and the reciprocals. Float outputs add their rounding,
// 2^-24 = 6e-8 relative.
template <class T>
constexpr double bar() {
  return std::is_same_v<T, double> ? 1e-14 : 1.2e-7;
}

std::string param_text(DiagParam p) {  // (a std::string, to build labels with +)
  return param_name(p);
}

// The kernel's gradients of one pair of batches, converted to T: sums for a side with one row
// broadcast over n != 1 rows, rows otherwise; computed in two calls over a split of the rows.
template <class T>
struct Got {
  std::vector<T> p_mean, p_scale, q_mean, q_scale;
};

template <class T>
Got<T> run(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t n,
           const std::vector<T>& grad, bool want_p = true, bool want_q = true) {
  const std::int64_t d = p.mean.shape[1];
  Got<T> out;
  std::vector<double> sums[4];
  const auto sink = [&](std::vector<T>& dst, std::vector<double>& sum, std::int64_t rows,
                        bool wanted) {
    GradSink<T> s;
    if (!wanted) return s;
    dst.assign(static_cast<std::size_t>(rows * d), T(-7));  // -7: no entry may keep it
    if (rows == 1 && n != 1) {
      sum.assign(static_cast<std::size_t>(d), 0.0);
      s.sum = sum.data();
    } else {
      s.rows = dst.data();
    }
    return s;
  };
  const SideSinks<T> sp{sink(out.p_mean, sums[0], p.mean.shape[0], want_p),
                        sink(out.p_scale, sums[1], p.mean.shape[0], want_p)};
  SideSinks<T> sq;
  if (q) {
    sq = {sink(out.q_mean, sums[2], q->mean.shape[0], want_q),
          sink(out.q_scale, sums[3], q->mean.shape[0], want_q)};
  }
  rowwise_diag_backward(p, q, 0, n / 3, grad.data(), sp, sq);
  rowwise_diag_backward(p, q, n / 3, n, grad.data(), sp, sq);
  std::vector<T>* dsts[4] = {&out.p_mean, &out.p_scale, &out.q_mean, &out.q_scale};
  for (int k = 0; k < 4; ++k) {
    if (!sums[k].empty())
      std::transform(sums[k].begin(), sums[k].end(), dsts[k]->begin(),
                     [](double x) { return static_cast<T>(x); });
  }
  return out;
}

// Upstream gradients: varied signs and sizes, one exact 0.
// The oracle of the pair named `key`, computed once: every target's test sees the same seeded
// data, and the long-double oracle costs more than the kernels.
template <class T>
const test::RefGradients& oracle(const Gaussians<T>& p, const Gaussians<T>* q,
                                 const std::vector<T>& grad, const std::string& key) {
  static std::map<std::string, test::RefGradients> cache;
  auto [it, added] = cache.try_emplace(key + (std::is_same_v<T, float> ? " f32" : " f64"));
  if (added) it->second = test::reference_backward(p, q, std::span<const T>(grad));
  return it->second;
}

template <class T>
std::vector<T> upstream(std::int64_t n) {
  std::vector<T> g(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    g[i] = static_cast<T>(i == 1 ? 0.0 : (i % 2 ? -1.0 : 1.0) * (0.25 + 0.5 * i));
  return g;
}

// Every wanted array against the oracle, in the measure against terms and, where the pair is
// given alike (difference forms), against near as well.
template <class T>
void check(const DiagGaussians<T>& p, const DiagGaussians<T>* q, bool alike, bool exact_zero,
           const std::string& key, const std::string& target) {
  const std::string label = target + " " + key;
  const std::int64_t n =
      q ? test::broadcast_rows(p.mean.shape[0], q->mean.shape[0]) : p.mean.shape[0];
  const std::vector<T> grad = upstream<T>(n);
  const Gaussians<T> pg(p);
  const std::optional<Gaussians<T>> qg = q ? std::optional<Gaussians<T>>(*q) : std::nullopt;
  const test::RefGradients& ref = oracle(pg, qg ? &*qg : nullptr, grad, key);
  const Got<T> got = run(p, q, n, grad);
  const std::pair<const std::vector<T>*, const test::RefArray*> arrays[] = {
      {&got.p_mean, &ref.p.mean},
      {&got.p_scale, &ref.p.scale},
      {&got.q_mean, &ref.q.mean},
      {&got.q_scale, &ref.q.scale}};
  const char* names[] = {"p.mean", "p.scale", "q.mean", "q.scale"};
  const std::string column = std::is_same_v<T, float> ? "f32" : "f64";
  for (int k = 0; k < (q ? 4 : 2); ++k) {
    const std::span<const T> values(*arrays[k].first);
    const double error = test::gradient_error(values, *arrays[k].second, Measure::terms);
    test::record_gradient_error("rowwise_diag_backward", Measure::terms, names[k], column, error);
    EXPECT_LE(error, bar<T>()) << label << " " << names[k];
    if (alike) {
      const double near = test::gradient_error(values, *arrays[k].second, Measure::near);
      test::record_gradient_error("rowwise_diag_backward", Measure::near, names[k], column, near);
      EXPECT_LE(near, bar<T>()) << label << " " << names[k] << " (near)";
    }
    if (exact_zero) {
      for (const T x : values)
        ASSERT_EQ(x, T(0)) << label << " " << names[k];
    }
  }
}

template <class T>
void check_all(Rng& rng, std::int64_t n, std::int64_t d, const std::string& target) {
  for (const Data data : test::all_data()) {
    const auto [ps, qs] =
        test::make_specs(rng, data, test::Family::diag, test::Family::diag, n, n, d);
    for (const DiagParam pp : kParams) {
      const DiagBatch<T> p = test::make_diag<T>(std::get<DiagSpec>(ps), pp);
      const std::string key = test::name(data) + " D " + std::to_string(d) + " p " + param_text(pp);
      check<T>(p.view(), nullptr, true, false, key + " q N(0, I)", target);
      for (const DiagParam qp : kParams) {
        const DiagBatch<T> q = test::make_diag<T>(std::get<DiagSpec>(qs), qp);
        const DiagGaussians<T> qv = q.view();
        check<T>(p.view(), &qv, pp == qp, data == Data::identical && pp == qp,
                 key + " q " + param_text(qp), target);
      }
    }
  }
}

class RowwiseDiagBackward : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(RowwiseDiagBackward);

TEST_P(RowwiseDiagBackward, ChosenTargetIsTheForcedOne) {
  EXPECT_STREQ(rowwise_diag_backward_target(), hwy::TargetName(GetParam()));
}

// Strided views (the first axis backwards, padding between entries) give the same bits as
// contiguous ones; a side with one row receives the sum over the rows; a row broadcast by stride
// 0 gives each row the gradient of its own pair.
template <class T>
void check_strided_and_broadcast(Rng& rng, const std::string& target) {
  for (const std::int64_t d : {1, 5, 17, 40}) {
    for (const DiagParam pp : kParams) {
      const DiagParam qp = kParams[(static_cast<int>(pp) + d) % 4];
      const std::string key = "D " + std::to_string(d) + " p " + param_text(pp) + " q " +
                              param_text(qp) + (std::is_same_v<T, float> ? " f32" : " f64");
      const auto [ps, qs] =
          test::make_specs(rng, Data::adversarial, test::Family::diag, test::Family::diag, 5, 5, d);
      const DiagBatch<T> p = test::make_diag<T>(std::get<DiagSpec>(ps), pp);
      const DiagBatch<T> q = test::make_diag<T>(std::get<DiagSpec>(qs), qp);
      const DiagGaussians<T> pv = p.view(), qv = q.view();
      std::vector<T> s[4];
      const DiagGaussians<T> p_s{test::restrided(pv.mean, s[0]), test::restrided(pv.scale, s[1]),
                                 pp};
      const DiagGaussians<T> q_s{test::restrided(qv.mean, s[2]), test::restrided(qv.scale, s[3]),
                                 qp};
      const std::vector<T> grad = upstream<T>(5);
      const Got<T> contiguous = run(pv, &qv, 5, grad), strided = run(p_s, &q_s, 5, grad);
      EXPECT_EQ(strided.p_mean, contiguous.p_mean) << target << " " << key;
      EXPECT_EQ(strided.p_scale, contiguous.p_scale) << target << " " << key;
      EXPECT_EQ(strided.q_mean, contiguous.q_mean) << target << " " << key;
      EXPECT_EQ(strided.q_scale, contiguous.q_scale) << target << " " << key;
      EXPECT_EQ(run(p_s, static_cast<const DiagGaussians<T>*>(nullptr), 5, grad).p_scale,
                run(pv, static_cast<const DiagGaussians<T>*>(nullptr), 5, grad).p_scale)
          << target << " " << key;
      // N = 1 on either side: sums, against the oracle.
      DiagGaussians<T> p1 = pv, q1 = qv;
      p1.mean.shape[0] = p1.scale.shape[0] = 1;
      q1.mean.shape[0] = q1.scale.shape[0] = 1;
      check<T>(p1, &qv, pp == qp, false, key + " p N = 1", target);
      check<T>(pv, &q1, pp == qp, false, key + " q N = 1", target);
      // Stride 0: five rows that are one, each with its own gradient row.
      DiagGaussians<T> q0 = qv;
      q0.mean.strides[0] = q0.scale.strides[0] = 0;
      check<T>(pv, &q0, pp == qp, false, key + " q stride 0", target);
    }
  }
}

TEST_P(RowwiseDiagBackward, StridedAndBroadcastInput) {
  Rng rng(82);
  const std::string target = hwy::TargetName(GetParam());
  check_strided_and_broadcast<float>(rng, target);
  check_strided_and_broadcast<double>(rng, target);
}

// A gradient not wanted is not written, and leaves the others' bits as they are.
TEST_P(RowwiseDiagBackward, OnlyWantedGradientsAreWritten) {
  Rng rng(83);
  const auto [ps, qs] =
      test::make_specs(rng, Data::random, test::Family::diag, test::Family::diag, 7, 13, 13);
  for (const DiagParam pp : kParams) {
    for (const DiagParam qp : kParams) {
      const DiagBatch<double> p = test::make_diag<double>(std::get<DiagSpec>(ps), pp);
      const DiagBatch<double> q = test::make_diag<double>(std::get<DiagSpec>(qs), qp);
      const DiagGaussians<double> pv = p.view(), qv = q.view();
      const std::vector<double> grad = upstream<double>(7);
      const Got<double> all = run(pv, &qv, 7, grad);
      const Got<double> p_only = run(pv, &qv, 7, grad, true, false);
      const Got<double> q_only = run(pv, &qv, 7, grad, false, true);
      EXPECT_TRUE(p_only.q_mean.empty() && p_only.q_scale.empty());
      EXPECT_TRUE(q_only.p_mean.empty() && q_only.p_scale.empty());
      EXPECT_EQ(p_only.p_mean, all.p_mean);
      EXPECT_EQ(p_only.p_scale, all.p_scale);
      EXPECT_EQ(q_only.q_mean, all.q_mean);
      EXPECT_EQ(q_only.q_scale, all.q_scale);
    }
  }
  // No sink at all: nothing to write, nothing read from the sinks.
  const DiagBatch<double> p = test::make_diag<double>(std::get<DiagSpec>(ps), DiagParam::var);
  const std::vector<double> grad = upstream<double>(7);
  rowwise_diag_backward<double>(p.view(), nullptr, 0, 7, grad.data(), {}, {});
}

// KL of N(mu, s^2) || N(nu, t^2) in one dimension, mu - nu = 3, s = 2, t = 4:
// KL = (9 / 16 + 4 / 16 - 1 - log(4 / 16)) / 2, so dKL/dmu = 3 / 16 = -dKL/dnu,
// dKL/ds = s / t^2 - 1 / s = -3 / 8 and dKL/dt = -(9 + 4) / 64 + 1 / 4 = 3 / 64; in the other
// parameterizations by the chain rule: d/dv = d/ds / (2 s), d/dlogvar = d/ds s / 2,
// d/dprecision = d/ds (-s^3 / 2).
TEST_P(RowwiseDiagBackward, WorkedByHand) {
  const double ds = -3.0 / 8, dt = 3.0 / 64;
  for (const DiagParam param : kParams) {
    const auto as = [param](double sd) {
      switch (param) {
        case DiagParam::stddev:
          return sd;
        case DiagParam::var:
          return sd * sd;
        case DiagParam::logvar:
          return std::log(sd * sd);
        case DiagParam::precision:
          return 1 / (sd * sd);
      }
      return 0.0;
    };
    const auto chain = [param](double g, double sd) {
      switch (param) {
        case DiagParam::stddev:
          return g;
        case DiagParam::var:
          return g / (2 * sd);
        case DiagParam::logvar:
          return g * sd / 2;
        case DiagParam::precision:
          return g * -sd * sd * sd / 2;
      }
      return 0.0;
    };
    const DiagBatch<double> p{1, 1, param, {4.0}, {as(2.0)}};
    const DiagBatch<double> q{1, 1, param, {1.0}, {as(4.0)}};
    const DiagGaussians<double> qv = q.view();
    const Got<double> got = run(p.view(), &qv, 1, {2.0});  // grad = 2
    const std::string name = param_text(param);
    EXPECT_NEAR(got.p_mean[0], 2 * 3.0 / 16, 1e-15) << name;
    EXPECT_NEAR(got.q_mean[0], -2 * 3.0 / 16, 1e-15) << name;
    EXPECT_NEAR(got.p_scale[0], 2 * chain(ds, 2.0), 1e-14 * std::abs(chain(ds, 2.0))) << name;
    EXPECT_NEAR(got.q_scale[0], 2 * chain(dt, 4.0), 1e-14 * std::abs(chain(dt, 4.0))) << name;
  }
}

// Variances at the ends of the accepted range [1e-300, 1e300]: log ratios up to 1382, past the
// vector expm1's range. In a row whose KL is finite every intermediate is bounded by it
// (E <= 2 KL + |r|), so an entry whose exact value is a finite double comes out finite and
// within the bar, and one that overflows (e^1381 / 2 as a logvar gradient) comes out infinite.
// Rows whose KL overflows may give infinite entries, but never NaN.
TEST_P(RowwiseDiagBackward, ExtremeVariances) {
  const std::vector<double> variances = {1e-300, 1e300, 1e-150, 1e150, 1.0, 2.5e-3};
  const auto n = static_cast<std::int64_t>(variances.size());
  for (const DiagParam pp : kParams) {
    for (const DiagParam qp : kParams) {
      DiagSpec ps{n * n, 1, {}, {}}, qs{n * n, 1, {}, {}};
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          ps.mean.push_back(0.5), ps.stddev.push_back(std::sqrt(variances[i]));
          qs.mean.push_back(-0.25), qs.stddev.push_back(std::sqrt(variances[j]));
        }
      const DiagBatch<double> p = test::make_diag<double>(ps, pp);
      const DiagBatch<double> q = test::make_diag<double>(qs, qp);
      const DiagGaussians<double> qv = q.view();
      const std::vector<double> grad(static_cast<std::size_t>(n * n), 1.0);
      const Gaussians<double> pg(p.view()), qg(qv);
      const test::RefGradients ref =
          test::reference_backward(pg, &qg, std::span<const double>(grad));
      const std::vector<long double> kl = test::reference_kl(pg, qg);
      const Got<double> got = run(p.view(), &qv, n * n, grad);
      const std::string label = std::string(hwy::TargetName(GetParam())) + " p " + param_text(pp) +
                                " q " + param_text(qp);
      const std::pair<const std::vector<double>*, const test::RefArray*> arrays[] = {
          {&got.p_mean, &ref.p.mean},
          {&got.p_scale, &ref.p.scale},
          {&got.q_mean, &ref.q.mean},
          {&got.q_scale, &ref.q.scale}};
      for (const auto& [values, oracle] : arrays) {
        for (std::size_t k = 0; k < values->size(); ++k) {  // D = 1: entry k is row k
          const long double want = oracle->value[k];
          const double x = (*values)[k];
          ASSERT_FALSE(std::isnan(x)) << label << " entry " << k;
          if (kl[k] > std::numeric_limits<double>::max()) continue;
          if (std::fabs(want) > std::numeric_limits<double>::max()) {
            EXPECT_TRUE(std::isinf(x) && (x > 0) == (want > 0)) << label << " entry " << k;
            continue;
          }
          ASSERT_TRUE(std::isfinite(x)) << label << " entry " << k << " want " << double(want);
          // Below double's normal range relative accuracy ends: 1e-14 of the smallest normal.
          const long double floor = pp == qp ? oracle->near[k] : oracle->terms[k];
          const long double slack = 1e-14L * std::numeric_limits<double>::min();
          EXPECT_LE(std::fabs(x - want), 1e-14L * (std::fabs(want) + floor) + slack)
              << label << " entry " << k;
        }
      }
    }
  }
}

TEST_P(RowwiseDiagBackward, AllDataAgainstOracle) {
  Rng rng(81);
  const std::string target = hwy::TargetName(GetParam());
  for (const std::int64_t d : {1, 3, 8, 13, 32, 256}) {
    check_all<float>(rng, 4, d, target);
    check_all<double>(rng, 4, d, target);
  }
}

}  // namespace
}  // namespace gausskl::cpu
