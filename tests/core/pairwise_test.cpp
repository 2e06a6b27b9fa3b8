// gausskl::pairwise_kl against the long-double reference and against the row-wise op.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "gausskl/ops.hpp"
#include "support/allocations.hpp"
#include "support/batches.hpp"
#include "support/generators.hpp"
#include "support/oracle.hpp"

namespace gausskl::test {
namespace {

template <class T, class U>
std::vector<U> run_pairwise(const Gaussians<T>& p, const Gaussians<T>& q,
                            const Options& options = {}) {
  std::vector<U> out(p.n() * q.n());
  pairwise_kl(p, q, std::span<U>(out), options);
  return out;
}

template <class T, class U>
std::vector<U> run_self_pairwise(const Gaussians<T>& p, const Options& options = {}) {
  std::vector<U> out(p.n() * p.n());
  pairwise_kl(p, std::span<U>(out), options);
  return out;
}

template <class T>
void check_pairwise(const Gaussians<T>& p, const Gaussians<T>& q, const std::string& row) {
  const std::vector<long double> ref = reference_pairwise(p, q);
  const auto f = run_pairwise<T, float>(p, q);
  const auto d = run_pairwise<T, double>(p, q);
  expect_within_bar<T, float>("pairwise_kl", row, std::span<const float>(f), ref);
  expect_within_bar<T, double>("pairwise_kl", row, std::span<const double>(d), ref);
}

template <class T>
void check_all_layouts(Rng& rng, Data data) {
  for (const Family fp : {Family::diag, Family::full, Family::lowrank})
    for (const Family fq : {Family::diag, Family::full, Family::lowrank}) {
      if (q_derived_from_p(data) && fp != fq) continue;
      const std::int64_t m = q_derived_from_p(data) ? 5 : 4;
      const auto [ps, qs] = make_specs(rng, data, fp, fq, 5, m, 4);
      for (const Layout& lp : all_layouts())
        for (const Layout& lq : all_layouts()) {
          if (lp.family != fp || lq.family != fq) continue;
          SCOPED_TRACE(name(data) + ", p " + name(lp) + ", q " + name(lq));
          const Batch<T> p = make_batch<T>(ps, lp), q = make_batch<T>(qs, lq);
          check_pairwise<T>(p.view(), q.view(), pair_name(fp, fq));
        }
    }
}

TEST(PairwiseKl, AllLayoutsOnAllData) {
  Rng rng(20);
  for (const Data data : all_data()) {
    check_all_layouts<float>(rng, data);
    check_all_layouts<double>(rng, data);
  }
}

// The largest D each reference affords: 1024 diagonal, 256 low rank, 128 full.
TEST(PairwiseKl, Dimensions) {
  Rng rng(21);
  for (const Layout& lp : family_layouts())
    for (const Layout& lq : family_layouts())
      for (const Data data :
           {Data::random, Data::adversarial, Data::near_duplicate_1e4, Data::near_duplicate_1e8}) {
        if (q_derived_from_p(data) && lp.family != lq.family) continue;
        const bool full = lp.family == Family::full || lq.family == Family::full;
        const bool low = lp.family == Family::lowrank || lq.family == Family::lowrank;
        const std::int64_t largest = full ? 128 : low ? 256 : 1024;
        for (const std::int64_t d : {std::int64_t{1}, std::int64_t{33}, largest}) {
          SCOPED_TRACE(name(data) + ", D = " + std::to_string(d) + ", " + name(lp) + " || " +
                       name(lq));
          const auto [ps, qs] = make_specs(rng, data, lp.family, lq.family, 3, 3, d, 5);
          const Batch<float> pf = make_batch<float>(ps, lp), qf = make_batch<float>(qs, lq);
          const Batch<double> pd = cast<double>(pf), qd = cast<double>(qf);
          const std::vector<long double> ref = reference_pairwise(pf.view(), qf.view());
          const std::string row = pair_name(lp.family, lq.family);
          const auto f = run_pairwise<float, float>(pf.view(), qf.view());
          const auto d64 = run_pairwise<double, double>(pd.view(), qd.view());
          expect_within_bar<float, float>("pairwise_kl", row, std::span<const float>(f), ref);
          expect_within_bar<double, double>("pairwise_kl", row, std::span<const double>(d64), ref);
        }
      }
}

// Packed factors (with and without log diagonals) on either side against every family and form,
// D up to the full reference's 128: the GEMM path (full q) and the exact pair formula. The
// double batches are the float ones widened.
TEST(PairwiseKl, PackedDimensions) {
  Rng rng(27);
  for (const Layout& packed : packed_layouts())
    for (const Layout& other : packed_partners())
      for (const Data data : {Data::random, Data::adversarial, Data::near_duplicate_1e8})
        for (const bool packed_is_p : {true, false}) {
          if (q_derived_from_p(data) && other.family != Family::full) continue;
          const Layout &lp = packed_is_p ? packed : other, &lq = packed_is_p ? other : packed;
          for (const std::int64_t d : {std::int64_t{1}, std::int64_t{33}, std::int64_t{128}}) {
            SCOPED_TRACE(name(data) + ", D = " + std::to_string(d) + ", " + name(lp) + " || " +
                         name(lq));
            const auto [ps, qs] = make_specs(rng, data, lp.family, lq.family, 3, 3, d, 5);
            const Batch<float> pf = make_batch<float>(ps, lp), qf = make_batch<float>(qs, lq);
            const Batch<double> pd = cast<double>(pf), qd = cast<double>(qf);
            const std::vector<long double> ref = reference_pairwise(pf.view(), qf.view());
            const std::string row = pair_name(lp.family, lq.family);
            const auto f = run_pairwise<float, float>(pf.view(), qf.view());
            const auto d64 = run_pairwise<double, double>(pd.view(), qd.view());
            expect_within_bar<float, float>("pairwise_kl", row, std::span<const float>(f), ref);
            expect_within_bar<double, double>("pairwise_kl", row, std::span<const double>(d64),
                                              ref);
          }
        }
}

// A packed factor is the scale_tril with the same entries: without log diagonals the same bits
// (the prepared slots are equal), with and without q; with log diagonals, against a scale_tril
// holding exp(x) rounded to double, each within the requested 1e-13 (|KL| + 1) of its exact
// value, so within 2e-13 (plus the rounding of exp, ~3e-15 in Kl.PackedMatchesScaleTril).
TEST(PairwiseKl, PackedMatchesScaleTril) {
  Rng rng(28);
  for (const Data data : {Data::random, Data::adversarial, Data::near_duplicate_1e8})
    for (const Layout& packed : packed_layouts())
      for (const Layout& other : packed_partners()) {
        if (q_derived_from_p(data) && other.family != Family::full) continue;
        SCOPED_TRACE(name(data) + ", " + name(packed) + " || " + name(other));
        const auto [ps, qs] = make_specs(rng, data, Family::full, other.family, 6, 5, 7);
        const Batch<double> p = make_batch<double>(ps, packed), q = make_batch<double>(qs, other);
        const Batch<double> tril = {unpacked<double>(std::get<FullBatch<double>>(p.b))};
        const Options options{.tolerance = 1e-13};
        const auto a = run_pairwise<double, double>(p.view(), q.view(), options);
        const auto b = run_pairwise<double, double>(q.view(), p.view(), options);
        const auto self = run_self_pairwise<double, double>(p.view(), options);
        const auto a_t = run_pairwise<double, double>(tril.view(), q.view(), options);
        const auto b_t = run_pairwise<double, double>(q.view(), tril.view(), options);
        const auto self_t = run_self_pairwise<double, double>(tril.view(), options);
        if (!packed.log_diagonal) {
          EXPECT_EQ(a, a_t);
          EXPECT_EQ(b, b_t);
          EXPECT_EQ(self, self_t);
        }
        const double most = std::max(
            {max_difference(a, a_t), max_difference(b, b_t), max_difference(self, self_t)});
        record_error("packed vs scale_tril", "pairwise_kl", packed.log_diagonal ? "log" : "plain",
                     most);
        EXPECT_LE(most, 2.1e-13);
      }
}

// Packed views through padded, backwards strides: the bits of the contiguous ones.
TEST(PairwiseKl, PackedReadsThroughStrides) {
  Rng rng(29);
  for (const Layout& packed : packed_layouts())
    for (const Layout& other : packed_partners()) {
      SCOPED_TRACE(name(packed) + " || " + name(other));
      const auto [ps, qs] =
          make_specs(rng, Data::adversarial, packed.family, other.family, 4, 3, 6);
      const Batch<double> p = make_batch<double>(ps, packed), q = make_batch<double>(qs, other);
      std::vector<std::vector<double>> storage;
      const Gaussians<double> p_s = restrided(p.view(), storage);
      const Gaussians<double> q_s = restrided(q.view(), storage);
      check_pairwise<double>(p_s, q_s, pair_name(packed.family, other.family));
      EXPECT_EQ((run_pairwise<double, double>(p_s, q_s)),
                (run_pairwise<double, double>(p.view(), q.view())));
      EXPECT_EQ((run_pairwise<double, double>(q_s, p_s)),
                (run_pairwise<double, double>(q.view(), p.view())));
      EXPECT_EQ((run_self_pairwise<double, double>(p_s)),
                (run_self_pairwise<double, double>(p.view())));
    }
}

// Without q, q = p: off the diagonal as the reference says, on it exactly 0, and repeated rows
// give exactly 0 for diagonal and full Gaussians.
TEST(PairwiseKl, SelfPairwise) {
  Rng rng(22);
  for (const Data data : {Data::random, Data::adversarial})
    for (const Layout& layout : all_layouts()) {
      SCOPED_TRACE(name(data) + ", " + name(layout));
      const auto [spec, unused] = make_specs(rng, data, layout.family, layout.family, 5, 5, 6);
      const Spec repeated = take_rows(spec, {0, 1, 2, 1, 3, 0, 4});
      const Batch<double> p = make_batch<double>(repeated, layout);
      const std::int64_t n = p.n();
      const std::vector<long double> ref = reference_pairwise(p.view(), p.view());
      const auto d = run_self_pairwise<double, double>(p.view());
      const auto f = run_self_pairwise<double, float>(p.view());
      const std::string row = pair_name(layout.family, layout.family);
      expect_within_bar<double, double>("pairwise_kl", row, std::span<const double>(d), ref);
      expect_within_bar<double, float>("pairwise_kl", row, std::span<const float>(f), ref);
      for (std::int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(d[i * n + i], 0.0) << i;
        EXPECT_EQ(f[i * n + i], 0.0f) << i;
      }
      if (layout.family != Family::lowrank) {
        EXPECT_EQ(d[1 * n + 3], 0.0);
        EXPECT_EQ(d[5 * n + 0], 0.0);
      }
    }
}

// out[i * M + j] is KL(p_i || q_j) as the row-wise op computes it.
TEST(PairwiseKl, MatchesRowWise) {
  Rng rng(23);
  for (const Layout& lp : all_layouts())
    for (const Layout& lq : all_layouts()) {
      SCOPED_TRACE(name(lp) + " || " + name(lq));
      const auto [ps, qs] = make_specs(rng, Data::adversarial, lp.family, lq.family, 4, 3, 7);
      std::vector<std::int64_t> rows_p, rows_q;
      for (std::int64_t i = 0; i < 4; ++i)
        for (std::int64_t j = 0; j < 3; ++j) {
          rows_p.push_back(i);
          rows_q.push_back(j);
        }
      const Batch<double> p = make_batch<double>(ps, lp), q = make_batch<double>(qs, lq);
      const Batch<double> p_rows = make_batch<double>(take_rows(ps, rows_p), lp);
      const Batch<double> q_rows = make_batch<double>(take_rows(qs, rows_q), lq);
      std::vector<double> rowwise(12);
      kl(p_rows.view(), q_rows.view(), std::span<double>(rowwise));
      const auto all = run_pairwise<double, double>(p.view(), q.view());
      for (std::size_t k = 0; k < all.size(); ++k)
        EXPECT_NEAR(all[k], rowwise[k], 1e-12 * (std::abs(rowwise[k]) + 1)) << k;
    }
}

TEST(PairwiseKl, SameResultsForAnyThreadCount) {
  Rng rng(24);
  for (const Layout& lp : family_layouts())
    for (const Layout& lq : family_layouts()) {
      const auto [ps, qs] = make_specs(rng, Data::random, lp.family, lq.family, 37, 23, 9);
      const Batch<double> p = make_batch<double>(ps, lp), q = make_batch<double>(qs, lq);
      const auto one = run_pairwise<double, double>(p.view(), q.view(), {.threads = 1});
      EXPECT_EQ((run_pairwise<double, double>(p.view(), q.view(), {.threads = 2})), one);
      EXPECT_EQ((run_pairwise<double, double>(p.view(), q.view(), {.threads = 5})), one);
      EXPECT_EQ((run_pairwise<double, double>(p.view(), q.view())), one);
    }
}

// 256 x 256 pairs at D = 256 would need 67 MB as an [N, M, D] float array; the op may
// allocate the prepared distributions and per-thread rows (about 10 MB here), nothing of size
// N * M * D.
TEST(PairwiseKl, NoIntermediateOfSizeNMD) {
  Rng rng(25);
  constexpr std::int64_t n = 256, m = 256, d = 256;
  for (const Family family : {Family::diag, Family::lowrank}) {
    const auto [ps, qs] = make_specs(rng, Data::random, family, family, n, m, d);
    const Batch<float> p = make_batch<float>(ps, {family}), q = make_batch<float>(qs, {family});
    std::vector<float> out(n * m);
    std::size_t total = 0;
    {
      const CountAllocations count;
      pairwise_kl(p.view(), q.view(), std::span<float>(out));
      total = count.total_bytes();
    }
    // Prepared low-rank distributions (R = 3) take about 10 D doubles each.
    const std::size_t budget = (4 << 20) + 16 * (n + m) * d * sizeof(double);
    EXPECT_LE(total, budget) << name(family);
  }
}

// options.tolerance: any value in [0, 1e-3] bounds every entry (here the loose 1e-5 that takes
// the float kernel for float diagonal inputs, and the full-covariance GEMM path's), anything
// else is an error naming the option.
TEST(PairwiseKl, ToleranceBoundsEveryEntry) {
  Rng rng(26);
  for (const Data data : {Data::random, Data::adversarial, Data::near_duplicate_1e4})
    for (const Layout& lp : family_layouts())
      for (const Layout& lq : family_layouts()) {
        if (q_derived_from_p(data) && lp.family != lq.family) continue;
        SCOPED_TRACE(name(data) + ", " + name(lp) + " || " + name(lq));
        const auto [ps, qs] = make_specs(rng, data, lp.family, lq.family, 6, 6, 20);
        const Batch<float> p = make_batch<float>(ps, lp), q = make_batch<float>(qs, lq);
        const std::vector<long double> ref = reference_pairwise(p.view(), q.view());
        for (const double tolerance : {1e-5, 1e-3}) {
          const auto got =
              run_pairwise<float, double>(p.view(), q.view(), {.tolerance = tolerance});
          EXPECT_LE(max_error(std::span<const double>(got), ref), tolerance);
        }
      }
}

TEST(PairwiseKl, ToleranceOutsideItsRangeIsAnError) {
  const DiagBatch<double> two{2, 3, DiagParam::stddev, std::vector<double>(6, 0.0),
                              std::vector<double>(6, 1.0)};
  for (const double bad : {-1e-9, 1.5e-3, std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()}) {
    try {
      run_self_pairwise<double, double>(two.view(), {.tolerance = bad});
      ADD_FAILURE() << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[pairwise_kl] options.tolerance must be 0 (the "
                                            "default) or at most 1e-3, found ",
                                            0),
                0u)
          << e.what();
    }
  }
  EXPECT_EQ((run_self_pairwise<double, double>(two.view(), {.tolerance = 1e-3})),
            (std::vector<double>(4, 0.0)));
}

TEST(PairwiseKl, EmptyBatches) {
  const DiagBatch<double> none{0, 3, DiagParam::stddev, {}, {}};
  const FullBatch<double> two = make_full<double>({2,
                                                   3,
                                                   std::vector<double>(6, 0.0),
                                                   {1, 0, 0, 0, 1, 0, 0, 0, 1,  //
                                                    1, 0, 0, 0, 1, 0, 0, 0, 1}},
                                                  FullParam::covariance);
  EXPECT_TRUE((run_pairwise<double, double>(none.view(), two.view()).empty()));
  EXPECT_TRUE((run_pairwise<double, double>(two.view(), none.view()).empty()));
  EXPECT_TRUE((run_self_pairwise<double, double>(none.view()).empty()));
}

}  // namespace
}  // namespace gausskl::test
