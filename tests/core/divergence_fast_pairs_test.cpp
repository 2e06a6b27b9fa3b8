// The tiled all-pairs path of two diagonal sides (cpu/divergence/diag_tiles.hpp: jeffreys and
// wasserstein2 on the KL tile kernel, bhattacharyya and hellinger on their own, exact
// re-computation where an entry's bound exceeds the tolerance) against the long-double reference,
// with KL's all-pairs tolerance rule: every entry within options.tolerance * (|D| + 1) of exact
// (the default tolerance for the input type, and looser ones); q = p's zero diagonal and
// bit-symmetric matrix; bits independent of the blocks; knn the sorted rows of pairwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/reference.hpp"
#include "cpu/divergence/diag_tiles.hpp"
#include "gausskl/limits.hpp"
#include "gausskl/ops.hpp"
#include "hwy/targets.h"
#include "support/generators.hpp"
#include "support/oracle.hpp"

namespace gausskl::test {
namespace {

const std::vector<Divergence>& fast_kinds() {
  static const std::vector<Divergence> kinds{Divergence::wasserstein2, Divergence::jeffreys,
                                             Divergence::bhattacharyya, Divergence::hellinger,
                                             Divergence::renyi};
  return kinds;
}

constexpr DiagParam kParams[] = {DiagParam::stddev, DiagParam::var, DiagParam::logvar,
                                 DiagParam::precision};

DiagSpec diag_spec(Rng& rng, std::int64_t n, std::int64_t d, const GenOptions& options) {
  return std::get<DiagSpec>(random_spec(rng, Family::diag, n, d, options));
}

// The rows of a followed by those of b.
DiagSpec concat(const DiagSpec& a, const DiagSpec& b) {
  DiagSpec s = a;
  s.n = a.n + b.n;
  s.mean.insert(s.mean.end(), b.mean.begin(), b.mean.end());
  s.stddev.insert(s.stddev.end(), b.stddev.begin(), b.stddev.end());
  return s;
}

// p and q of each kind of data; q = p runs get p's rows followed by q's (near-duplicate and
// identical pairs within one batch).
std::pair<DiagSpec, DiagSpec> specs(Rng& rng, Data data, std::int64_t n, std::int64_t m,
                                    std::int64_t d) {
  switch (data) {
    case Data::random:
      return {diag_spec(rng, n, d, {}), diag_spec(rng, m, d, {})};
    case Data::adversarial:
      return {diag_spec(rng, n, d, kAdversarial), diag_spec(rng, m, d, kAdversarial)};
    case Data::near_duplicate_1e4:
    case Data::near_duplicate_1e8: {
      const DiagSpec p = diag_spec(rng, n, d, kAdversarial);
      const double rel = data == Data::near_duplicate_1e4 ? 1e-4 : 1e-8;
      return {p, std::get<DiagSpec>(perturbed(rng, p, rel))};
    }
    case Data::identical: {
      const DiagSpec p = diag_spec(rng, n, d, kAdversarial);
      return {p, p};
    }
  }
  return {};
}

// renyi: of order 1/2 (the orders in (0, 1) take the tiled path).
double alpha_of(Divergence kind) {
  return kind == Divergence::renyi ? 0.5 : 0.0;
}

Options options_of(Divergence kind, double tolerance = 0, std::int64_t budget = 0) {
  Options o;
  o.divergence = kind;
  o.alpha = alpha_of(kind);
  o.tolerance = tolerance;
  o.memory_budget = budget;
  return o;
}

// ref[i * m + j] = D(p_i || q_j); with `self` (q is p) and a symmetric kind each pair once, the
// diagonal 0 (the reference densifies: D = 1024 costs a dense factorization per pair).
template <class T>
std::vector<long double> reference_of(Divergence kind, const DiagGaussians<T>& p,
                                      const DiagGaussians<T>& q, bool self) {
  const Gaussians<T> gp(p), gq(q);
  const std::int64_t n = gp.n(), m = gq.n();
  std::vector<long double> ref(static_cast<std::size_t>(n * m));
  const bool mirror = self && is_symmetric(kind);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = mirror ? i + 1 : 0; j < m; ++j) {
      if (self && i == j) continue;
      const long double r = reference::divergence(kind, alpha_of(kind), gp, i, gq, j);
      ref[static_cast<std::size_t>(i * m + j)] = r;
      if (mirror) ref[static_cast<std::size_t>(j * m + i)] = r;
    }
  }
  return ref;
}

template <class T, class U>
std::vector<U> run(const Options& o, const DiagGaussians<T>& p, const DiagGaussians<T>* q) {
  const std::int64_t n = p.mean.shape[0], m = q ? q->mean.shape[0] : n;
  std::vector<U> out(static_cast<std::size_t>(n * m));
  if (q) {
    pairwise(Gaussians<T>(p), Gaussians<T>(*q), std::span<U>(out), o);
  } else {
    pairwise(Gaussians<T>(p), std::span<U>(out), o);
  }
  return out;
}

template <class T>
void check_knn(const Options& o, const DiagGaussians<T>& p, const DiagGaussians<T>* q,
               const std::vector<double>& matrix, std::int64_t k, bool exclude_self) {
  const std::int64_t n = p.mean.shape[0], m = q ? q->mean.shape[0] : n;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(n * k));
  std::vector<double> val(static_cast<std::size_t>(n * k));
  Options ko = o;
  ko.exclude_self = exclude_self;
  if (q) {
    knn(Gaussians<T>(p), Gaussians<T>(*q), k, std::span<std::int64_t>(idx), std::span<double>(val),
        ko);
  } else {
    knn(Gaussians<T>(p), k, std::span<std::int64_t>(idx), std::span<double>(val), ko);
  }
  std::vector<std::int64_t> want_idx;
  std::vector<double> want_val;
  sorted_rows(matrix, n, m, k, exclude_self, want_idx, want_val);
  EXPECT_EQ(idx, want_idx);
  EXPECT_EQ(val, want_val);
}

// max over entries of |got - ref| / (|ref| + 1).
template <class U>
double error_of(const std::vector<U>& got, const std::vector<long double>& ref) {
  return max_error(std::span<const U>(got), std::span<const long double>(ref));
}

// The bars: the tolerance the entries are computed to (the default for T unless given), plus the
// rounding of a double result to U; never above the accuracy promised for T and U (error_bar).
template <class T, class U>
double bar(double tolerance) {
  const double t = tolerance > 0 ? tolerance : limits::default_tolerance<T>;
  const double rounding = std::is_same_v<U, float> ? 0x1p-24 : 0x1p-53;
  return std::min(t + rounding, tolerance > 0 ? 1.0 : error_bar<T, U>());
}

// The checks on one p and q (q == nullptr: q = p): double and float results within the bars of
// the reference, never negative, q = p's zero diagonal and bit-symmetric matrix; knn.
template <class T>
void check(Divergence kind, const DiagGaussians<T>& p, const DiagGaussians<T>* q,
           const std::string& what, double tolerance = 0, bool with_knn = true) {
  SCOPED_TRACE(what);
  const DiagGaussians<T>& qq = q ? *q : p;
  const std::int64_t n = p.mean.shape[0], m = qq.mean.shape[0];
  const std::vector<long double> ref = reference_of(kind, p, qq, q == nullptr);
  const Options o = options_of(kind, tolerance);
  const auto d = run<T, double>(o, p, q);
  const auto f = run<T, float>(o, p, q);
  const std::string op = std::string("tiled pairwise ") + (q ? "" : "q=p ") +
                         divergence_name(kind) +
                         (tolerance > 0 ? " tol " + std::to_string(tolerance) : "");
  const double ed = error_of(d, ref), ef = error_of(f, ref);
  record_error(op, "diag/diag", precision_name<T, double>(), ed);
  record_error(op, "diag/diag", precision_name<T, float>(), ef);
  EXPECT_LE(ed, (bar<T, double>(tolerance))) << op;
  EXPECT_LE(ef, (bar<T, float>(tolerance))) << op;
  for (std::size_t e = 0; e < d.size(); ++e) {
    ASSERT_GE(d[e], 0.0) << "entry " << e;
  }
  if (!q) {
    for (std::int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(d[static_cast<std::size_t>(i * n + i)], 0.0) << "row " << i;
      EXPECT_EQ(f[static_cast<std::size_t>(i * n + i)], 0.0f) << "row " << i;
      for (std::int64_t j = 0; j < i && is_symmetric(kind); ++j) {
        ASSERT_EQ(d[static_cast<std::size_t>(i * n + j)], d[static_cast<std::size_t>(j * n + i)])
            << i << ", " << j;
      }
    }
  }
  if (with_knn) {
    check_knn<T>(o, p, q, d, std::min<std::int64_t>(3, m), false);
    if (!q) check_knn<T>(o, p, q, d, std::min<std::int64_t>(2, m - 1), true);
  }
}

template <class T>
void check_data(Divergence kind, Rng& rng, Data data, DiagParam pp, DiagParam pq, std::int64_t n,
                std::int64_t m, std::int64_t d, bool with_knn = true) {
  const std::string what = std::string(divergence_name(kind)) + ", " + name(data) + ", " +
                           std::string(param_name(pp)) + " || " + param_name(pq) + ", n " +
                           std::to_string(n) + " m " + std::to_string(m) + " d " +
                           std::to_string(d);
  const std::int64_t mq = q_derived_from_p(data) ? n : m;
  const auto [ps, qs] = specs(rng, data, n, mq, d);
  const DiagBatch<T> p = make_diag<T>(ps, pp), q = make_diag<T>(qs, pq);
  const auto pv = p.view(), qv = q.view();
  check<T>(kind, pv, &qv, what, 0, with_knn);
  if (pp == pq) {
    // q = p: the rows of p and then of q in one batch, so that near-duplicate and identical
    // pairs meet off the diagonal.
    const DiagBatch<T> both = make_diag<T>(concat(ps, qs), pp);
    const auto bv = both.view();
    check<T>(kind, bv, nullptr, what + ", q = p", 0, with_knn);
  }
}

// Every kind of data, parameterization (same on both sides, and mixed), precision, at sizes
// below a tile and across several (D up to 300: more than one KC block of the kernel).
TEST(DivergenceFastPairs, AgainstTheReference) {
  Rng rng(1500);
  for (const Divergence kind : fast_kinds()) {
    for (const Data data : all_data()) {
      for (const DiagParam pp : kParams) {
        for (const DiagParam pq : kParams) {
          check_data<double>(kind, rng, data, pp, pq, 5, 7, 6);
          check_data<float>(kind, rng, data, pp, pq, 5, 7, 6);
        }
        check_data<double>(kind, rng, data, pp, pp, 9, 11, 64);
        check_data<float>(kind, rng, data, pp, pp, 9, 11, 64);
      }
      check_data<double>(kind, rng, data, DiagParam::var, DiagParam::var, 4, 3, 300);
      check_data<float>(kind, rng, data, DiagParam::logvar, DiagParam::logvar, 4, 3, 300);
    }
  }
}

// D = 1024; and N, M over a panel of the kernel (256): tiles at the edges, several row chunks,
// the mirrored tiles of q = p.
TEST(DivergenceFastPairs, LargeShapes) {
  Rng rng(1501);
  for (const Divergence kind : fast_kinds()) {
    check_data<double>(kind, rng, Data::adversarial, DiagParam::precision, DiagParam::precision, 2,
                       2, 1024);
    check_data<double>(kind, rng, Data::near_duplicate_1e8, DiagParam::var, DiagParam::var, 2, 2,
                       1024);
    // q = p: 260 rows (p's 130 and their near-duplicates); q != p: 130 x 130.
    check_data<double>(kind, rng, Data::near_duplicate_1e4, DiagParam::logvar, DiagParam::logvar,
                       130, 130, 4, false);
    // q != p: 130 x 270.
    check_data<float>(kind, rng, Data::adversarial, DiagParam::stddev, DiagParam::stddev, 130, 270,
                      4, false);
  }
}

// Every compiled SIMD target (AVX2-only CPUs run the AVX2 kernels): bhattacharyya and hellinger on
// their own kernel, jeffreys and wasserstein2 on KL's.
TEST(DivergenceFastPairs, EveryTarget) {
  Rng rng(1504);
  for (const std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (const Divergence kind : fast_kinds()) {
      for (const Data data : {Data::adversarial, Data::near_duplicate_1e8}) {
        check_data<double>(kind, rng, data, DiagParam::var, DiagParam::var, 9, 11, 64);
        check_data<float>(kind, rng, data, DiagParam::logvar, DiagParam::stddev, 5, 7, 37);
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Variances far out (1e-250, 1e250 on some rows), where bhattacharyya's kernel cannot keep its
// products normal (bhat_range_ok): those pairs are computed exactly, the others certified. (The
// other kinds' values overflow there.)
TEST(DivergenceFastPairs, ExtremeVariances) {
  Rng rng(1505);
  for (const Divergence kind : {Divergence::bhattacharyya, Divergence::hellinger}) {
    DiagSpec ps = diag_spec(rng, 7, 20, {}), qs = diag_spec(rng, 6, 20, {});
    for (std::int64_t h = 0; h < 20; h += 3) {
      ps.stddev[static_cast<std::size_t>(2 * 20 + h)] = 1e-125;
      qs.stddev[static_cast<std::size_t>(4 * 20 + h)] = 1e125;
    }
    const DiagBatch<double> p = make_diag<double>(ps, DiagParam::var),
                            q = make_diag<double>(qs, DiagParam::var);
    const auto pv = p.view(), qv = q.view();
    check<double>(kind, pv, &qv, "extreme variances");
    const DiagBatch<double> both = make_diag<double>(concat(ps, qs), DiagParam::var);
    const auto bv = both.view();
    check<double>(kind, bv, nullptr, "extreme variances, q = p");
  }
}

// Means so far apart that the kernel's fraction N overflows (variances 1e30, means 1e50 apart:
// B = 1.25e69, finite): the kernel's bound is then inf, which certifies nothing, and the exact
// per-pair form gives the value (the kernel certified inf before). Every target.
TEST(DivergenceFastPairs, OverflowIsNotCertified) {
  for (const Divergence kind : {Divergence::bhattacharyya, Divergence::hellinger}) {
    DiagSpec ps{}, qs{};
    ps.n = qs.n = 3;
    ps.d = qs.d = 8;
    ps.mean.assign(24, 0.0);
    qs.mean.assign(24, 0.0);
    ps.stddev.assign(24, 1e15);
    qs.stddev.assign(24, 1e15);
    qs.mean[0] = 1e50;   // pair (0, 0): B = 1e100 / (8 * 1e30)
    qs.mean[8] = -1e50;  // pair (i, 1)
    const DiagBatch<double> p = make_diag<double>(ps, DiagParam::stddev),
                            q = make_diag<double>(qs, DiagParam::stddev);
    const auto pv = p.view(), qv = q.view();
    for (const std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
      hwy::SetSupportedTargetsForTest(target);
      const std::vector<double> got = run<double, double>(options_of(kind), pv, &qv);
      EXPECT_TRUE(std::isfinite(got[0])) << hwy::TargetName(target);
      if (kind == Divergence::bhattacharyya) {
        EXPECT_NEAR(got[0] / 1.25e69, 1.0, 1e-13) << hwy::TargetName(target);
        EXPECT_EQ(got[1], got[0]);
        EXPECT_EQ(got[2], 0.0);
      }
      // Every entry against the reference (float results overflow: 1.25e69 is past FLT_MAX).
      const std::vector<long double> ref = reference_of(kind, pv, qv, false);
      EXPECT_LE(error_of(got, ref), 1e-13) << hwy::TargetName(target);
    }
    hwy::SetSupportedTargetsForTest(0);
  }
}

// Looser tolerances bound every entry too (fewer entries recomputed).
TEST(DivergenceFastPairs, ToleranceBoundsEveryEntry) {
  Rng rng(1502);
  for (const Divergence kind : fast_kinds()) {
    for (const Data data : {Data::random, Data::adversarial, Data::near_duplicate_1e4}) {
      for (const DiagParam param : kParams) {
        const auto [ps, qs] = specs(rng, data, 6, 6, 20);
        const DiagBatch<float> p = make_diag<float>(ps, param), q = make_diag<float>(qs, param);
        const auto pv = p.view(), qv = q.view();
        for (const double tolerance : {1e-5, 1e-3})
          check<float>(kind, pv, &qv, name(data) + " " + param_name(param), tolerance, false);
      }
    }
  }
}

// Blocks of rows (a memory budget) give the same bits as one block, whatever their boundaries
// against the kernel's panels; pairwise_rows hands the same rows; knn within a budget too.
TEST(DivergenceFastPairs, BlocksGiveTheSameBits) {
  Rng rng(1503);
  for (const Divergence kind : fast_kinds()) {
    const DiagSpec ps = diag_spec(rng, 300, 5, kAdversarial);
    const DiagBatch<double> pb = make_diag<double>(ps, DiagParam::logvar);
    const DiagGaussians<double> p = pb.view();
    const auto whole = run<double, double>(options_of(kind), p, nullptr);
    const Gaussians<double> gp(p);
    const cpu::PairsConfig config =
        detail::plan_pairs<double>(gp, nullptr, options_of(kind)).backend;
    ASSERT_TRUE(config.diag_tiles);
    const cpu::PairsBytes bytes = cpu::PairsEngine<double>::footprint(gp, nullptr, config);
    for (const std::int64_t rows : {1, 37, 256, 299}) {
      SCOPED_TRACE(std::to_string(rows) + " rows per block");
      const std::int64_t budget = bytes.kept + bytes.work + rows * 300 * 8;
      std::vector<std::int64_t> firsts;
      std::vector<double> got(whole.size(), -1);
      pairwise_rows(
          gp, nullptr,
          RowSink<double>([&](std::int64_t first, std::int64_t count, std::span<const double> b) {
            firsts.push_back(first);
            EXPECT_EQ(static_cast<std::int64_t>(b.size()), count * 300);
            std::copy(b.begin(), b.end(), got.begin() + first * 300);
          }),
          options_of(kind, 0, budget));
      EXPECT_EQ(got, whole);
      EXPECT_EQ(static_cast<std::int64_t>(firsts.size()), (300 + rows - 1) / rows);
      const auto in_blocks = run<double, double>(options_of(kind, 0, budget), p, nullptr);
      EXPECT_EQ(in_blocks, whole);
    }
    check_knn<double>(options_of(kind, 0, bytes.kept + bytes.work + (1 << 20)), p, nullptr, whole,
                      4, true);
  }
}

// The plan sends two diagonal sides of jeffreys, wasserstein2, bhattacharyya and hellinger to the
// tiled path, nothing else.
TEST(DivergenceFastPairs, PlanChoosesTheTiledPath) {
  const std::vector<double> mean(6, 0.0), s(6, 1.0);
  const Gaussians<double> p(DiagGaussians<double>{contiguous<double, 2>(mean.data(), {2, 3}),
                                                  contiguous<double, 2>(s.data(), {2, 3})});
  for (const Divergence kind :
       {Divergence::jeffreys, Divergence::wasserstein2, Divergence::bhattacharyya,
        Divergence::hellinger, Divergence::renyi}) {
    const Options o = options_of(kind);
    const cpu::PairsConfig c = detail::plan_pairs<double>(p, nullptr, o).backend;
    EXPECT_TRUE(c.diag_tiles) << divergence_name(kind);
    EXPECT_EQ(c.tolerance, limits::default_tolerance<double>);
  }
  // renyi of an order > 1 (its mixed variances may fail): the per-pair forms.
  Options o = options_of(Divergence::renyi);
  o.alpha = 2;
  EXPECT_FALSE(detail::plan_pairs<double>(p, nullptr, o).backend.diag_tiles);
}

}  // namespace
}  // namespace gausskl::test
