// MomentAccumulator and fit_gaussian against the long-double two-pass reference
// (reference::moments): any split of the rows, any merge order, one row at a time, a mean large
// against the spread; and every rule.
#include "gausskl/moments.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/reference.hpp"
#include "gausskl/errors.hpp"

namespace gausskl::test {
namespace {

template <class T>
std::vector<T> random_rows(std::int64_t n, std::int64_t d, double mean, double spread,
                           unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> centre(d), scale(d);
  for (std::int64_t j = 0; j < d; ++j) {
    centre[j] = mean * (1 + 0.1 * normal(rng));
    scale[j] = spread * (0.5 + std::abs(normal(rng)));
  }
  std::vector<T> x(n * d);
  for (std::int64_t r = 0; r < n; ++r) {
    // Correlated columns: each a mix of its own noise and the row's first draw.
    const double shared = normal(rng);
    for (std::int64_t j = 0; j < d; ++j)
      x[r * d + j] = static_cast<T>(centre[j] + scale[j] * (0.6 * normal(rng) + 0.8 * shared));
  }
  return x;
}

template <class T>
View<T, 2> rows_of(const std::vector<T>& x, std::int64_t d, std::int64_t first, std::int64_t n) {
  return contiguous<T, 2>(x.data() + first * d, {n, d});
}

// The accumulator's mean and covariance (ddof 1) against the reference's, each entry relative to
// the largest of its kind (a covariance entry near 0 has no relative error of its own).
template <class T>
void expect_matches(const MomentAccumulator& a, const View<T, 2>& x, double bar,
                    const std::string& what) {
  std::vector<long double> mean, scatter;
  reference::moments(x, mean, scatter);
  const std::int64_t d = x.shape[1], n = x.shape[0];
  ASSERT_EQ(a.count(), n) << what;
  long double mean_scale = 0, cov_scale = 0;
  for (std::int64_t j = 0; j < d; ++j) {
    mean_scale = std::max(mean_scale, std::abs(mean[j]));
    cov_scale = std::max(cov_scale, scatter[j * d + j] / (n - 1));
  }
  const bool full = a.family() == MomentFamily::full;
  std::vector<double> cov(full ? d * d : d);
  a.covariance(cov);
  for (std::int64_t j = 0; j < d; ++j) {
    EXPECT_LE(std::abs(a.mean()[j] - mean[j]) / mean_scale, bar) << what << ": mean " << j;
  }
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j < d; ++j) {
      if (!full && i != j) continue;
      const long double ref = scatter[i * d + j] / (n - 1);
      const double got = full ? cov[i * d + j] : cov[i];
      EXPECT_LE(std::abs(got - ref) / cov_scale, bar) << what << ": covariance " << i << ", " << j;
    }
  }
}

TEST(MomentAccumulator, OneUpdateMatchesTheReference) {
  const std::int64_t n = 300, d = 17;
  const auto x = random_rows<double>(n, d, 2.0, 1.5, 1);
  MomentAccumulator a(d);
  a.update(rows_of(x, d, 0, n));
  expect_matches(a, rows_of(x, d, 0, n), 1e-14, "double");
  const auto xf = random_rows<float>(n, d, 2.0, 1.5, 2);
  MomentAccumulator b(d);
  b.update(rows_of(xf, d, 0, n));
  expect_matches(b, rows_of(xf, d, 0, n), 1e-14, "float");
}

// float32 features of mean 1e3 and spread 0.1 (FID's worst case for raw sums): the covariance
// within 1e-10 of the long-double one of the same float values.
TEST(MomentAccumulator, LargeMeanAgainstTheSpread) {
  const std::int64_t n = 4000, d = 12;
  const auto x = random_rows<float>(n, d, 1e3, 0.1, 3);
  MomentAccumulator a(d);
  a.update(rows_of(x, d, 0, 1500));
  a.update(rows_of(x, d, 1500, n - 1500));
  expect_matches(a, rows_of(x, d, 0, n), 1e-12, "mean 1e3, std 0.1");
}

TEST(MomentAccumulator, AnySplitAndMergeOrderGivesTheSameMoments) {
  const std::int64_t n = 257, d = 9;
  const auto x = random_rows<double>(n, d, 50.0, 0.5, 4);
  const std::vector<std::int64_t> cuts = {0, 1, 2, 40, 41, 100, 180, 256, n};
  std::vector<MomentAccumulator> parts;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    parts.emplace_back(d);
    parts.back().update(rows_of(x, d, cuts[k], cuts[k + 1] - cuts[k]));
  }
  // In order, in reverse, and as a tree of pairs.
  MomentAccumulator forward(d), backward(d);
  for (const auto& p : parts)
    forward.merge(p);
  for (auto it = parts.rbegin(); it != parts.rend(); ++it)
    backward.merge(*it);
  std::vector<MomentAccumulator> level = parts;
  while (level.size() > 1) {
    std::vector<MomentAccumulator> next;
    for (std::size_t k = 0; k < level.size(); k += 2) {
      next.push_back(level[k]);
      if (k + 1 < level.size()) next.back().merge(level[k + 1]);
    }
    level = next;
  }
  const View<double, 2> all = rows_of(x, d, 0, n);
  expect_matches(forward, all, 1e-14, "forward");
  expect_matches(backward, all, 1e-14, "backward");
  expect_matches(level[0], all, 1e-14, "tree");
}

TEST(MomentAccumulator, OneRowAtATimeAndEmptyUpdates) {
  const std::int64_t n = 64, d = 5;
  const auto x = random_rows<float>(n, d, 1e3, 0.1, 5);
  MomentAccumulator a(d);
  for (std::int64_t r = 0; r < n; ++r) {
    a.update(rows_of(x, d, r, 1));
    a.update(rows_of(x, d, r, 0));
  }
  expect_matches(a, rows_of(x, d, 0, n), 1e-12, "one row at a time");
  MomentAccumulator one(d);
  one.update(rows_of(x, d, 7, 1));
  EXPECT_EQ(one.count(), 1);
  for (std::int64_t j = 0; j < d; ++j)
    EXPECT_EQ(one.mean()[j], static_cast<double>(x[7 * d + j]));
}

TEST(MomentAccumulator, StridedRowsAndColumns) {
  const std::int64_t n = 50, d = 6;
  const auto x = random_rows<double>(n, 2 * d, 1.0, 1.0, 6);
  // Every other column of every other row.
  const View<double, 2> v = strided<double, 2>(std::span<const double>(x), {n / 2, d}, {4 * d, 2});
  MomentAccumulator a(d);
  a.update(v);
  expect_matches(a, v, 1e-14, "strided");
}

TEST(MomentAccumulator, DiagIsTheFullDiagonal) {
  const std::int64_t n = 200, d = 8;
  const auto x = random_rows<float>(n, d, 1e3, 0.1, 7);
  MomentAccumulator diag(d, MomentFamily::diag);
  diag.update(rows_of(x, d, 0, 120));
  MomentAccumulator rest(d, MomentFamily::diag);
  rest.update(rows_of(x, d, 120, n - 120));
  diag.merge(rest);
  expect_matches(diag, rows_of(x, d, 0, n), 1e-12, "diag");
}

// Large D, several chunks of an update (16 MiB of rows each: 1024 rows at D = 2048), several
// workers: entries on a grid of columns against the reference of those columns.
TEST(MomentAccumulator, ChunksAndThreadsAtLargeD) {
  const std::int64_t n = 1100, d = 2048, step = 293;
  const auto x = random_rows<float>(n, d, 1e3, 0.1, 8);
  MomentAccumulator one(d, MomentFamily::full, 1), two(d, MomentFamily::full, 2);
  one.update(rows_of(x, d, 0, n));
  two.update(rows_of(x, d, 0, n));
  std::vector<double> c1(d * d), c2(d * d);
  one.covariance(c1);
  two.covariance(c2);
  EXPECT_EQ(c1, c2) << "the result depends on the thread count";
  const std::int64_t k = (d + step - 1) / step;
  const View<float, 2> grid{x.data(), {n, k}, {d, step}};
  std::vector<long double> mean, scatter;
  reference::moments(grid, mean, scatter);
  for (std::int64_t i = 0; i < k; ++i) {
    EXPECT_LE(std::abs(one.mean()[i * step] - mean[i]) / 1e3, 1e-14);
    for (std::int64_t j = 0; j < k; ++j) {
      const long double ref = scatter[i * k + j] / (n - 1);
      EXPECT_LE(std::abs(c1[i * step * d + j * step] - ref) / 0.01, 1e-10) << i << ", " << j;
    }
  }
}

TEST(MomentAccumulator, ThreadsDoNotChangeTheBits) {
  const std::int64_t n = 500, d = 150;
  const auto x = random_rows<double>(n, d, 3.0, 2.0, 9);
  MomentAccumulator one(d, MomentFamily::full, 1), two(d, MomentFamily::full, 2);
  one.update(rows_of(x, d, 0, n));
  two.update(rows_of(x, d, 0, n));
  std::vector<double> c1(d * d), c2(d * d);
  one.scatter(c1);
  two.scatter(c2);
  EXPECT_EQ(c1, c2);
}

TEST(MomentAccumulator, StateRoundTrip) {
  const std::int64_t n = 30, d = 4;
  const auto x = random_rows<double>(n, d, 1.0, 1.0, 10);
  MomentAccumulator a(d);
  a.update(rows_of(x, d, 0, 20));
  std::vector<double> s(d * d);
  a.scatter(s);
  MomentAccumulator b = MomentAccumulator::from_state(a.count(), a.mean(), s, MomentFamily::full);
  b.update(rows_of(x, d, 20, 10));
  a.update(rows_of(x, d, 20, 10));
  std::vector<double> ca(d * d), cb(d * d);
  a.covariance(ca);
  b.covariance(cb);
  EXPECT_EQ(ca, cb);
}

TEST(FitGaussian, MatchesTheReferenceWithDdof) {
  const std::int64_t n = 100, d = 6;
  const auto x = random_rows<float>(n, d, 1e3, 0.1, 11);
  std::vector<double> mean(d), cov(d * d), cov0(d * d), var(d);
  fit_gaussian(rows_of(x, d, 0, n), mean, cov);
  fit_gaussian(rows_of(x, d, 0, n), mean, cov0, 0);
  fit_gaussian(rows_of(x, d, 0, n), mean, var, 1, MomentFamily::diag);
  std::vector<long double> rm, rs;
  reference::moments(rows_of(x, d, 0, n), rm, rs);
  for (std::int64_t i = 0; i < d; ++i) {
    EXPECT_NEAR(var[i], static_cast<double>(rs[i * d + i] / (n - 1)), 1e-12 * 0.01);
    for (std::int64_t j = 0; j < d; ++j) {
      EXPECT_NEAR(cov[i * d + j], static_cast<double>(rs[i * d + j] / (n - 1)), 1e-12 * 0.01);
      EXPECT_NEAR(cov0[i * d + j], static_cast<double>(rs[i * d + j] / n), 1e-12 * 0.01);
    }
  }
}

// The message of what `call` throws as std::invalid_argument; "" if it does not throw.
template <class Call>
std::string error_of(Call&& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(dynamic_cast<const Error*>(&e), nullptr);
    return e.what();
  }
  return "";
}

TEST(MomentAccumulator, Rules) {
  const std::int64_t d = 3;
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  MomentAccumulator a(d);
  a.update(rows_of(x, d, 0, 2));
  EXPECT_EQ(error_of([] { MomentAccumulator(0); }), "[MomentAccumulator] D must be >= 1, found 0");
  EXPECT_EQ(error_of([] { MomentAccumulator(std::int64_t{1} << 32); }),
            "[MomentAccumulator] the D x D scatter's size overflows int64 (4294967296 * "
            "4294967296)");
  EXPECT_EQ(error_of([&] {
              a.update(contiguous<double, 2>(x.data(), {2, 4}));
            }),
            "[MomentAccumulator] x has 4 columns (features), expected D = 3");
  x[5] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(error_of([&] { a.update(rows_of(x, d, 0, 3)); }),
            "[MomentAccumulator] x must be finite, found nan at row 1, column 2");
  x[5] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(error_of([&] { a.update(rows_of(x, d, 1, 2)); }),
            "[MomentAccumulator] x must be finite, found inf at row 0, column 2");
  EXPECT_EQ(a.count(), 2) << "a failed update added rows";
  std::vector<double> cov(d * d);
  EXPECT_EQ(error_of([&] { a.covariance(cov, 2); }),
            "[MomentAccumulator] ddof = 2 needs more than 2 rows, found 2 (the covariance "
            "divides by count - ddof)");
  EXPECT_EQ(error_of([&] { a.covariance(cov, -1); }),
            "[MomentAccumulator] ddof must be >= 0, found -1");
  EXPECT_EQ(error_of([&] { MomentAccumulator(d).covariance(cov, 0); }),
            "[MomentAccumulator] ddof = 0 needs more than 0 rows, found 0 (the covariance "
            "divides by count - ddof)");
  EXPECT_EQ(error_of([&] { a.merge(MomentAccumulator(4)); }),
            "[MomentAccumulator] cannot merge moments of D = 4 into D = 3");
  EXPECT_EQ(error_of([&] { a.merge(MomentAccumulator(3, MomentFamily::diag)); }),
            "[MomentAccumulator] cannot merge a diag accumulator into a full one");
  const std::vector<double> mean = {0, 0, 0}, asym = {1, 2, 0, 0, 1, 0, 0, 0, 1};
  EXPECT_EQ(error_of([&] { MomentAccumulator::from_state(2, mean, asym, MomentFamily::full); }),
            "[MomentAccumulator] the scatter must be symmetric, found 0 at row 1, column 0 and 2 "
            "at row 0, column 1");
  EXPECT_EQ(error_of([&] { MomentAccumulator::from_state(-1, mean, mean, MomentFamily::diag); }),
            "[MomentAccumulator] count must be >= 0, found -1");
  const std::vector<double> negative = {1, -1, 1};
  EXPECT_EQ(error_of([&] { MomentAccumulator::from_state(2, mean, negative, MomentFamily::diag); }),
            "[MomentAccumulator] the scatter's diagonal must be >= 0, found -1 at 1");
  const std::vector<double> ones = {1, 1, 1};
  EXPECT_EQ(error_of([&] { MomentAccumulator::from_state(0, mean, ones, MomentFamily::diag); }),
            "[MomentAccumulator] a state of count 0 must have a zero mean and scatter");
  std::vector<double> m(d), c(d * d);
  EXPECT_EQ(error_of([&] { fit_gaussian(rows_of(x, d, 0, 1), m, c); }),
            "[fit_gaussian] ddof = 1 needs more than 1 rows, found 1 (the covariance divides by "
            "N - ddof)");
  EXPECT_EQ(error_of([&] { fit_gaussian(rows_of(x, d, 0, 3), m, c); }),
            "[fit_gaussian] x must be finite, found inf at row 1, column 2");
}

}  // namespace
}  // namespace gausskl::test
