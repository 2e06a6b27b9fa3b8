// The row-wise diagonal kernel of every compiled Highway target, and its scalar reference,
// against the long-double reference (random and adversarial data, near-duplicates, p = q; every
// parameterization on each side and q = N(0, I); float and double input) and against each other;
// strided and broadcast input; scales at the ends of the accepted range.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/rowwise/ukr_diag.hpp"
#include "hwy/tests/hwy_gtest.h"
#include "support/batches.hpp"
#include "support/generators.hpp"
#include "support/oracle.hpp"

namespace gausskl::cpu {
namespace {

using test::Data;
using test::DiagBatch;
using test::DiagSpec;
using test::Rng;

constexpr DiagParam kParams[] = {DiagParam::stddev, DiagParam::var, DiagParam::logvar,
                                 DiagParam::precision};

// Both the kernel and the reference compute in double whatever the input, so both meet the
// float64 bar (1e-12) against the long-double reference for float input too; the kernel and
// the reference agree closer still.
constexpr double kBar = 1e-12;
constexpr double kAgreement = 1e-13;

template <class T>
std::vector<double> run(RowwiseDiagFn<T> fn, const DiagGaussians<T>& p, const DiagGaussians<T>* q,
                        std::int64_t n) {
  std::vector<double> out(static_cast<std::size_t>(n), -1.0);
  // Two calls over a split of the rows: results must not depend on it.
  fn(p, q, 0, n / 3, out.data());
  fn(p, q, n / 3, n, out.data() + n / 3);
  return out;
}

// The long-double reference of the pair named `key`, computed once per key: every target's test
// sees the same seeded data, and at D = 1024 the reference (dense, O(D^2) per row) dominates.
template <class T>
const std::vector<long double>& reference(const DiagGaussians<T>& p, const DiagGaussians<T>* q,
                                          const std::string& key) {
  static std::map<std::string, std::vector<long double>> cache;
  auto [it, added] = cache.try_emplace(key + (std::is_same_v<T, float> ? " f32" : " f64"));
  if (added) {
    it->second = q ? test::reference_kl(Gaussians<T>(p), Gaussians<T>(*q))
                   : test::reference_standard_normal(Gaussians<T>(p));
  }
  return it->second;
}

// The kernel and the reference on one pair of batches (q == nullptr: N(0, I)); `key` names the
// data, `target` the kernel.
template <class T>
void check(const DiagGaussians<T>& p, const DiagGaussians<T>* q, bool exact_zero,
           const std::string& key, const std::string& target = "") {
  const std::string label = target + " " + key;
  const std::int64_t n =
      q ? test::broadcast_rows(p.mean.shape[0], q->mean.shape[0]) : p.mean.shape[0];
  const std::vector<long double>& ref = reference(p, q, key);
  const std::vector<double> got = run<T>(&rowwise_diag<T>, p, q, n);
  const std::vector<double> scalar = run<T>(&rowwise_diag_ref<T>, p, q, n);
  const double error =
      test::max_error(std::span<const double>(got), std::span<const long double>(ref));
  const double ref_error =
      test::max_error(std::span<const double>(scalar), std::span<const long double>(ref));
  test::record_error("rowwise_diag kernel", "row-wise",
                     std::is_same_v<T, float> ? "f32 input" : "f64 input", error);
  EXPECT_LE(error, kBar) << label;
  EXPECT_LE(ref_error, kBar) << label << " (scalar reference)";
  EXPECT_LE(test::max_difference(got, scalar), kAgreement) << label;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_GE(got[i], 0.0) << label << " row " << i;
    if (exact_zero) {
      ASSERT_EQ(got[i], 0.0) << label << " row " << i;
    }
  }
}

// Every parameterization of p against N(0, I) and every one of q (only p's own when
// !all_pairs).
template <class T>
void check_all(Rng& rng, std::int64_t n, std::int64_t d, const std::string& target,
               bool all_pairs = true) {
  for (const Data data : test::all_data()) {
    const auto [ps, qs] =
        test::make_specs(rng, data, test::Family::diag, test::Family::diag, n, n, d);
    for (const DiagParam pp : kParams) {
      const DiagBatch<T> p = test::make_diag<T>(std::get<DiagSpec>(ps), pp);
      const std::string base = test::name(data) + " N " + std::to_string(n) + " D " +
                               std::to_string(d) + " p " + param_name(pp);
      check<T>(p.view(), nullptr, false, base + " q N(0, I)", target);
      for (const DiagParam qp : kParams) {
        if (!all_pairs && qp != pp) continue;
        const DiagBatch<T> q = test::make_diag<T>(std::get<DiagSpec>(qs), qp);
        const DiagGaussians<T> qv = q.view();
        check<T>(p.view(), &qv, data == Data::identical && pp == qp, base + " q " + param_name(qp),
                 target);
      }
    }
  }
}

template <class T>
void check_strided_and_broadcast(Rng& rng) {
  for (const std::int64_t d : {1, 3, 17, 300}) {
    const auto [ps, qs] =
        test::make_specs(rng, Data::adversarial, test::Family::diag, test::Family::diag, 5, 5, d);
    for (const DiagParam pp : kParams)
      for (const DiagParam qp : kParams) {
        const std::string label =
            "D " + std::to_string(d) + " p " + param_name(pp) + " q " + param_name(qp);
        const DiagBatch<T> p = test::make_diag<T>(std::get<DiagSpec>(ps), pp);
        const DiagBatch<T> q = test::make_diag<T>(std::get<DiagSpec>(qs), qp);
        std::vector<T> s[4];
        const DiagGaussians<T> pv = p.view(), qv = q.view();
        const DiagGaussians<T> p_s{test::restrided(pv.mean, s[0]), test::restrided(pv.scale, s[1]),
                                   pp};
        const DiagGaussians<T> q_s{test::restrided(qv.mean, s[2]), test::restrided(qv.scale, s[3]),
                                   qp};
        check<T>(p_s, &q_s, false, label + " strided");
        // Same bits as contiguous: every h lands in the same lane.
        EXPECT_EQ(run<T>(&rowwise_diag<T>, p_s, &q_s, 5), run<T>(&rowwise_diag<T>, pv, &qv, 5))
            << label;
        EXPECT_EQ(run<T>(&rowwise_diag<T>, p_s, nullptr, 5),
                  run<T>(&rowwise_diag<T>, pv, nullptr, 5))
            << label;
        // N = 1 on either side, and stride 0 (one row seen as five).
        DiagGaussians<T> p1 = pv, q1 = qv, q0 = qv;
        p1.mean.shape[0] = p1.scale.shape[0] = 1;
        q1.mean.shape[0] = q1.scale.shape[0] = 1;
        q0.mean.strides[0] = q0.scale.strides[0] = 0;
        check<T>(p1, &qv, false, label + " p N = 1");
        check<T>(pv, &q1, false, label + " q N = 1");
        EXPECT_EQ(run<T>(&rowwise_diag<T>, pv, &q1, 5), run<T>(&rowwise_diag<T>, pv, &q0, 5))
            << label;
      }
  }
}

class RowwiseDiag : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(RowwiseDiag);

TEST_P(RowwiseDiag, ChosenTargetIsTheForcedOne) {
  EXPECT_STREQ(rowwise_diag_target(), hwy::TargetName(GetParam()));
}

TEST_P(RowwiseDiag, AllParamsAllDataAgainstReference) {
  Rng rng(61);
  const std::string target = hwy::TargetName(GetParam());
  for (const std::int64_t d : {1, 3, 17, 256}) {
    check_all<float>(rng, 4, d, target);
    check_all<double>(rng, 4, d, target);
  }
  // The dense long-double reference costs O(D^2) a row: at D = 1024, one row and p's own
  // parameterization for q (the mixed pairs run at D = 256).
  check_all<float>(rng, 1, 1024, target, false);
  check_all<double>(rng, 1, 1024, target, false);
}

TEST_P(RowwiseDiag, StridedAndBroadcastInput) {
  Rng rng(62);
  check_strided_and_broadcast<float>(rng);
  check_strided_and_broadcast<double>(rng);
}

// Rows are computed in groups of a vector's lanes (short rows two at a time) and their lane sums
// reduced together: every row must come out with the same bits whether it is computed in a group
// of full rows, in a short group, or alone, and within the bar of the reference.
template <class T>
void check_grouping(Rng& rng, const std::string& target) {
  for (const std::int64_t d : {1, 7, 32, 64, 65, 100}) {
    const std::int64_t n = 37;
    const auto [ps, qs] =
        test::make_specs(rng, Data::adversarial, test::Family::diag, test::Family::diag, n, n, d);
    for (const DiagParam pp : kParams) {
      const DiagBatch<T> p = test::make_diag<T>(std::get<DiagSpec>(ps), pp);
      for (const DiagParam qp : kParams) {
        const DiagBatch<T> q = test::make_diag<T>(std::get<DiagSpec>(qs), qp);
        const DiagGaussians<T> qv = q.view();
        for (const DiagGaussians<T>* qq : {static_cast<const DiagGaussians<T>*>(nullptr), &qv}) {
          if (!qq && qp != pp) continue;
          const std::string label = target + " D " + std::to_string(d) + " p " + param_name(pp) +
                                    " q " + (qq ? param_name(qp) : "N(0, I)");
          std::vector<double> all(static_cast<std::size_t>(n)), alone(all.size());
          rowwise_diag<T>(p.view(), qq, 0, n, all.data());
          for (std::int64_t i = 0; i < n; ++i)
            rowwise_diag<T>(p.view(), qq, i, i + 1, alone.data() + i);
          EXPECT_EQ(all, alone) << label;
          check<T>(p.view(), qq, false,
                   "grouping D " + std::to_string(d) + " " + param_name(pp) + " " +
                       (qq ? param_name(qp) : "N(0, I)"),
                   target);
        }
      }
    }
  }
}

TEST_P(RowwiseDiag, SameBitsAloneOrInGroups) {
  Rng rng(63);
  const std::string target = hwy::TargetName(GetParam());
  check_grouping<float>(rng, target);
  check_grouping<double>(rng, target);
}

// Variances at the ends of the accepted range [1e-300, 1e300]: log ratios up to |r| ~ 1382
// (past the vector Expm1's range on the positive side, where the kernel goes scalar), and var or
// precision ratios that leave the double range (where it goes back to one Log per side).
TEST_P(RowwiseDiag, ExtremeScales) {
  const std::int64_t d = 9;
  const std::vector<double> mean_p(d, 1.0), mean_q(d, 0.5);
  for (const double vq : {1e300, 1e-300, 1.0}) {
    std::vector<double> vp = {1e-300, 1e300, 1e-200, 1e100, 2.0, 1e-3, 1.0, 7.0, 1e-300};
    std::vector<double> lp(d), lq(d);
    if (vq == 1.0) vp[1] = std::exp(705.0), vp[3] = 1e200;  // r = 705: finite, scalar fallback
    for (const DiagParam param : kParams) {
      const auto emit = [&](const std::vector<double>& v) {
        std::vector<double> x(v.size());
        for (std::size_t h = 0; h < v.size(); ++h) {
          switch (param) {
            case DiagParam::stddev:
              x[h] = std::sqrt(v[h]);
              break;
            case DiagParam::var:
              x[h] = v[h];
              break;
            case DiagParam::logvar:
              x[h] = std::log(v[h]);
              break;
            case DiagParam::precision:
              x[h] = 1 / v[h];
              break;
          }
        }
        return x;
      };
      const std::vector<double> sp = emit(vp), sq = emit(std::vector<double>(d, vq));
      const DiagBatch<double> p{1, d, param, mean_p, sp}, q{1, d, param, mean_q, sq};
      const DiagGaussians<double> qv = q.view();
      const std::string label = "var_q " + std::to_string(vq) + " " + param_name(param);
      const std::vector<long double> ref =
          test::reference_kl(Gaussians<double>(p.view()), Gaussians<double>(qv));
      if (!std::isfinite(static_cast<double>(ref[0]))) {
        // Beyond double: both the kernel and the reference give inf.
        EXPECT_EQ(run<double>(&rowwise_diag<double>, p.view(), &qv, 1)[0], INFINITY) << label;
        EXPECT_EQ(run<double>(&rowwise_diag_ref<double>, p.view(), &qv, 1)[0], INFINITY) << label;
        continue;
      }
      check<double>(p.view(), &qv, false, label);
    }
  }
}

}  // namespace
}  // namespace gausskl::cpu
