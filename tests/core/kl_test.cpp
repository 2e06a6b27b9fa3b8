// gausskl::kl and kl_standard_normal against the long-double reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gausskl/ops.hpp"
#include "support/batches.hpp"
#include "support/generators.hpp"
#include "support/oracle.hpp"

namespace gausskl::test {
namespace {

template <class T, class U>
std::vector<U> run_kl(const Gaussians<T>& p, const Gaussians<T>& q, const Options& options = {}) {
  std::vector<U> out(broadcast_rows(p.n(), q.n()));
  kl(p, q, std::span<U>(out), options);
  return out;
}

// kl(p, q) into float and double outputs, each within its bar of the reference; p = q given
// alike must give exactly 0 for diagonal and full Gaussians.
template <class T>
void check_kl(const Gaussians<T>& p, const Gaussians<T>& q, const std::string& row,
              bool exact_zero = false) {
  const std::vector<long double> ref = reference_kl(p, q);
  const auto f = run_kl<T, float>(p, q);
  const auto d = run_kl<T, double>(p, q);
  expect_within_bar<T, float>("kl", row, std::span<const float>(f), ref);
  expect_within_bar<T, double>("kl", row, std::span<const double>(d), ref);
  if (exact_zero) {
    for (std::size_t i = 0; i < d.size(); ++i) {
      EXPECT_EQ(d[i], 0.0) << "row " << i;
      EXPECT_EQ(f[i], 0.0f) << "row " << i;
    }
  }
}

template <class T>
void check_all_layouts(Rng& rng, Data data) {
  for (const Family fp : {Family::diag, Family::full, Family::lowrank})
    for (const Family fq : {Family::diag, Family::full, Family::lowrank}) {
      if (q_derived_from_p(data) && fp != fq) continue;
      const auto [ps, qs] = make_specs(rng, data, fp, fq, 6, 6, 5);
      for (const Layout& lp : all_layouts())
        for (const Layout& lq : all_layouts()) {
          if (lp.family != fp || lq.family != fq) continue;
          SCOPED_TRACE(name(data) + ", p " + name(lp) + ", q " + name(lq));
          const Batch<T> p = make_batch<T>(ps, lp), q = make_batch<T>(qs, lq);
          const bool alike = name(lp) == name(lq) && fp != Family::lowrank;
          check_kl<T>(p.view(), q.view(), pair_name(fp, fq), data == Data::identical && alike);
        }
    }
}

TEST(Kl, AllLayoutsOnAllData) {
  Rng rng(10);
  for (const Data data : all_data()) {
    check_all_layouts<float>(rng, data);
    check_all_layouts<double>(rng, data);
  }
}

TEST(Kl, Dimensions) {
  Rng rng(11);
  for (const std::int64_t d : {1, 2, 17, 64, 128})
    for (const Data data : all_data())
      for (const Layout& lp : family_layouts())
        for (const Layout& lq : family_layouts()) {
          if (q_derived_from_p(data) && lp.family != lq.family) continue;
          SCOPED_TRACE(name(data) + ", D = " + std::to_string(d) + ", " + name(lp) + " || " +
                       name(lq));
          const auto [ps, qs] = make_specs(rng, data, lp.family, lq.family, 3, 3, d);
          const bool zero = data == Data::identical && lp.family != Family::lowrank;
          const std::string row = pair_name(lp.family, lq.family);
          const Batch<float> pf = make_batch<float>(ps, lp), qf = make_batch<float>(qs, lq);
          check_kl<float>(pf.view(), qf.view(), row, zero);
          const Batch<double> pd = make_batch<double>(ps, lp), qd = make_batch<double>(qs, lq);
          check_kl<double>(pd.view(), qd.view(), row, zero);
        }
}

// D = 1024 for the families whose reference is affordable there. The double batches are the
// float ones widened, so one reference serves both precisions.
TEST(Kl, LargeDimension) {
  Rng rng(12);
  for (const Family fp : {Family::diag, Family::lowrank})
    for (const Family fq : {Family::diag, Family::lowrank})
      for (const Data data : {Data::random, Data::adversarial, Data::near_duplicate_1e4}) {
        if (q_derived_from_p(data) && fp != fq) continue;
        SCOPED_TRACE(name(data) + ", " + pair_name(fp, fq));
        const auto [ps, qs] = make_specs(rng, data, fp, fq, 1, 1, 1024, 8);
        const Batch<float> pf = make_batch<float>(ps, {fp}), qf = make_batch<float>(qs, {fq});
        const Batch<double> pd = cast<double>(pf), qd = cast<double>(qf);
        const std::vector<long double> ref = reference_kl(pf.view(), qf.view());
        const std::string row = pair_name(fp, fq);
        const auto f = run_kl<float, float>(pf.view(), qf.view());
        const auto fd = run_kl<float, double>(pf.view(), qf.view());
        const auto d = run_kl<double, double>(pd.view(), qd.view());
        expect_within_bar<float, float>("kl", row, std::span<const float>(f), ref);
        expect_within_bar<float, double>("kl", row, std::span<const double>(fd), ref);
        expect_within_bar<double, double>("kl", row, std::span<const double>(d), ref);
      }
}

TEST(Kl, BroadcastsASideWithOneRow) {
  Rng rng(13);
  for (const Layout& lp : family_layouts())
    for (const Layout& lq : family_layouts())
      for (const auto& [n, m] : {std::pair{1, 5}, {5, 1}, {1, 1}}) {
        SCOPED_TRACE(name(lp) + " || " + name(lq) + ", N = " + std::to_string(n) +
                     ", M = " + std::to_string(m));
        const auto [ps, qs] = make_specs(rng, Data::adversarial, lp.family, lq.family, n, m, 6);
        const Batch<double> p = make_batch<double>(ps, lp), q = make_batch<double>(qs, lq);
        check_kl<double>(p.view(), q.view(), pair_name(lp.family, lq.family));
        const Batch<float> pf = make_batch<float>(ps, lp), qf = make_batch<float>(qs, lq);
        check_kl<float>(pf.view(), qf.view(), pair_name(lp.family, lq.family));
      }
}

// Ranks 0 (no factor), 1 and above D, different on each side.
TEST(Kl, LowRankOfAnyRank) {
  Rng rng(14);
  for (const std::int64_t rp : {0, 1, 7})
    for (const std::int64_t rq : {0, 2, 9}) {
      SCOPED_TRACE("R_p = " + std::to_string(rp) + ", R_q = " + std::to_string(rq));
      GenOptions op = kAdversarial, oq = kAdversarial;
      op.rank = rp;
      oq.rank = rq;
      const Batch<double> p =
          make_batch<double>(random_spec(rng, Family::lowrank, 4, 5, op), {Family::lowrank});
      const Batch<double> q =
          make_batch<double>(random_spec(rng, Family::lowrank, 4, 5, oq), {Family::lowrank});
      check_kl<double>(p.view(), q.view(), "lowrank/lowrank");
      const Batch<double> diag =
          make_batch<double>(random_spec(rng, Family::diag, 4, 5, kAdversarial), {Family::diag});
      check_kl<double>(p.view(), diag.view(), "lowrank/diag");
      check_kl<double>(diag.view(), q.view(), "diag/lowrank");
    }
}

// A low-rank q whose factor outweighs its diagonal (W W^T ~ 1e4 diag(d), as with torch's
// LowRankMultivariateNormal and a small cov_diag): near p, KL is small while the Woodbury terms
// are ~1e4 D and cancel. Minimal case: D = 2, R = 1, d = 1e-6, W_p = [1, 0.5],
// W_q = [1.000001, 0.5] has KL = 1.00000399998e-7 (mpmath), and the library gave 9.976e-8.
TEST(Kl, LowRankFactorMuchLargerThanDiagonal) {
  Rng rng(18);
  GenOptions options{.scale_min = 1e-2, .scale_max = 1e-2, .rank = 4, .factor_scale = 100};
  for (const std::int64_t d : {2, 16, 64})
    for (const double rel : {1e-4, 1e-6}) {
      SCOPED_TRACE("D = " + std::to_string(d) + ", rel = " + std::to_string(rel));
      const Spec ps = random_spec(rng, Family::lowrank, 3, d, options);
      const Batch<double> p = make_batch<double>(ps, {Family::lowrank});
      const Batch<double> q = make_batch<double>(perturbed(rng, ps, rel), {Family::lowrank});
      check_kl<double>(p.view(), q.view(), "lowrank/lowrank");
    }
}

TEST(Kl, ReadsThroughStrides) {
  Rng rng(15);
  const auto [dp, dq] = make_specs(rng, Data::adversarial, Family::diag, Family::full, 4, 4, 5);
  const auto [lp, lq] = make_specs(rng, Data::adversarial, Family::lowrank, Family::full, 4, 4, 5);
  const auto diag = make_diag<double>(std::get<DiagSpec>(dp), DiagParam::logvar);
  const auto full = make_full<double>(std::get<FullSpec>(dq), FullParam::covariance);
  const auto low = make_lowrank<double>(std::get<LowRankSpec>(lp));
  std::vector<double> s[7];
  const DiagGaussians<double> diag_s{restrided(diag.view().mean, s[0]),
                                     restrided(diag.view().scale, s[1]), diag.param};
  const FullGaussians<double> full_s{restrided(full.view().mean, s[2]),
                                     restrided(full.view().scale, s[3]), full.param};
  const LowRankGaussians<double> low_s{restrided(low.view().mean, s[4]),
                                       restrided(low.view().cov_factor, s[5]),
                                       restrided(low.view().cov_diag, s[6])};
  check_kl<double>(diag_s, full_s, "diag/full");
  check_kl<double>(low_s, diag_s, "lowrank/diag");
  check_kl<double>(full_s, low_s, "full/lowrank");
  EXPECT_EQ((run_kl<double, double>(diag_s, full_s)),
            (run_kl<double, double>(diag.view(), full.view())));

  // Stride 0: one row of q seen as four.
  DiagGaussians<double> q0 = diag.view();
  q0.mean.strides[0] = q0.scale.strides[0] = 0;
  check_kl<double>(low.view(), q0, "lowrank/diag");
}

// Results do not depend on the thread count, nor on how rows are split into chunks (a full q at
// D = 128 takes 256 KiB prepared, so 600 rows span several chunks).
TEST(Kl, SameResultsForAnyThreadCountAndBatchSize) {
  Rng rng(16);
  const auto [ps, qs] = make_specs(rng, Data::random, Family::diag, Family::full, 600, 600, 128);
  const Batch<double> p = make_batch<double>(ps, {Family::diag});
  const Batch<double> q = make_batch<double>(qs, {Family::full});
  const auto all = run_kl<double, double>(p.view(), q.view(), {.threads = 1});
  EXPECT_EQ((run_kl<double, double>(p.view(), q.view(), {.threads = 3})), all);
  EXPECT_EQ((run_kl<double, double>(p.view(), q.view())), all);
  std::vector<std::int64_t> sample;
  for (std::int64_t i = 0; i < 600; i += 37)
    sample.push_back(i);
  const Batch<double> ps_sample = make_batch<double>(take_rows(ps, sample), {Family::diag});
  const Batch<double> qs_sample = make_batch<double>(take_rows(qs, sample), {Family::full});
  std::vector<double> got;
  for (const std::int64_t i : sample)
    got.push_back(all[i]);
  expect_within_bar<double, double>("kl", "diag/full", std::span<const double>(got),
                                    reference_kl(ps_sample.view(), qs_sample.view()));
}

// Diagonal results are written as rows are computed, except when the output overlaps an input:
// then they must wait until every row has been read. The output placed over the first or last
// values of each input array (float into float, double into double, on 1 and 2 threads) gives
// the results of a separate output on one thread.
template <class T>
void check_output_over_input(std::int64_t n, std::int64_t d) {
  Rng rng(18);
  const auto [ps, qs] = make_specs(rng, Data::random, Family::diag, Family::diag, n, n, d);
  for (const DiagParam param : {DiagParam::logvar, DiagParam::stddev}) {
    const DiagBatch<T> p0 = make_diag<T>(std::get<DiagSpec>(ps), param);
    const DiagBatch<T> q0 = make_diag<T>(std::get<DiagSpec>(qs), param);
    // The results of one thread, which two threads must give bit for bit.
    std::vector<T> expected(static_cast<std::size_t>(n)), expected_sn(expected.size());
    kl(Gaussians<T>(p0.view()), Gaussians<T>(q0.view()), std::span<T>(expected), {.threads = 1});
    kl_standard_normal(Gaussians<T>(p0.view()), std::span<T>(expected_sn), {.threads = 1});
    for (const int threads : {1, 2}) {
      const Options options{.threads = threads};
      for (int array = 0; array < 4; ++array) {
        for (const bool at_end : {false, true}) {
          DiagBatch<T> p = p0, q = q0;
          std::vector<T>& storage = array == 0   ? p.mean
                                    : array == 1 ? p.scale
                                    : array == 2 ? q.mean
                                                 : q.scale;
          const std::span<T> out(storage.data() + (at_end ? storage.size() - n : 0),
                                 static_cast<std::size_t>(n));
          const std::string label = "array " + std::to_string(array) + (at_end ? " end" : "") +
                                    ", threads " + std::to_string(threads);
          kl(Gaussians<T>(p.view()), Gaussians<T>(q.view()), out, options);
          EXPECT_TRUE(std::equal(out.begin(), out.end(), expected.begin())) << label;
          if (array < 2) {
            DiagBatch<T> p1 = p0;
            std::vector<T>& s1 = array == 0 ? p1.mean : p1.scale;
            const std::span<T> out1(s1.data() + (at_end ? s1.size() - n : 0),
                                    static_cast<std::size_t>(n));
            kl_standard_normal(Gaussians<T>(p1.view()), out1, options);
            EXPECT_TRUE(std::equal(out1.begin(), out1.end(), expected_sn.begin())) << label;
          }
        }
      }
    }
  }
}

TEST(Kl, DiagonalOutputMayOverlapAnInput) {
  check_output_over_input<float>(7, 3);
  check_output_over_input<double>(7, 3);
  // Enough work for two workers (kRowwiseWorkPerThread).
  check_output_over_input<float>(2048, 64);
  check_output_over_input<double>(2048, 64);
}

// Packed factors, with and without log diagonals, on either side against every family and form
// (the SIMD kernel against factors, the prepared path against the rest), D across the kernel's
// vector widths and tiles up to 128, on all data, float and double.
TEST(Kl, PackedDimensions) {
  Rng rng(19);
  for (const std::int64_t d : {1, 2, 9, 17, 64, 128})
    for (const Data data : all_data())
      for (const Layout& packed : packed_layouts())
        for (const Layout& other : packed_partners()) {
          if (q_derived_from_p(data) && other.family != Family::full) continue;
          for (const bool packed_is_p : {true, false}) {
            const Layout &lp = packed_is_p ? packed : other, &lq = packed_is_p ? other : packed;
            SCOPED_TRACE(name(data) + ", D = " + std::to_string(d) + ", " + name(lp) + " || " +
                         name(lq));
            const auto [ps, qs] = make_specs(rng, data, lp.family, lq.family, 3, 3, d);
            const bool zero = data == Data::identical && lp.log_diagonal == lq.log_diagonal &&
                              (lp.full == FullParam::scale_tril ||
                               lq.full == FullParam::scale_tril || lp.full == lq.full);
            const std::string row = pair_name(lp.family, lq.family);
            const Batch<float> pf = make_batch<float>(ps, lp), qf = make_batch<float>(qs, lq);
            check_kl<float>(pf.view(), qf.view(), row, zero);
            const Batch<double> pd = make_batch<double>(ps, lp), qd = make_batch<double>(qs, lq);
            check_kl<double>(pd.view(), qd.view(), row, zero);
          }
        }
}

// D = 1024 through the row-wise kernel: packed p with log diagonals against packed q, one pair
// (the long-double reference takes seconds here). The double batches are the float ones widened.
TEST(Kl, PackedLargeDimension) {
  Rng rng(20);
  const auto [ps, qs] = make_specs(rng, Data::adversarial, Family::full, Family::full, 1, 1, 1024);
  const Batch<float> pf = make_batch<float>(ps, packed_layouts()[1]);
  const Batch<float> qf = make_batch<float>(qs, packed_layouts()[0]);
  const Batch<double> pd = cast<double>(pf), qd = cast<double>(qf);
  const std::vector<long double> ref = reference_kl(pf.view(), qf.view());
  const auto f = run_kl<float, float>(pf.view(), qf.view());
  const auto fd = run_kl<float, double>(pf.view(), qf.view());
  const auto d = run_kl<double, double>(pd.view(), qd.view());
  expect_within_bar<float, float>("kl", "full/full", std::span<const float>(f), ref);
  expect_within_bar<float, double>("kl", "full/full", std::span<const double>(fd), ref);
  expect_within_bar<double, double>("kl", "full/full", std::span<const double>(d), ref);
}

TEST(Kl, PackedBroadcastsASideWithOneRow) {
  Rng rng(21);
  for (const Layout& packed : packed_layouts())
    for (const Layout& other : packed_partners())
      for (const auto& [n, m] : {std::pair{1, 5}, {5, 1}, {1, 1}})
        for (const bool packed_is_p : {true, false}) {
          const Layout &lp = packed_is_p ? packed : other, &lq = packed_is_p ? other : packed;
          SCOPED_TRACE(name(lp) + " || " + name(lq) + ", N = " + std::to_string(n) +
                       ", M = " + std::to_string(m));
          const auto [ps, qs] = make_specs(rng, Data::adversarial, lp.family, lq.family, n, m, 6);
          const Batch<double> p = make_batch<double>(ps, lp), q = make_batch<double>(qs, lq);
          check_kl<double>(p.view(), q.view(), pair_name(lp.family, lq.family));
          const Batch<float> pf = make_batch<float>(ps, lp), qf = make_batch<float>(qs, lq);
          check_kl<float>(pf.view(), qf.view(), pair_name(lp.family, lq.family));
        }
}

// Packed views read through padded, backwards strides give the bits of the contiguous ones, on
// the kernel's path (against factors) and the prepared path (against the other families); a
// broadcast row (stride 0) is one row.
TEST(Kl, PackedReadsThroughStrides) {
  Rng rng(22);
  for (const Layout& packed : packed_layouts())
    for (const Layout& other : packed_partners()) {
      SCOPED_TRACE(name(packed) + " || " + name(other));
      const auto [ps, qs] =
          make_specs(rng, Data::adversarial, packed.family, other.family, 4, 4, 7);
      const Batch<double> p = make_batch<double>(ps, packed), q = make_batch<double>(qs, other);
      std::vector<std::vector<double>> storage;
      const Gaussians<double> p_s = restrided(p.view(), storage);
      const Gaussians<double> q_s = restrided(q.view(), storage);
      const std::string row = pair_name(packed.family, other.family);
      check_kl<double>(p_s, q_s, row);
      check_kl<double>(q_s, p_s, pair_name(other.family, packed.family));
      EXPECT_EQ((run_kl<double, double>(p_s, q_s)), (run_kl<double, double>(p.view(), q.view())));
      EXPECT_EQ((run_kl<double, double>(q_s, p_s)), (run_kl<double, double>(q.view(), p.view())));
      FullGaussians<double> p0 = std::get<FullGaussians<double>>(p.view().variant());
      p0.mean.strides[0] = p0.packed.strides[0] = 0;
      FullGaussians<double> p1 = p0;
      p1.mean.shape[0] = p1.packed.shape[0] = 1;
      EXPECT_EQ((run_kl<double, double>(p0, q.view())), (run_kl<double, double>(p1, q.view())));
    }
}

// A packed factor is the scale_tril with the same entries: without log diagonals the same bits,
// on every path, for every op on either side. With log diagonals the scale_tril holds exp(x)
// rounded to double, a rounding the packed input does not have: within 1e-14 (|KL| + 1), the
// accuracy both reach against the reference (the bar is 1e-12).
TEST(Kl, PackedMatchesScaleTril) {
  Rng rng(23);
  for (const Data data : {Data::random, Data::adversarial, Data::near_duplicate_1e8})
    for (const Layout& packed : packed_layouts())
      for (const Layout& other : packed_partners()) {
        if (q_derived_from_p(data) && other.family != Family::full) continue;
        SCOPED_TRACE(name(data) + ", " + name(packed) + " || " + name(other));
        const auto [ps, qs] = make_specs(rng, data, Family::full, other.family, 5, 5, 6);
        for (const bool is_float : {false, true}) {
          const auto both = [&]<class T>() {
            const Batch<T> p = make_batch<T>(ps, packed), q = make_batch<T>(qs, other);
            const Batch<double> tril = {unpacked<double>(std::get<FullBatch<T>>(p.b))};
            const Batch<double> q64 = cast<double>(q);
            const auto a = run_kl<T, double>(p.view(), q.view());
            const auto b = run_kl<T, double>(q.view(), p.view());
            const auto c = run_kl<double, double>(tril.view(), q64.view());
            const auto e = run_kl<double, double>(q64.view(), tril.view());
            std::vector<double> s(5), t(5);
            kl_standard_normal(p.view(), std::span<double>(s));
            kl_standard_normal(tril.view(), std::span<double>(t));
            if (!packed.log_diagonal && !is_float) {
              EXPECT_EQ(a, c);
              EXPECT_EQ(b, e);
              EXPECT_EQ(s, t);
            }
            record_error(
                "packed vs scale_tril", "kl", packed.log_diagonal ? "log" : "plain",
                std::max({max_difference(a, c), max_difference(b, e), max_difference(s, t)}));
            EXPECT_LE(max_difference(a, c), 1e-14);
            EXPECT_LE(max_difference(b, e), 1e-14);
            EXPECT_LE(max_difference(s, t), 1e-14);
          };
          if (is_float) {
            both.template operator()<float>();
          } else {
            both.template operator()<double>();
          }
        }
      }
}

template <class T>
void check_standard_normal(const Gaussians<T>& p, const std::string& row) {
  const std::vector<long double> ref = reference_standard_normal(p);
  std::vector<float> f(p.n());
  std::vector<double> d(p.n());
  kl_standard_normal(p, std::span<float>(f));
  kl_standard_normal(p, std::span<double>(d));
  expect_within_bar<T, float>("kl_standard_normal", row, std::span<const float>(f), ref);
  expect_within_bar<T, double>("kl_standard_normal", row, std::span<const double>(d), ref);
}

TEST(KlStandardNormal, AllLayouts) {
  Rng rng(17);
  for (const std::int64_t d : {1, 5, 64})
    for (const Data data : {Data::random, Data::adversarial})
      for (const Layout& layout : all_layouts()) {
        SCOPED_TRACE(name(data) + ", D = " + std::to_string(d) + ", " + name(layout));
        const auto [ps, unused] = make_specs(rng, data, layout.family, layout.family, 4, 4, d);
        check_standard_normal<float>(make_batch<float>(ps, layout).view(), name(layout.family));
        check_standard_normal<double>(make_batch<double>(ps, layout).view(), name(layout.family));
      }
}

TEST(KlStandardNormal, OfTheStandardNormalIsExactlyZero) {
  const DiagBatch<double> diag{2, 3, DiagParam::logvar, std::vector<double>(6, 0.0),
                               std::vector<double>(6, 0.0)};
  const FullBatch<double> full{1, 2, FullParam::scale_tril, {0, 0}, {1, 0, 0, 1}};
  for (const Gaussians<double>& g :
       {Gaussians<double>(diag.view()), Gaussians<double>(full.view())}) {
    std::vector<double> out(g.n(), -1.0);
    kl_standard_normal(g, std::span<double>(out));
    for (const double x : out)
      EXPECT_EQ(x, 0.0);
  }
}

TEST(Kl, EmptyBatches) {
  const DiagBatch<double> none{0, 3, DiagParam::stddev, {}, {}};
  const DiagBatch<double> one{1, 3, DiagParam::stddev, {0, 0, 0}, {1, 1, 1}};
  EXPECT_TRUE((run_kl<double, double>(none.view(), none.view()).empty()));
  // N = 1 pairs with every row of the other side, here none (ops.hpp's "max(p.n, q.n)" is 1).
  EXPECT_TRUE((run_kl<double, double>(none.view(), one.view()).empty()));
  EXPECT_TRUE((run_kl<double, double>(one.view(), none.view()).empty()));
  std::vector<double> out;
  kl_standard_normal(Gaussians<double>(none.view()), std::span<double>(out));
}

}  // namespace
}  // namespace gausskl::test

namespace gausskl::test {
namespace {

// q's means 1e160 from p's with q's scales 1e-150: the whitened mean difference 1e310
// overflows, as the exact KL (> 1e600) does. Every family pair gives +inf, never NaN (a solve
// that overflows meets 0 * inf); the diagonal pair is the control.
TEST(Kl, OverflowingKlIsInfinite) {
  const std::int64_t n = 2, d = 3;
  std::vector<double> zeros(n * d, 0.0), far(n * d, 1e160), ones(n * d, 1.0), tiny(n * d, 1e-150);
  std::vector<double> eye(n * d * d, 0.0), tiny_eye(n * d * d, 0.0), no_factor(n * d, 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < d; ++k) {
      eye[(i * d + k) * d + k] = 1.0;
      tiny_eye[(i * d + k) * d + k] = 1e-150;
    }
  std::vector<double> tiny_var(n * d, 1e-300);
  const auto diag = [&](const std::vector<double>& m, const std::vector<double>& s) {
    return Gaussians<double>(DiagGaussians<double>{contiguous<double, 2>(m.data(), {n, d}),
                                                   contiguous<double, 2>(s.data(), {n, d}),
                                                   DiagParam::stddev});
  };
  const auto full = [&](const std::vector<double>& m, const std::vector<double>& l) {
    return Gaussians<double>(FullGaussians<double>{contiguous<double, 2>(m.data(), {n, d}),
                                                   contiguous<double, 3>(l.data(), {n, d, d}),
                                                   FullParam::scale_tril});
  };
  const auto lowrank = [&](const std::vector<double>& m, const std::vector<double>& v) {
    return Gaussians<double>(LowRankGaussians<double>{
        contiguous<double, 2>(m.data(), {n, d}), contiguous<double, 3>(no_factor.data(), {n, d, 1}),
        contiguous<double, 2>(v.data(), {n, d})});
  };
  const std::vector<std::pair<std::string, Gaussians<double>>> ps = {
      {"diag", diag(zeros, ones)}, {"full", full(zeros, eye)}, {"lowrank", lowrank(zeros, ones)}};
  const std::vector<std::pair<std::string, Gaussians<double>>> qs = {
      {"diag", diag(far, tiny)},
      {"full", full(far, tiny_eye)},
      {"lowrank", lowrank(far, tiny_var)}};
  for (const auto& [pn, p] : ps)
    for (const auto& [qn, q] : qs) {
      SCOPED_TRACE(pn + " || " + qn);
      for (const double v : run_kl<double, double>(p, q))
        EXPECT_EQ(v, HUGE_VAL);
      for (const float v : run_kl<double, float>(p, q))
        EXPECT_EQ(v, HUGE_VALF);
      std::vector<double> all(n * n);
      pairwise_kl(p, q, std::span<double>(all));
      for (const double v : all)
        EXPECT_EQ(v, HUGE_VAL);
    }
}

}  // namespace
}  // namespace gausskl::test
