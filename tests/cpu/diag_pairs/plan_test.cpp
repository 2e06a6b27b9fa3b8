// cpu::DiagPairs, the diagonal all-pairs plan: which kernel a tolerance selects, and that every
// entry stays within the tolerance of the long-double reference (test support's oracle), on the
// data kinds of every oracle test.
#include "cpu/diag_pairs/plan.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/plan.hpp"
#include "hwy/tests/hwy_gtest.h"
#include "support/batches.hpp"
#include "support/generators.hpp"
#include "support/oracle.hpp"

namespace gausskl::test {
namespace {

constexpr double kLoose = 1e-5;  // the tolerance that selects the float kernel from D = 1 up

template <class T>
DiagGaussians<T> diag_view(const Batch<T>& batch) {
  return std::get<DiagBatch<T>>(batch.b).view();
}

// The DiagPairs of these inputs with the kernel the plan picks (core/plan.cpp) for `tolerance`
// (0: the default's), finishing to `tolerance` itself.
template <class T>
cpu::DiagPairs make_pairs(const DiagGaussians<T>& p, const DiagGaussians<T>* q, double tolerance,
                          int threads) {
  Options options;
  options.tolerance = tolerance;
  const Gaussians<T> pg(p);
  const std::optional<Gaussians<T>> qg = q ? std::optional<Gaussians<T>>(*q) : std::nullopt;
  const detail::PairsPlan plan = detail::plan_pairs(pg, qg ? &*qg : nullptr, options);
  return cpu::DiagPairs(p, q, tolerance, plan.backend.kernel, threads);
}

// Whether the plan picks the float kernel for float inputs of depth d at `tolerance`.
bool float_kernel_planned(double tolerance, std::int64_t d) {
  const DiagGaussians<float> g{{nullptr, {1, d}, {d, 1}}, {nullptr, {1, d}, {d, 1}}};
  Options options;
  options.tolerance = tolerance;
  return detail::plan_pairs<float>(Gaussians<float>(g), nullptr, options).backend.kernel ==
         cpu::DiagKernelKind::float_kernel;
}

// All entries of the plan in double and in float; the float ones must be the double ones
// rounded (both come from the same kernel and finish).
template <class T>
std::vector<double> all_entries(const cpu::DiagPairs& plan, int threads) {
  std::vector<double> out(static_cast<std::size_t>(plan.rows() * plan.cols()));
  plan.block(0, plan.rows(), out.data(), threads);
  std::vector<float> f(out.size());
  plan.block(0, plan.rows(), f.data(), threads);
  for (std::size_t k = 0; k < out.size(); ++k)
    EXPECT_EQ(f[k], static_cast<float>(out[k])) << "entry " << k;
  return out;
}

// The variance a diagonal scale parameter stands for, in long double.
long double variance(DiagParam param, long double x) {
  switch (param) {
    case DiagParam::stddev:
      return x * x;
    case DiagParam::var:
      return x;
    case DiagParam::logvar:
      return std::exp(x);
    case DiagParam::precision:
      return 1 / x;
  }
  return std::numeric_limits<long double>::quiet_NaN();
}

// KL(p_i || q_j) for all pairs in long double, per dimension (the generic oracle of test support
// is O(D^3) per pair): (mu - nu)^2 / w + r - 1 - log r with r = v / w, each dimension's terms
// summed separately so that near-duplicates keep their digits.
template <class T>
std::vector<long double> diag_reference(const DiagGaussians<T>& p, const DiagGaussians<T>& q) {
  const std::int64_t n = p.mean.shape[0], m = q.mean.shape[0], d = p.mean.shape[1];
  std::vector<long double> ref(static_cast<std::size_t>(n * m));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      long double sum = 0;
      for (std::int64_t h = 0; h < d; ++h) {
        const long double v = variance(p.param, p.scale(i, h));
        const long double w = variance(q.param, q.scale(j, h));
        const long double diff = static_cast<long double>(p.mean(i, h)) - q.mean(j, h);
        const long double log_r = std::log(v) - std::log(w);
        sum += diff * diff / w + (std::expm1(log_r) - log_r);
      }
      ref[static_cast<std::size_t>(i * m + j)] = sum / 2;
    }
  return ref;
}

// max |got - ref| / (|ref| + 1), and that nothing is negative or NaN.
double checked_error(const std::vector<double>& got, const std::vector<long double>& ref) {
  EXPECT_EQ(got.size(), ref.size());
  double worst = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    EXPECT_GE(got[k], 0) << "entry " << k;
    const long double err =
        std::abs(static_cast<long double>(got[k]) - ref[k]) / (std::abs(ref[k]) + 1);
    worst = std::max(worst, std::isnan(got[k]) ? std::numeric_limits<double>::infinity()
                                               : static_cast<double>(err));
  }
  return worst;
}

TEST(DiagPairs, TheLocalReferenceAgreesWithTheGenericOracle) {
  Rng rng(69);
  for (const Data data : all_data()) {
    const auto [ps, qs] = make_specs(rng, data, Family::diag, Family::diag, 4, 4, 6);
    for (const Layout& layout : all_layouts()) {
      if (layout.family != Family::diag) continue;
      const Batch<float> p = make_batch<float>(ps, layout), q = make_batch<float>(qs, layout);
      const std::vector<long double> ref = reference_pairwise(p.view(), q.view());
      const std::vector<long double> local = diag_reference(diag_view(p), diag_view(q));
      for (std::size_t k = 0; k < ref.size(); ++k)
        EXPECT_LE(std::abs(local[k] - ref[k]) / (std::abs(ref[k]) + 1), 1e-15L)
            << name(data) << ", " << name(layout) << ", entry " << k;
    }
  }
}

TEST(DiagPairs, TheDefaultToleranceKeepsTheDoubleKernel) {
  EXPECT_FALSE(float_kernel_planned(1e-7, 1));
  EXPECT_FALSE(float_kernel_planned(1e-6, 256));
  EXPECT_TRUE(float_kernel_planned(kLoose, 1));
  EXPECT_TRUE(float_kernel_planned(kLoose, 4096));
  Rng rng(70);
  const auto [ps, qs] = make_specs(rng, Data::random, Family::diag, Family::diag, 5, 4, 8);
  const Batch<float> p = make_batch<float>(ps, layout_of(Family::diag));
  const Batch<float> q = make_batch<float>(qs, layout_of(Family::diag));
  const DiagGaussians<float> qv = diag_view(q);
  EXPECT_FALSE(make_pairs(diag_view(p), &qv, 1e-7, 1).float_kernel());
  EXPECT_TRUE(make_pairs(diag_view(p), &qv, kLoose, 1).float_kernel());
  // Double inputs never take it: their promise is 1e-12, and rounding them to float would cost
  // digits the caller has.
  const Batch<double> pd = make_batch<double>(ps, layout_of(Family::diag));
  const Batch<double> qd = make_batch<double>(qs, layout_of(Family::diag));
  const DiagGaussians<double> qdv = diag_view(qd);
  EXPECT_FALSE(make_pairs(diag_view(pd), &qdv, kLoose, 1).float_kernel());
}

// Every data kind (random, adversarial: means 1e3 and std 1e-3 .. 1e3, near-duplicates at 1e-4
// and 1e-8, identical), every diagonal parameterization, D up to 1024, q given and q = p: within
// the tolerance, no negatives, no NaN, and exactly 0 on the diagonal when q = p.
TEST(DiagPairs, FloatKernelEntriesAreWithinTheTolerance) {
  Rng rng(71);
  double worst = 0;
  for (const Data data : all_data()) {
    for (const std::int64_t d : {1, 7, 33, 300, 1024}) {
      const std::int64_t n = 9, m = q_derived_from_p(data) ? 9 : 7;
      const auto [ps, qs] = make_specs(rng, data, Family::diag, Family::diag, n, m, d);
      for (const Layout& layout : all_layouts()) {
        if (layout.family != Family::diag) continue;
        SCOPED_TRACE(name(data) + ", D = " + std::to_string(d) + ", " + name(layout));
        const Batch<float> p = make_batch<float>(ps, layout), q = make_batch<float>(qs, layout);
        const DiagGaussians<float> qv = diag_view(q);
        const cpu::DiagPairs plan = make_pairs(diag_view(p), &qv, kLoose, 2);
        EXPECT_TRUE(plan.float_kernel());
        const double error =
            checked_error(all_entries<float>(plan, 2), diag_reference(diag_view(p), qv));
        EXPECT_LE(error, kLoose);
        worst = std::max(worst, error);

        const cpu::DiagPairs self =
            make_pairs(diag_view(p), static_cast<const DiagGaussians<float>*>(nullptr), kLoose, 2);
        const std::vector<double> own = all_entries<float>(self, 2);
        EXPECT_LE(checked_error(own, diag_reference(diag_view(p), diag_view(p))), kLoose);
        for (std::int64_t i = 0; i < n; ++i)
          EXPECT_EQ(own[static_cast<std::size_t>(i * n + i)], 0.0) << "row " << i;
      }
    }
  }
  record_error("pairwise_kl, tolerance 1e-5", "diag/diag", "f32->f64", worst);
}

// A value outside the float kernel's range (here sigma = 1e-7 < 2^-20 in one entry, or a mean
// beyond 2^20) makes that row's pairs the exact form's, within 1e-12 of the reference; the plan
// keeps the float kernel, and every other entry keeps the bits it has without that row's value.
TEST(DiagPairs, ValuesOutOfTheFloatRangeMakeTheirPairsExact) {
  Rng rng(72);
  const auto [ps, qs] = make_specs(rng, Data::random, Family::diag, Family::diag, 6, 5, 40);
  const Batch<float> p0 = make_batch<float>(ps, layout_of(Family::diag));
  const Batch<float> q0 = make_batch<float>(qs, layout_of(Family::diag));
  const DiagGaussians<float> q0v = diag_view(q0);
  const std::vector<double> clean =
      all_entries<float>(make_pairs(diag_view(p0), &q0v, kLoose, 2), 2);
  for (const int change : {0, 1, 2}) {  // sigma on p, sigma on q, a mean on p
    auto specs = std::make_pair(ps, qs);
    DiagSpec& side = std::get<DiagSpec>(change == 1 ? specs.second : specs.first);
    if (change == 2) {
      side.mean[3] = 2e6;
    } else {
      side.stddev[17] = 1e-7;  // row 0
    }
    const Batch<float> p = make_batch<float>(specs.first, layout_of(Family::diag));
    const Batch<float> q = make_batch<float>(specs.second, layout_of(Family::diag));
    const DiagGaussians<float> qv = diag_view(q);
    const cpu::DiagPairs plan = make_pairs(diag_view(p), &qv, kLoose, 2);
    EXPECT_TRUE(plan.float_kernel()) << change;
    const std::vector<double> got = all_entries<float>(plan, 2);
    const std::vector<long double> ref = diag_reference(diag_view(p), qv);
    for (std::int64_t i = 0; i < 6; ++i) {
      for (std::int64_t j = 0; j < 5; ++j) {
        const std::size_t k = static_cast<std::size_t>(i * 5 + j);
        const bool touched = change == 1 ? j == 0 : i == 0;
        if (touched) {
          EXPECT_LE(std::abs(got[k] - static_cast<double>(ref[k])),
                    1e-12 * (std::abs(static_cast<double>(ref[k])) + 1))
              << change << " " << i << " " << j;
        } else {
          EXPECT_EQ(got[k], clean[k]) << change << " " << i << " " << j;
        }
      }
    }
  }
}

// Results do not depend on the thread count on the float kernel either.
TEST(DiagPairs, FloatKernelSameResultsForAnyThreadCount) {
  Rng rng(73);
  const auto [ps, qs] = make_specs(rng, Data::adversarial, Family::diag, Family::diag, 37, 300, 70);
  const Batch<float> p = make_batch<float>(ps, layout_of(Family::diag));
  const Batch<float> q = make_batch<float>(qs, layout_of(Family::diag));
  const DiagGaussians<float> qv = diag_view(q);
  const cpu::DiagPairs plan = make_pairs(diag_view(p), &qv, kLoose, 1);
  ASSERT_TRUE(plan.float_kernel());
  const std::vector<double> one = all_entries<float>(plan, 1);
  for (const int threads : {2, 3, 8})
    EXPECT_EQ(all_entries<float>(plan, threads), one) << threads << " threads";
}

// q = p on the symmetric kernel. The batch: p's rows then q's, so that near-duplicate and
// identical data put both members of each close pair in the one batch.
DiagSpec self_spec(Rng& rng, Data data, std::int64_t n, std::int64_t d) {
  const std::int64_t m = q_derived_from_p(data) ? n : n / 2 + 1;
  auto [ps, qs] = make_specs(rng, data, Family::diag, Family::diag, n, m, d);
  DiagSpec out = std::get<DiagSpec>(ps);
  const DiagSpec& q = std::get<DiagSpec>(qs);
  out.mean.insert(out.mean.end(), q.mean.begin(), q.mean.end());
  out.stddev.insert(out.stddev.end(), q.stddev.begin(), q.stddev.end());
  out.n += q.n;
  return out;
}

// A plan with q = p on the batch (or the batch read through restrided views, which every entry
// must not notice).
template <class T>
struct SelfPlan {
  Batch<T> batch;
  std::vector<T> mean_storage, scale_storage;
  DiagGaussians<T> view;

  SelfPlan(const Spec& spec, const Layout& layout, bool strided)
      : batch(make_batch<T>(spec, layout)), view(diag_view(batch)) {
    if (strided) {
      view.mean = restrided(view.mean, mean_storage);
      view.scale = restrided(view.scale, scale_storage);
    }
  }
  cpu::DiagPairs plan(int threads) const {
    return make_pairs(view, static_cast<const DiagGaussians<T>*>(nullptr), 0, threads);
  }
};

template <class T>
constexpr double kDefault = std::is_same_v<T, float> ? 1e-7 : 1e-13;

class DiagPairsSym : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(DiagPairsSym);

// Every data kind, every parameterization, contiguous and strided, D up to 1024, row counts
// around the tile sizes, float and double inputs at their default tolerance: within it, no
// negatives, no NaN, and exactly 0 on the diagonal.
template <class T>
void check_symmetric_within_tolerance(const char* target) {
  // The long-double reference of each case, computed for the first target and kept for the
  // others (the same seed gives the same cases).
  static std::vector<std::vector<long double>> references;
  std::size_t next_case = 0;
  Rng rng(74);
  double worst = 0;
  for (const Data data : all_data()) {
    for (const auto& [n, d] :
         {std::pair<std::int64_t, std::int64_t>{1, 7}, {5, 1}, {9, 33}, {7, 300}, {4, 1024}}) {
      const DiagSpec spec = self_spec(rng, data, n, d);
      for (const Layout& layout : all_layouts()) {
        if (layout.family != Family::diag) continue;
        for (const bool strided : {false, true}) {
          if (strided && layout.diag != DiagParam::stddev) continue;  // one is enough for strides
          SCOPED_TRACE(std::string(target) + ", " + name(data) + ", D = " + std::to_string(d) +
                       ", " + name(layout) + (strided ? ", strided" : ""));
          const SelfPlan<T> self(spec, layout, strided);
          const cpu::DiagPairs plan = self.plan(2);
          ASSERT_TRUE(plan.symmetric());
          const std::vector<double> got = all_entries<T>(plan, 2);
          if (next_case == references.size()) {
            references.push_back(diag_reference(diag_view(self.batch), diag_view(self.batch)));
          }
          const double error = checked_error(got, references[next_case++]);
          EXPECT_LE(error, kDefault<T>);
          worst = std::max(worst, error);
          for (std::int64_t i = 0; i < spec.n; ++i)
            EXPECT_EQ(got[static_cast<std::size_t>(i * spec.n + i)], 0.0) << "row " << i;
        }
      }
    }
  }
  record_error(std::is_same_v<T, float> ? "pairwise_kl, q = p" : "pairwise_kl, q = p, f64",
               "diag/diag", std::is_same_v<T, float> ? "f32->f64" : "f64->f64", worst);
}

TEST_P(DiagPairsSym, FloatInputsWithinTheDefaultTolerance) {
  check_symmetric_within_tolerance<float>(hwy::TargetName(GetParam()));
}
TEST_P(DiagPairsSym, DoubleInputsWithinTheDefaultTolerance) {
  check_symmetric_within_tolerance<double>(hwy::TargetName(GetParam()));
}

// Whatever the thread count and whatever blocks of rows the caller asks for (the one-sided
// kernel, for blocks of a memory budget or of knn), bitwise the same entries as the whole matrix
// (both directions per tile); in double and in float.
TEST_P(DiagPairsSym, SameResultsForAnyThreadCountAndBlock) {
  Rng rng(75);
  for (const std::int64_t d : {3, 70, 300}) {
    const DiagSpec spec = self_spec(rng, Data::near_duplicate_1e8, 26, d);  // 52 rows
    const SelfPlan<float> self(spec, layout_of(Family::diag), false);
    const std::int64_t n = spec.n;
    const cpu::DiagPairs plan = self.plan(1);
    const std::vector<double> whole = all_entries<float>(plan, 1);
    for (const int threads : {2, 3, 8})
      EXPECT_EQ(all_entries<float>(plan, threads), whole) << threads << " threads";
    for (const std::int64_t rows : {1, 5, 8, 17, 51}) {
      std::vector<double> parts(whole.size(), -7.0);
      std::vector<float> parts_f(whole.size(), -7.0f);
      for (std::int64_t lo = 0; lo < n; lo += rows) {
        const std::int64_t hi = std::min(n, lo + rows);
        plan.block(lo, hi, parts.data() + lo * n, 2);
        plan.block(lo, hi, parts_f.data() + lo * n, 3);
      }
      EXPECT_EQ(parts, whole) << "blocks of " << rows << " rows, D = " << d;
      for (std::size_t k = 0; k < whole.size(); ++k)
        ASSERT_EQ(parts_f[k], static_cast<float>(whole[k])) << "blocks of " << rows << ", " << k;
    }
  }
}

// The symmetric kernel and diag_quadratic's (q given as a copy of p) agree within the
// tolerance: two ways to the same certified values.
TEST(DiagPairs, SymmetricAgreesWithTheGeneralPath) {
  Rng rng(76);
  const DiagSpec spec = self_spec(rng, Data::adversarial, 20, 257);
  const SelfPlan<float> self(spec, layout_of(Family::diag), false);
  const Batch<float> copy = make_batch<float>(spec, layout_of(Family::diag));
  const DiagGaussians<float> qv = diag_view(copy);
  const cpu::DiagPairs general = make_pairs(self.view, &qv, 0, 2);
  ASSERT_FALSE(general.symmetric());
  const std::vector<double> a = all_entries<float>(self.plan(2), 2);
  const std::vector<double> b = all_entries<float>(general, 2);
  for (std::size_t k = 0; k < a.size(); ++k)
    EXPECT_NEAR(a[k], b[k], 2e-7 * (std::abs(b[k]) + 1)) << k;
}

// With the double kernel, q = p (the symmetric kernel) and q given as a copy of p (the one-sided
// kernel) give every entry the same bits, on every target: the two kernels round alike.
TEST_P(DiagPairsSym, SymmetricBitwiseTheGeneralPathInDouble) {
  Rng rng(77);
  for (const Data data : all_data()) {
    for (const std::int64_t d : {1, 7, 257}) {
      const DiagSpec spec = self_spec(rng, data, 21, d);
      const SelfPlan<double> self(spec, layout_of(Family::diag), false);
      const Batch<double> copy = make_batch<double>(spec, layout_of(Family::diag));
      const DiagGaussians<double> qv = diag_view(copy);
      const cpu::DiagPairs general = make_pairs(self.view, &qv, 0, 2);
      const cpu::DiagPairs sym = self.plan(2);
      ASSERT_FALSE(general.symmetric());
      ASSERT_TRUE(sym.symmetric());
      EXPECT_EQ(all_entries<double>(sym, 2), all_entries<double>(general, 2))
          << name(data) << " D = " << d;
    }
  }
}

}  // namespace
}  // namespace gausskl::test
