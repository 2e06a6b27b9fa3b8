// The row-wise diagonal backward kernel of every compiled Highway target against the long-double
// gradient oracle (support/gradient_oracle.hpp): every parameterization on each side and
// q = N(0, I); random and adversarial data, near-duplicates, p = q; float and double; strided
// and broadcast input; sums for a broadcast side; wanted and unwanted gradients; variances at the
// ends of the accepted range.
#include "cpu/rowwise_diag_backward.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
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

std::string param_name(DiagParam p) {
  constexpr const char* names[] = {"std", "var", "logvar", "precision"};
  return names[static_cast<int>(p)];
}

// The kernel's gradients of one pair of batches, converted to T: sums for a side with one row
// broadcast over n != 1 rows, rows otherwise; computed in two calls over a split of the rows.
template <class T>
struct Run {
  std::vector<T> p_mean, p_scale, q_mean, q_scale;
};

template <class T>
Run<T> run(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t n,
           const std::vector<T>& grad, bool want_p = true, bool want_q = true) {
  const std::int64_t d = p.mean.shape[1];
  Run<T> out;
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
  const Run<T> got = run(p, q, n, grad);
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
      const std::string key = test::name(data) + " D " + std::to_string(d) + " p " + param_name(pp);
      check<T>(p.view(), nullptr, true, false, key + " q N(0, I)", target);
      for (const DiagParam qp : kParams) {
        const DiagBatch<T> q = test::make_diag<T>(std::get<DiagSpec>(qs), qp);
        const DiagGaussians<T> qv = q.view();
        check<T>(p.view(), &qv, pp == qp, data == Data::identical && pp == qp,
                 key + " q " + param_name(qp), target);
      }
    }
  }
}

class RowwiseDiagBackward : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(RowwiseDiagBackward);

TEST_P(RowwiseDiagBackward, ChosenTargetIsTheForcedOne) {
  EXPECT_STREQ(rowwise_diag_backward_target(), hwy::TargetName(GetParam()));
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
