// gausskl::pairwise, pairwise_rows and knn for every divergence and family pair against the
// long-double reference, with the all-pairs contract: q = p's zero diagonal and mirror, blocks
// within the memory budget, the k smallest of each row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "gausskl/ops.hpp"
#include "support/batches.hpp"
#include "support/generators.hpp"
#include "support/kinds.hpp"
#include "support/oracle.hpp"

namespace gausskl::test {
namespace {

template <class T, class U>
std::vector<U> all_pairs(const Kind& k, const Gaussians<T>& p, const Gaussians<T>* q,
                         std::int64_t budget = 0) {
  const std::int64_t m = q ? q->n() : p.n();
  std::vector<U> out(static_cast<std::size_t>(p.n() * m));
  if (q) {
    pairwise(p, *q, std::span<U>(out), options_of(k, budget));
  } else {
    pairwise(p, std::span<U>(out), options_of(k, budget));
  }
  return out;
}

// knn equals the sorted rows of pairwise, bit for bit in double.
template <class T>
void check_knn(const Kind& k, const Gaussians<T>& p, const Gaussians<T>* q,
               const std::vector<double>& matrix, std::int64_t kk, bool exclude_self,
               std::int64_t budget = 0) {
  const std::int64_t n = p.n(), m = q ? q->n() : n;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(n * kk));
  std::vector<double> val(static_cast<std::size_t>(n * kk));
  Options o = options_of(k, budget);
  o.exclude_self = exclude_self;
  if (q) {
    knn(p, *q, kk, std::span<std::int64_t>(idx), std::span<double>(val), o);
  } else {
    knn(p, kk, std::span<std::int64_t>(idx), std::span<double>(val), o);
  }
  std::vector<std::int64_t> want_idx;
  std::vector<double> want_val;
  sorted_rows(matrix, n, m, kk, exclude_self, want_idx, want_val);
  EXPECT_EQ(idx, want_idx) << name(k);
  EXPECT_EQ(val, want_val) << name(k);
}

// Float and double results within their bars of the reference, never negative, hellinger at most
// 1; with q = p an exact zero diagonal and, for the
// symmetric kinds, a bit-identical mirror; knn the sorted rows. A renyi pair the reference finds
// not positive definite must be an error.
template <class T>
void check(const Kind& k, const Gaussians<T>& p, const Gaussians<T>* q, const std::string& row) {
  const Gaussians<T>& qq = q ? *q : p;
  const std::int64_t n = p.n(), m = qq.n();
  const std::vector<long double> ref = reference_divergence_pairwise(k, p, qq);
  if (std::any_of(ref.begin(), ref.end(), [](long double x) { return std::isnan(x); })) {
    EXPECT_THROW((all_pairs<T, double>(k, p, q)), std::invalid_argument) << name(k);
    return;
  }
  const auto f = all_pairs<T, float>(k, p, q);
  const auto d = all_pairs<T, double>(k, p, q);
  const std::string op = std::string(q ? "pairwise " : "pairwise q=p ") + name(k);
  expect_within_bar<T, float>(op, row, std::span<const float>(f), ref);
  expect_within_bar<T, double>(op, row, std::span<const double>(d), ref);
  for (std::size_t e = 0; e < d.size(); ++e) {
    EXPECT_GE(d[e], 0.0) << name(k) << " entry " << e;
    if (k.kind == Divergence::hellinger) {
      EXPECT_LE(d[e], 1.0) << "entry " << e;
    }
  }
  if (!q) {
    for (std::int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(d[static_cast<std::size_t>(i * n + i)], 0.0) << name(k) << " row " << i;
      if (!is_symmetric(k.kind)) continue;
      for (std::int64_t j = 0; j < i; ++j)
        EXPECT_EQ(d[static_cast<std::size_t>(i * n + j)], d[static_cast<std::size_t>(j * n + i)])
            << name(k) << " " << i << ", " << j;
    }
  }
  check_knn<T>(k, p, q, d, std::min<std::int64_t>(3, m), false);
  if (!q) check_knn<T>(k, p, q, d, std::min<std::int64_t>(2, m - 1), true);
}

TEST(DivergencePairs, AllKindsAllFamilyPairs) {
  Rng rng(160);
  for (const Kind& k : kinds_but_kl())
    for (const Data data : all_data())
      for (const Layout& lp : family_layouts())
        for (const Layout& lq : family_layouts()) {
          if (q_derived_from_p(data) && lp.family != lq.family) continue;
          SCOPED_TRACE(name(k) + ", " + name(data) + ", " + name(lp) + " || " + name(lq));
          const std::int64_t n = 5, m = q_derived_from_p(data) ? 5 : 4;
          const auto [ps, qs] = make_specs(rng, data, lp.family, lq.family, n, m, 5);
          const std::string row = pair_name(lp.family, lq.family);
          const Batch<double> pd = make_batch<double>(ps, lp), qd = make_batch<double>(qs, lq);
          const Gaussians<double> pv = pd.view(), qv = qd.view();
          check<double>(k, pv, &qv, row);
          const Batch<float> pf = make_batch<float>(ps, lp), qf = make_batch<float>(qs, lq);
          const Gaussians<float> pfv = pf.view(), qfv = qf.view();
          check<float>(k, pfv, &qfv, row);
          if (lp.family == lq.family) {
            check<double>(k, pv, nullptr, row);
            check<float>(k, pfv, nullptr, row);
          }
        }
}

// Every diagonal parameterization on both sides, and a larger D.
TEST(DivergencePairs, DiagonalParameterizations) {
  Rng rng(161);
  for (const Kind& k : kinds_but_kl())
    for (const Data data : {Data::adversarial, Data::near_duplicate_1e8})
      for (const Layout& lp : all_layouts())
        for (const Layout& lq : all_layouts()) {
          if (lp.family != Family::diag || lq.family != Family::diag) continue;
          SCOPED_TRACE(name(k) + ", " + name(data) + ", " + name(lp) + " || " + name(lq));
          const auto [ps, qs] = make_specs(rng, data, Family::diag, Family::diag, 6, 6, 64);
          const Batch<double> p = make_batch<double>(ps, lp), q = make_batch<double>(qs, lq);
          const Gaussians<double> pv = p.view(), qv = q.view();
          check<double>(k, pv, &qv, "diag/diag D=64");
        }
}

// kl is pairwise_kl and knn_kl, to the bit.
TEST(DivergencePairs, KlIsTheKlOperations) {
  Rng rng(162);
  for (const Layout& l : family_layouts()) {
    const auto [ps, qs] = make_specs(rng, Data::adversarial, l.family, l.family, 6, 5, 4);
    const Batch<double> p = make_batch<double>(ps, l), q = make_batch<double>(qs, l);
    std::vector<double> a(30), b(30);
    pairwise(p.view(), q.view(), std::span<double>(a), Options{});
    pairwise_kl(p.view(), q.view(), std::span<double>(b));
    EXPECT_EQ(a, b);
    std::vector<std::int64_t> ia(12), ib(12);
    std::vector<double> va(12), vb(12);
    knn(p.view(), q.view(), 2, std::span<std::int64_t>(ia), std::span<double>(va), Options{});
    knn_kl(p.view(), q.view(), 2, std::span<std::int64_t>(ib), std::span<double>(vb));
    EXPECT_EQ(ia, ib);
    EXPECT_EQ(va, vb);
  }
}

// Blocks within the budget give the same bits; a budget below one row is the budget's error; the
// progress callback sees every block; pairwise_rows hands the same rows to its sink.
TEST(DivergencePairs, BudgetBlocksProgressAndRows) {
  Rng rng(163);
  for (const Kind& k : kinds_but_kl())
    for (const Layout& l : family_layouts()) {
      SCOPED_TRACE(name(k) + ", " + name(l));
      const auto [ps, qs] = make_specs(rng, Data::random, l.family, l.family, 9, 9, 3);
      const Batch<double> pb = make_batch<double>(ps, l);
      const Gaussians<double> p = pb.view();
      std::vector<double> whole;
      try {
        whole = all_pairs<double, double>(k, p, nullptr);
      } catch (const std::invalid_argument&) {
        continue;  // renyi of order 2 on random data: infinite somewhere
      }
      // The smallest budget that holds one row, found by bisection: blocks of one row.
      const auto fits = [&](std::int64_t budget) {
        try {
          EXPECT_EQ((all_pairs<double, double>(k, p, nullptr, budget)), whole);
          return true;
        } catch (const MemoryBudgetError& e) {
          EXPECT_NE(std::string(e.what()).find("[pairwise]"), std::string::npos) << e.what();
          return false;
        }
      };
      std::int64_t lo = 1, hi = 8;
      while (!fits(hi))
        hi *= 2;
      while (hi - lo > 1) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        (fits(mid) ? hi : lo) = mid;
      }
      const std::int64_t budget = hi;
      // The float sink's rows take 4 bytes an entry more (the conversion).
      Options o = options_of(k, budget + 9 * 4);
      std::vector<std::int64_t> done;
      o.progress = [&](std::int64_t d, std::int64_t total) {
        EXPECT_EQ(total, 9);
        done.push_back(d);
      };
      std::vector<float> rows(81, -1);
      pairwise_rows(
          p, nullptr,
          RowSink<float>([&](std::int64_t first, std::int64_t count, std::span<const float> b) {
            std::copy(b.begin(), b.end(), rows.begin() + first * 9);
            EXPECT_EQ(static_cast<std::int64_t>(b.size()), count * 9);
          }),
          o);
      EXPECT_GT(done.size(), 1u);
      EXPECT_EQ(done.back(), 9);
      for (std::size_t e = 0; e < rows.size(); ++e)
        EXPECT_EQ(rows[e], static_cast<float>(whole[e])) << e;
      // knn: its selection buffers on top, and rows of (M + k) doubles.
      check_knn<double>(k, p, nullptr, whole, 3, true, budget + 4096);
    }
}

TEST(DivergencePairs, RenyiNotPositiveDefiniteNamesThePair) {
  const auto [pb, qb] = renyi3_infinite_pair();
  const DiagGaussians<double> p = pb.view(), q = qb.view();
  std::vector<double> out(4);
  try {
    pairwise(p, q, std::span<double>(out), options_of({Divergence::renyi, 3}));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "[pairwise] the renyi divergence is infinite at p row 1 and q row 0"),
              std::string::npos)
        << e.what();
  }
  std::vector<std::int64_t> idx(2);
  std::vector<double> val(2);
  EXPECT_THROW(knn(p, q, 1, std::span<std::int64_t>(idx), std::span<double>(val),
                   options_of({Divergence::renyi, 3})),
               std::invalid_argument);
}

TEST(DivergencePairs, Rules) {
  const std::vector<double> mean(4, 0.0), s(4, 1.0);
  const DiagGaussians<double> p{contiguous<double, 2>(mean.data(), {2, 2}),
                                contiguous<double, 2>(s.data(), {2, 2})};
  std::vector<double> out(3);
  EXPECT_THROW(pairwise(p, std::span<double>(out), options_of({Divergence::jeffreys})),
               std::invalid_argument);
  std::vector<std::int64_t> idx(4);
  std::vector<double> val(4);
  Options o = options_of({Divergence::hellinger});
  o.exclude_self = true;
  try {
    knn(p, 2, std::span<std::int64_t>(idx), std::span<double>(val), o);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[knn] k"), std::string::npos) << e.what();
  }
  Options bad = options_of({Divergence::renyi, 0});
  EXPECT_THROW(pairwise(p, std::span<double>(out), bad), OptionError);
}

}  // namespace
}  // namespace gausskl::test
