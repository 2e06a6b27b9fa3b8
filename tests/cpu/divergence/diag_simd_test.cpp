// The row-wise SIMD kernel of the kinds other than KL (divergence/diag_simd.hpp), on every
// compiled Highway target, against the long-double reference and the scalar form (random and
// adversarial data, near-duplicates, p = q; every pairing of parameterizations; float and double
// input); renyi's failures where the scalar form finds them; strided and broadcast input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/divergence/diag.hpp"
#include "cpu/divergence/diag_simd.hpp"
#include "hwy/tests/hwy_gtest.h"
#include "support/batches.hpp"
#include "support/generators.hpp"
#include "support/kinds.hpp"
#include "support/oracle.hpp"

namespace gausskl::cpu {
namespace {

using test::Data;
using test::DiagBatch;
using test::DiagSpec;
using test::Kind;
using test::Rng;

constexpr DiagParam kParams[] = {DiagParam::stddev, DiagParam::var, DiagParam::logvar,
                                 DiagParam::precision};

// The float64 bar against the long-double reference (|got - ref| <= 1e-12 (|ref| + 1)), met by
// the scalar form too; the scalar form closer still, and on near-duplicates (values down to
// 1e-20, where the bar says nothing) relative to the value itself: neither form cancels.
constexpr double kBar = 1e-12;
constexpr double kAgreement = 1e-13;
constexpr double kRelative = 1e-12;

struct Rows {
  std::vector<double> values;
  std::int64_t bad = -1, dim = -1;
  double value = 0;
};

template <class T>
Rows run(bool simd, const DiagGaussians<T>& p, const DiagGaussians<T>& q, const Kind& k,
         std::int64_t n) {
  DivergenceConfig config;
  config.kind = k.kind;
  config.alpha = k.alpha;
  Rows r;
  r.values.assign(static_cast<std::size_t>(n), -1.0);
  // Two calls over a split of the rows: results must not depend on it.
  const std::int64_t split = n / 3;
  const auto call = simd ? &divergence_diag_rows<T> : &divergence_diag_rows_ref<T>;
  r.bad = call(p, q, config, 0, split, r.values.data(), &r.dim, &r.value);
  if (r.bad < 0) r.bad = call(p, q, config, split, n, r.values.data() + split, &r.dim, &r.value);
  return r;
}

template <class T>
void check(const DiagGaussians<T>& p, const DiagGaussians<T>& q, const Kind& k, bool exact_zero,
           bool near_duplicate, const std::string& label) {
  const std::int64_t n = test::broadcast_rows(p.mean.shape[0], q.mean.shape[0]);
  const Rows got = run(true, p, q, k, n), scalar = run(false, p, q, k, n);
  ASSERT_EQ(got.bad, scalar.bad) << label;
  if (scalar.bad >= 0) {  // renyi, alpha > 1: the scalar form's failure, the same dimension
    EXPECT_EQ(got.dim, scalar.dim) << label;
    EXPECT_EQ(got.value, scalar.value) << label;
    return;
  }
  const std::vector<long double> ref =
      test::reference_divergence(k, Gaussians<T>(p), Gaussians<T>(q));
  const double error =
      test::max_error(std::span<const double>(got.values), std::span<const long double>(ref));
  test::record_error("divergence_diag_rows_simd", test::name(k),
                     std::is_same_v<T, float> ? "f32 input" : "f64 input", error);
  EXPECT_LE(error, kBar) << label;
  EXPECT_LE(test::max_difference(got.values, scalar.values), kAgreement) << label;
  for (std::size_t i = 0; i < got.values.size(); ++i) {
    ASSERT_GE(got.values[i], 0.0) << label << " row " << i;
    if (exact_zero) {
      ASSERT_EQ(got.values[i], 0.0) << label << " row " << i;
    }
    if (near_duplicate) {
      const double diff = std::abs(got.values[i] - scalar.values[i]);
      const double rel = diff == 0 ? 0.0 : diff / scalar.values[i];
      EXPECT_LE(rel, kRelative) << label << " row " << i << " got " << got.values[i] << " scalar "
                                << scalar.values[i];
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
      for (const DiagParam qp : kParams) {
        const DiagBatch<T> q = test::make_diag<T>(std::get<DiagSpec>(qs), qp);
        for (const Kind& k : test::kinds_but_kl()) {
          const std::string label = target + " " + test::name(k) + " " + test::name(data) + " D " +
                                    std::to_string(d) + " p " + param_name(pp) + " q " +
                                    param_name(qp);
          const bool near = data == Data::near_duplicate_1e4 || data == Data::near_duplicate_1e8;
          check<T>(p.view(), q.view(), k, data == Data::identical && pp == qp, near && pp == qp,
                   label);
        }
      }
    }
  }
}

class DiagSimd : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(DiagSimd);

TEST_P(DiagSimd, ChosenTargetIsTheForcedOne) {
  EXPECT_STREQ(divergence_diag_simd_target(), hwy::TargetName(GetParam()));
}

TEST_P(DiagSimd, AllKindsAllParamsAgainstReference) {
  Rng rng(71);
  const std::string target = hwy::TargetName(GetParam());
  for (const std::int64_t d : {1, 3, 17, 64}) {
    check_all<float>(rng, 4, d, target);
    check_all<double>(rng, 4, d, target);
  }
}

TEST_P(DiagSimd, RenyiFailureAsTheScalarForm) {
  const auto [p, q] = test::renyi3_infinite_pair();
  const Kind k{Divergence::renyi, 3.0};
  const Rows got = run(true, p.view(), q.view(), k, 2);
  EXPECT_EQ(got.bad, 1);
  EXPECT_EQ(got.dim, 2);
  EXPECT_EQ(got.value, run(false, p.view(), q.view(), k, 2).value);
}

TEST_P(DiagSimd, StridedAndBroadcastInput) {
  Rng rng(72);
  for (const std::int64_t d : {1, 5, 300}) {
    const auto [ps, qs] =
        test::make_specs(rng, Data::adversarial, test::Family::diag, test::Family::diag, 5, 5, d);
    for (const DiagParam pp : kParams) {
      for (const DiagParam qp : kParams) {
        const DiagBatch<double> p = test::make_diag<double>(std::get<DiagSpec>(ps), pp);
        const DiagBatch<double> q = test::make_diag<double>(std::get<DiagSpec>(qs), qp);
        std::vector<double> s[4];
        const DiagGaussians<double> pv = p.view(), qv = q.view();
        const DiagGaussians<double> p_s{test::restrided(pv.mean, s[0]),
                                        test::restrided(pv.scale, s[1]), pp};
        const DiagGaussians<double> q_s{test::restrided(qv.mean, s[2]),
                                        test::restrided(qv.scale, s[3]), qp};
        DiagGaussians<double> q1 = qv;
        q1.mean.shape[0] = q1.scale.shape[0] = 1;
        for (const Kind& k : test::kinds_but_kl()) {
          const std::string label = test::name(k) + " D " + std::to_string(d) + " p " +
                                    param_name(pp) + " q " + param_name(qp);
          const Rows contiguous = run(true, pv, qv, k, 5), strided = run(true, p_s, q_s, k, 5);
          // Same bits: every h lands in the same lane.
          EXPECT_EQ(strided.values, contiguous.values) << label;
          EXPECT_EQ(strided.bad, contiguous.bad) << label;
          check<double>(pv, q1, k, false, false, label + " q N = 1");
        }
      }
    }
  }
}

}  // namespace
}  // namespace gausskl::cpu
