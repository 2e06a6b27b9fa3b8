// tri_squares on every compiled Highway target: against a long-double forward substitution on
// random factors (D from 1 to 65, across the vector widths), exactly 0 for Lq = Lp, and a case
// worked by hand.
#include "cpu/pair/tri_squares.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "hwy/tests/hwy_gtest.h"

namespace gausskl::cpu {
namespace {

// A lower-triangular factor: diagonal exp(N(0, 0.5)), below it N(0, 0.3), above it 0.
std::vector<double> random_factor(std::mt19937_64& rng, std::int64_t d) {
  std::normal_distribution<double> normal;
  std::vector<double> l(d * d, 0.0);
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j < i; ++j)
      l[i * d + j] = 0.3 * normal(rng);
    l[i * d + i] = std::exp(0.5 * normal(rng));
  }
  return l;
}

// The same sum by column-by-column forward substitution in long double.
long double reference(const std::vector<double>& lq, const std::vector<double>& lp,
                      std::int64_t d) {
  long double sum = 0;
  std::vector<long double> col(d);
  for (std::int64_t k = 0; k < d; ++k) {
    for (std::int64_t i = 0; i < d; ++i) {
      long double s = i >= k ? lp[i * d + k] : 0.0L;
      for (std::int64_t j = 0; j < i; ++j)
        s -= static_cast<long double>(lq[i * d + j]) * col[j];
      col[i] = s / lq[i * d + i];
      if (i > k) sum += col[i] * col[i];
    }
  }
  return sum;
}

class TriSquares : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(TriSquares);

TEST_P(TriSquares, MatchesLongDoubleSubstitution) {
  std::mt19937_64 rng(11);
  for (const std::int64_t d : {1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65}) {
    SCOPED_TRACE(d);
    const std::vector<double> lq = random_factor(rng, d), lp = random_factor(rng, d);
    std::vector<double> scratch(tri_squares_scratch(d), -1.0);
    const long double want = reference(lq, lp, d);
    const double got = tri_squares(lq.data(), lp.data(), d, scratch.data());
    EXPECT_LE(std::abs(got - want), 1e-13L * (want + 1)) << got << " vs " << double(want);
  }
}

TEST_P(TriSquares, IdenticalFactorsGiveExactlyZero) {
  std::mt19937_64 rng(12);
  for (const std::int64_t d : {1, 5, 8, 13, 40}) {
    const std::vector<double> l = random_factor(rng, d);
    std::vector<double> scratch(tri_squares_scratch(d));
    EXPECT_EQ(tri_squares(l.data(), l.data(), d, scratch.data()), 0.0) << d;
  }
}

// Lq = [[2, 0], [1, 1]], Lp = [[4, 0], [3, 5]]: M = Lq^{-1} Lp = [[2, 0], [1, 5]] (check:
// Lq M = [[4, 0], [2 + 1, 5]] = Lp), whose only entry below the diagonal is 1.
TEST_P(TriSquares, WorkedByHand) {
  const std::vector<double> lq = {2, 0, 1, 1}, lp = {4, 0, 3, 5};
  std::vector<double> scratch(tri_squares_scratch(2));
  EXPECT_EQ(tri_squares(lq.data(), lp.data(), 2, scratch.data()), 1.0);
}

}  // namespace
}  // namespace gausskl::cpu
