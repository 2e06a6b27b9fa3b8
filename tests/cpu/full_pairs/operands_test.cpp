// full_gemm (on every compiled target) against a long-double loop within its documented bound, and
// bitwise independent of the split of rows and columns; FullOperands: every entry it keeps is
// within its tolerance of the long-double reference, on random, adversarial, ill-conditioned,
// near-duplicate and identical data, p full or diagonal, from float32 and float64 inputs; and on
// random data it keeps almost every entry (the fast path really runs).
#include "cpu/full_pairs/operands.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "cpu/full_pairs/gemm.hpp"
#include "cpu/pair/prepare.hpp"
#include "hwy/tests/hwy_gtest.h"
#include "support/batches.hpp"
#include "support/generators.hpp"
#include "support/oracle.hpp"

namespace gausskl::cpu {
namespace {

class FullGemm : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(FullGemm);

TEST_P(FullGemm, WithinBoundOfLongDoubleAndSplitIndependent) {
  std::mt19937_64 rng(31);
  std::normal_distribution<double> z;
  for (const std::int64_t k : {1, 7, 8, 152, 255, 256, 257, 700, 2144}) {
    const std::int64_t n = 13, m = 11, kp = full_gemm_depth(k);
    std::vector<double> a(static_cast<std::size_t>(n * kp), 0.0), b(m * kp, 0.0);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t h = 0; h < k; ++h)
        a[i * kp + h] = z(rng) * std::exp(3 * z(rng)) + (h % 3 == 0 ? 1e3 : 0);
    for (std::int64_t j = 0; j < m; ++j)
      for (std::int64_t h = 0; h < k; ++h)
        b[j * kp + h] = z(rng) * std::exp(3 * z(rng));
    std::vector<double> c(n * m);
    full_gemm(a.data(), n, b.data(), m, kp, c.data(), m);
    const double u = 0x1p-53, g = full_gemm_roundings(kp) * u / (1 - full_gemm_roundings(kp) * u);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < m; ++j) {
        long double exact = 0, abs = 0;
        for (std::int64_t h = 0; h < kp; ++h) {
          exact += static_cast<long double>(a[i * kp + h]) * b[j * kp + h];
          abs += std::abs(static_cast<long double>(a[i * kp + h]) * b[j * kp + h]);
        }
        EXPECT_LE(std::abs(c[i * m + j] - exact), g * abs) << k << " " << i << " " << j;
      }
    // Any split gives bitwise the same entries: one row, one column, an odd block.
    std::vector<double> part(n * m, -1.0);
    for (std::int64_t i = 0; i < n; ++i)
      full_gemm(a.data() + i * kp, 1, b.data(), m, kp, part.data() + i * m, m);
    EXPECT_EQ(part, c) << k;
    for (std::int64_t j = 0; j < m; ++j)
      full_gemm(a.data() + 3 * kp, 5, b.data() + j * kp, 1, kp, part.data() + 3 * m + j, m);
    EXPECT_EQ(part, c) << k;
  }
  EXPECT_STREQ(full_gemm_target(), hwy::TargetName(GetParam()));
}

using test::Data;
using test::Family;

struct Outcome {
  std::int64_t entries = 0, flagged = 0;
};

// Builds FullOperands on the prepared batches of p (family fp) and q (full) and checks every entry
// it keeps against the reference. Float inputs are checked at the float tolerance.
template <class T>
Outcome check(const test::Spec& ps, const test::Spec& qs, Family fp, bool self,
              const std::string& what) {
  SCOPED_TRACE(what);
  const test::Batch<T> p = test::make_batch<T>(ps, test::layout_of(fp));
  const test::Batch<T> q = self ? p : test::make_batch<T>(qs, test::layout_of(Family::full));
  const Gaussians<T> pv = p.view(), qv = self ? pv : q.view();
  PreparedBatch pb(layout_for(pv, false), pv.n());
  PreparedBatch qb(layout_for(qv, fp != Family::full), qv.n());
  EXPECT_LT(prepare_range(pv, 0, pv.n(), pb, 2).index, 0);
  EXPECT_LT(prepare_range(qv, 0, qv.n(), qb, 2).index, 0);
  const double tolerance = std::is_same_v<T, float> ? 1e-7 : 1e-13;
  const FullOperands plan(qb, qv.n(), self ? nullptr : &pb, pv.n(), tolerance, 2);
  const std::int64_t n = pv.n(), m = qv.n();
  std::vector<double> out(n * m);
  plan.rows(0, n, 0, m, out.data(), m);
  const std::vector<long double> ref = test::reference_pairwise(pv, qv);
  Outcome o;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      const double got = out[i * m + j];
      const long double r = ref[i * m + j];
      ++o.entries;
      if (std::isnan(got)) {
        ++o.flagged;
        continue;
      }
      if (self && i == j) ADD_FAILURE() << "self diagonal kept";
      // The tolerance, plus the reference's own distance from the prepared forms (none for
      // scale_tril inputs, which are prepared exactly) and exact's round-off.
      EXPECT_LE(std::abs(got - r), (tolerance + 1e-15) * (std::abs(r) + 1))
          << i << " " << j << " got " << got << " ref " << static_cast<double>(r);
      EXPECT_GT(got, 0);
    }
  return o;
}

TEST(FullOperands, KeptEntriesWithinToleranceOnAllData) {
  test::Rng rng(32);
  const test::GenOptions ill{0, 1e-2, 1e2};  // standard deviations spread 1e4: condition 1e8
  for (const Family fp : {Family::full, Family::diag})
    for (const std::int64_t d : {1, 5, 16, 33}) {
      const std::string at = test::name(fp) + " D=" + std::to_string(d);
      for (const Data data : test::all_data()) {
        if (test::q_derived_from_p(data) && fp != Family::full) continue;
        const auto [ps, qs] = test::make_specs(rng, data, fp, Family::full, 24, 24, d);
        check<double>(ps, qs, fp, false, at + " " + test::name(data) + " f64");
        check<float>(ps, qs, fp, false, at + " " + test::name(data) + " f32");
      }
      const test::Spec pi = test::random_spec(rng, fp, 24, d, ill);
      const test::Spec qi = test::random_spec(rng, Family::full, 20, d, ill);
      check<double>(pi, qi, fp, false, at + " condition 1e8 f64");
      check<float>(pi, qi, fp, false, at + " condition 1e8 f32");
      if (fp == Family::full) {
        check<double>(pi, pi, fp, true, at + " q = p f64");
        check<double>(test::random_spec(rng, fp, 24, d, test::kAdversarial), {}, fp, true,
                      at + " q = p adversarial f64");
      }
    }
}

// On random data the bound lets through all but a small share of the entries.
TEST(FullOperands, RandomDataIsMostlyKept) {
  test::Rng rng(33);
  for (const Family fp : {Family::full, Family::diag})
    for (const std::int64_t d : {4, 16, 32}) {
      const auto [ps, qs] = test::make_specs(rng, Data::random, fp, Family::full, 40, 40, d);
      const Outcome f64 = check<double>(ps, qs, fp, false, "f64");
      const Outcome f32 = check<float>(ps, qs, fp, false, "f32");
      std::printf("re-scored, random data, p %s, D = %lld: f64 %lld / %lld, f32 %lld / %lld\n",
                  test::name(fp).c_str(), static_cast<long long>(d),
                  static_cast<long long>(f64.flagged), static_cast<long long>(f64.entries),
                  static_cast<long long>(f32.flagged), static_cast<long long>(f32.entries));
      EXPECT_LE(f64.flagged, f64.entries / 100) << test::name(fp) << " D=" << d;
      EXPECT_LE(f32.flagged, f32.entries / 100) << test::name(fp) << " D=" << d;
    }
}

// An entry's bits depend on p_i and q_j only: the same pairs from a subset of the rows, from
// the rows permuted (with repeats), with rows of 1e3-offset means added, and with q = p against q
// given as a copy of p, give bitwise the same values (NaN where either leaves it to re-scoring).
std::vector<double> entries(const test::Spec& ps, const test::Spec& qs, Family fp, bool self) {
  const test::Batch<double> p = test::make_batch<double>(ps, test::layout_of(fp));
  const test::Batch<double> q =
      test::make_batch<double>(self ? ps : qs, test::layout_of(Family::full));
  const Gaussians<double> pv = p.view(), qv = q.view();
  PreparedBatch pb(layout_for(pv, false), pv.n());
  PreparedBatch qb(layout_for(qv, fp != Family::full), qv.n());
  EXPECT_LT(prepare_range(pv, 0, pv.n(), pb, 2).index, 0);
  EXPECT_LT(prepare_range(qv, 0, qv.n(), qb, 2).index, 0);
  const FullOperands plan(qb, qv.n(), self ? nullptr : &pb, pv.n(), 1e-13, 2);
  std::vector<double> out(static_cast<std::size_t>(pv.n() * qv.n()));
  plan.rows(0, pv.n(), 0, qv.n(), out.data(), qv.n());
  return out;
}

// spec's rows, then extra's (the same family).
test::Spec append(const test::Spec& spec, const test::Spec& extra) {
  test::Spec out = spec;
  std::visit(
      [&](auto& o) {
        const auto& e = std::get<std::decay_t<decltype(o)>>(extra);
        o.mean.insert(o.mean.end(), e.mean.begin(), e.mean.end());
        if constexpr (requires { o.tril; }) {
          o.tril.insert(o.tril.end(), e.tril.begin(), e.tril.end());
        } else if constexpr (requires { o.stddev; }) {
          o.stddev.insert(o.stddev.end(), e.stddev.begin(), e.stddev.end());
        }
        o.n += e.n;
      },
      out);
  return out;
}

bool same_bits(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

TEST(FullOperands, EntriesDoNotDependOnTheOtherRows) {
  test::Rng rng(34);
  for (const Family fp : {Family::full, Family::diag})
    for (const std::int64_t d : {1, 3, 16, 33}) {
      const test::Spec ps = test::random_spec(rng, fp, 19, d);
      const test::Spec qs = test::random_spec(rng, Family::full, 13, d);
      const test::Spec far = test::random_spec(rng, fp, 7, d, test::kAdversarial);
      const std::vector<double> whole = entries(ps, qs, fp, false);
      const std::vector<std::int64_t> pick = {18, 3, 3, 0, 11, 7, 12, 1, 9};
      std::vector<std::int64_t> padded = pick;
      for (std::int64_t r = 0; r < 7; ++r)
        padded.push_back(19 + r);
      const std::vector<std::int64_t> cols = {12, 0, 5, 5, 2};
      const test::Spec p_sub = test::take_rows(ps, pick);
      const test::Spec q_sub = test::take_rows(qs, cols);
      const std::vector<double> sub = entries(p_sub, q_sub, fp, false);
      for (std::size_t a = 0; a < pick.size(); ++a)
        for (std::size_t b = 0; b < cols.size(); ++b)
          EXPECT_TRUE(same_bits(sub[a * cols.size() + b], whole[pick[a] * 13 + cols[b]]))
              << test::name(fp) << " D=" << d << " " << pick[a] << " " << cols[b];
      // p with far rows appended (they shift any batch-wide statistic of the means).
      const test::Spec joined = append(ps, far);
      const std::vector<double> more = entries(test::take_rows(joined, padded), qs, fp, false);
      for (std::size_t a = 0; a < pick.size(); ++a)
        for (std::int64_t j = 0; j < 13; ++j)
          EXPECT_TRUE(same_bits(more[a * 13 + j], whole[pick[a] * 13 + j]))
              << test::name(fp) << " D=" << d << " padded " << pick[a] << " " << j;
      if (fp == Family::full) {
        const std::vector<double> self = entries(ps, ps, fp, true);
        const std::vector<double> given = entries(ps, ps, fp, false);
        for (std::size_t k = 0; k < self.size(); ++k) {
          if (k % 20 == 0) continue;  // the diagonal: left to the exact formula with q = p
          EXPECT_TRUE(same_bits(self[k], given[k])) << "D=" << d << " entry " << k;
        }
      }
    }
}

}  // namespace
}  // namespace gausskl::cpu
