// gausskl::knn_kl against a brute-force sort of the pairwise matrix and the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "gausskl/ops.hpp"
#include "support/batches.hpp"
#include "support/generators.hpp"
#include "support/oracle.hpp"

namespace gausskl::test {
namespace {

template <class U>
struct Neighbours {
  std::vector<std::int64_t> indices;
  std::vector<U> values;
};

// q == nullptr: knn of p against itself.
template <class T, class U>
Neighbours<U> run_knn(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t k,
                      const Options& options = {}) {
  Neighbours<U> out{std::vector<std::int64_t>(p.n() * k, -1), std::vector<U>(p.n() * k)};
  if (q) {
    knn_kl(p, *q, k, std::span<std::int64_t>(out.indices), std::span<U>(out.values), options);
  } else {
    knn_kl(p, k, std::span<std::int64_t>(out.indices), std::span<U>(out.values), options);
  }
  return out;
}

// Per row of an [N, M] matrix, the k column indices with the smallest (value, index).
std::vector<std::int64_t> brute_force(const std::vector<double>& all, std::int64_t m,
                                      std::int64_t k, bool exclude_self) {
  const std::int64_t n = static_cast<std::int64_t>(all.size()) / m;
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<std::int64_t> order;
    for (std::int64_t j = 0; j < m; ++j)
      if (!(exclude_self && j == i)) order.push_back(j);
    const double* row = &all[i * m];
    std::sort(order.begin(), order.end(), [row](std::int64_t a, std::int64_t b) {
      return row[a] < row[b] || (row[a] == row[b] && a < b);
    });
    out.insert(out.end(), order.begin(), order.begin() + k);
  }
  return out;
}

// knn_kl into double and float values: indices as brute force over the op's own pairwise
// matrix, values within the bar of the reference.
template <class T>
void check_knn(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t k, const std::string& row,
               bool exclude_self = false) {
  const Gaussians<T>& qq = q ? *q : p;
  const std::int64_t m = qq.n();
  std::vector<double> all(p.n() * m);
  if (q) {
    pairwise_kl(p, *q, std::span<double>(all));
  } else {
    pairwise_kl(p, std::span<double>(all));
  }
  const std::vector<std::int64_t> expected = brute_force(all, m, k, exclude_self);
  const std::vector<long double> ref = reference_pairwise(p, qq);
  std::vector<long double> ref_at;
  for (std::size_t r = 0; r < expected.size(); ++r)
    ref_at.push_back(ref[r / k * m + expected[r]]);

  const Options options{.exclude_self = exclude_self};
  const auto d = run_knn<T, double>(p, q, k, options);
  const auto f = run_knn<T, float>(p, q, k, options);
  EXPECT_EQ(d.indices, expected);
  EXPECT_EQ(f.indices, expected);
  expect_within_bar<T, double>("knn_kl", row, std::span<const double>(d.values), ref_at);
  expect_within_bar<T, float>("knn_kl", row, std::span<const float>(f.values), ref_at);
}

TEST(KnnKl, MatchesBruteForce) {
  Rng rng(30);
  for (const Data data : {Data::random, Data::adversarial, Data::near_duplicate_1e4})
    for (const Layout& lp : all_layouts())
      for (const Layout& lq : all_layouts()) {
        if (q_derived_from_p(data) && lp.family != lq.family) continue;
        const auto [ps, qs] = make_specs(rng, data, lp.family, lq.family, 6, 6, 5);
        const Batch<double> p = make_batch<double>(ps, lp), q = make_batch<double>(qs, lq);
        const Batch<float> pf = make_batch<float>(ps, lp), qf = make_batch<float>(qs, lq);
        const Gaussians<double> qv = q.view();
        const Gaussians<float> qfv = qf.view();
        for (const std::int64_t k : {1, 3, 6}) {
          SCOPED_TRACE(name(data) + ", " + name(lp) + " || " + name(lq) +
                       ", k = " + std::to_string(k));
          check_knn<double>(p.view(), &qv, k, pair_name(lp.family, lq.family));
          check_knn<float>(pf.view(), &qfv, k, pair_name(lp.family, lq.family));
        }
      }
}

// Packed factors (with and without log diagonals) through knn: the same neighbours and values as
// the scale_tril with the same entries (bitwise without log diagonals; with them, against exp(x)
// rounded to double, values within 1e-14 (|KL| + 1): knn re-scores exactly), from contiguous and
// restrided views, and against the brute force and the reference.
TEST(KnnKl, PackedMatchesScaleTril) {
  Rng rng(35);
  for (const Data data : {Data::random, Data::adversarial, Data::near_duplicate_1e4})
    for (const Layout& packed : packed_layouts())
      for (const Layout& other : packed_partners()) {
        if (q_derived_from_p(data) && other.family != Family::full) continue;
        SCOPED_TRACE(name(data) + ", " + name(packed) + " || " + name(other));
        const auto [ps, qs] = make_specs(rng, data, Family::full, other.family, 6, 6, 5);
        const Batch<double> p = make_batch<double>(ps, packed), q = make_batch<double>(qs, other);
        const Batch<double> tril = {unpacked<double>(std::get<FullBatch<double>>(p.b))};
        std::vector<std::vector<double>> storage;
        const Gaussians<double> pv = p.view(), qv = q.view(), tv = tril.view();
        const Gaussians<double> p_s = restrided(pv, storage);
        for (const std::int64_t k : {1, 4}) {
          check_knn<double>(pv, &qv, k, pair_name(Family::full, other.family));
          check_knn<double>(qv, &pv, k, pair_name(other.family, Family::full));
          check_knn<double>(pv, nullptr, k, "full/full", true);
          const auto a = run_knn<double, double>(pv, &qv, k);
          const auto b = run_knn<double, double>(qv, &pv, k);
          const auto self = run_knn<double, double>(pv, nullptr, k);
          const auto a_t = run_knn<double, double>(tv, &qv, k);
          const auto b_t = run_knn<double, double>(qv, &tv, k);
          const auto self_t = run_knn<double, double>(tv, nullptr, k);
          EXPECT_EQ(a.indices, a_t.indices);
          EXPECT_EQ(b.indices, b_t.indices);
          EXPECT_EQ(self.indices, self_t.indices);
          if (!packed.log_diagonal) {
            EXPECT_EQ(a.values, a_t.values);
            EXPECT_EQ(b.values, b_t.values);
            EXPECT_EQ(self.values, self_t.values);
          }
          const double most =
              std::max({max_difference(a.values, a_t.values), max_difference(b.values, b_t.values),
                        max_difference(self.values, self_t.values)});
          record_error("packed vs scale_tril", "knn_kl", packed.log_diagonal ? "log" : "plain",
                       most);
          EXPECT_LE(most, 1e-14);
          const auto strided = run_knn<double, double>(p_s, &qv, k);
          EXPECT_EQ(strided.indices, a.indices);
          EXPECT_EQ(strided.values, a.values);
        }
      }
}

// Repeated rows of q give exactly equal values, which must come in index order.
TEST(KnnKl, TiesGoToTheLowerIndex) {
  Rng rng(31);
  for (const Layout& lp : family_layouts())
    for (const Layout& lq : family_layouts()) {
      SCOPED_TRACE(name(lp) + " || " + name(lq));
      const auto [ps, qs] = make_specs(rng, Data::adversarial, lp.family, lq.family, 4, 4, 5);
      const std::vector<std::int64_t> rows = {2, 0, 1, 2, 0, 3, 1, 2};
      const Batch<double> p = make_batch<double>(ps, lp);
      const Batch<double> q = make_batch<double>(take_rows(qs, rows), lq);
      const Gaussians<double> qv = q.view();
      check_knn<double>(p.view(), &qv, 8, pair_name(lp.family, lq.family));
      const auto got = run_knn<double, double>(p.view(), &qv, 8);
      for (std::int64_t i = 0; i < 4; ++i)
        for (std::int64_t r = 0; r + 1 < 8; ++r) {
          const std::int64_t a = got.indices[i * 8 + r], b = got.indices[i * 8 + r + 1];
          if (rows[a] == rows[b]) {
            EXPECT_LT(a, b) << "row " << i;
          }
        }

      // Every q the same: the first k indices.
      const Batch<double> same = make_batch<double>(take_rows(qs, {1, 1, 1, 1, 1}), lq);
      const Gaussians<double> sv = same.view();
      const auto firsts = run_knn<double, double>(p.view(), &sv, 3);
      for (std::int64_t i = 0; i < 4; ++i)
        EXPECT_EQ(std::vector<std::int64_t>(firsts.indices.begin() + i * 3,
                                            firsts.indices.begin() + i * 3 + 3),
                  (std::vector<std::int64_t>{0, 1, 2}));
    }
}

// Without q: each p_i finds itself first at exactly 0 (or an identical row with a lower
// index); with exclude_self it never finds itself, but still finds its duplicates.
TEST(KnnKl, SelfAndExcludeSelf) {
  Rng rng(32);
  for (const Layout& layout : all_layouts()) {
    SCOPED_TRACE(name(layout));
    const auto [spec, unused] =
        make_specs(rng, Data::adversarial, layout.family, layout.family, 5, 5, 4);
    const std::vector<std::int64_t> rows = {0, 1, 2, 3, 1, 4};
    const Batch<double> p = make_batch<double>(take_rows(spec, rows), layout);
    const std::string row = pair_name(layout.family, layout.family);
    for (const std::int64_t k : {1, 3, 6})
      check_knn<double>(p.view(), nullptr, k, row);
    for (const std::int64_t k : {1, 2, 5})
      check_knn<double>(p.view(), nullptr, k, row, true);

    const auto others = run_knn<double, double>(p.view(), nullptr, 5, {.exclude_self = true});
    for (std::int64_t i = 0; i < 6; ++i)
      for (std::int64_t r = 0; r < 5; ++r)
        EXPECT_NE(others.indices[i * 5 + r], i);
    if (layout.family == Family::lowrank) continue;  // duplicates are 0 only up to the bar
    const auto self = run_knn<double, double>(p.view(), nullptr, 1);
    EXPECT_EQ(self.indices, (std::vector<std::int64_t>{0, 1, 2, 3, 1, 5}));
    for (const double v : self.values)
      EXPECT_EQ(v, 0.0);
    EXPECT_EQ(others.indices[1 * 5], 4);
    EXPECT_EQ(others.values[1 * 5], 0.0);
  }
}

// Rows spread over several threads: the same neighbours for any thread count.
TEST(KnnKl, SameResultsForAnyThreadCount) {
  Rng rng(33);
  const auto [ps, qs] = make_specs(rng, Data::random, Family::full, Family::lowrank, 41, 30, 6);
  const Batch<double> p = make_batch<double>(ps, {Family::full});
  const Batch<double> q = make_batch<double>(qs, {Family::lowrank});
  const Gaussians<double> qv = q.view();
  const auto one = run_knn<double, double>(p.view(), &qv, 7, {.threads = 1});
  for (const int threads : {2, 3, 0}) {
    const auto many = run_knn<double, double>(p.view(), &qv, 7, {.threads = threads});
    EXPECT_EQ(many.indices, one.indices) << threads;
    EXPECT_EQ(many.values, one.values) << threads;
  }
  check_knn<double>(p.view(), &qv, 7, "full/lowrank");
}

// A loose tolerance changes only which candidates are re-scored: the k kept are re-scored
// exactly, so indices and values are those of the default.
TEST(KnnKl, ToleranceKeepsTheExactNeighbours) {
  Rng rng(34);
  for (const Data data : {Data::random, Data::adversarial}) {
    const auto [ps, qs] = make_specs(rng, data, Family::diag, Family::diag, 23, 40, 50);
    const Batch<float> p = make_batch<float>(ps, {Family::diag});
    const Batch<float> q = make_batch<float>(qs, {Family::diag});
    const Gaussians<float> qv = q.view();
    const auto exact = run_knn<float, double>(p.view(), &qv, 6);
    const auto loose = run_knn<float, double>(p.view(), &qv, 6, {.tolerance = 1e-3});
    EXPECT_EQ(loose.indices, exact.indices) << name(data);
    EXPECT_EQ(loose.values, exact.values) << name(data);
  }
}

TEST(KnnKl, NoRowsInP) {
  const DiagBatch<double> none{0, 3, DiagParam::stddev, {}, {}};
  const DiagBatch<double> two{2, 3, DiagParam::stddev, std::vector<double>(6, 0.0),
                              std::vector<double>(6, 1.0)};
  const Gaussians<double> q = two.view();
  const auto got = run_knn<double, double>(none.view(), &q, 2);
  EXPECT_TRUE(got.indices.empty());
}

}  // namespace
}  // namespace gausskl::test
