// cpu::scatter_add (BLAS dsyrk) against the plain sum in long double: the lower triangle gains
// c^T c, the upper triangle is left alone, any worker count gives the same bits.
#include "cpu/moments/scatter.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace gausskl::cpu {
namespace {

TEST(ScatterAdd, LowerTriangleGainsTheRankKUpdate) {
  for (const std::int64_t d : {1, 3, 65, 200}) {
    const std::int64_t rows = 37;
    std::mt19937_64 rng(static_cast<unsigned>(d));
    std::normal_distribution<double> normal(0, 1);
    std::vector<double> c(rows * d), s(d * d);
    for (double& v : c)
      v = normal(rng);
    for (double& v : s)
      v = normal(rng);
    const std::vector<double> before = s;
    std::vector<double> two = s;
    scatter_add(d, rows, c.data(), s.data(), 1);
    scatter_add(d, rows, c.data(), two.data(), 2);
    EXPECT_EQ(s, two) << "D = " << d;
    for (std::int64_t i = 0; i < d; ++i) {
      for (std::int64_t j = 0; j < d; ++j) {
        if (j > i) {
          EXPECT_EQ(s[i * d + j], before[i * d + j])
              << "upper triangle touched at " << i << ", " << j;
          continue;
        }
        long double want = before[i * d + j];
        for (std::int64_t r = 0; r < rows; ++r)
          want += static_cast<long double>(c[r * d + i]) * c[r * d + j];
        EXPECT_NEAR(s[i * d + j], static_cast<double>(want), 1e-13 * rows) << i << ", " << j;
      }
    }
  }
}

}  // namespace
}  // namespace gausskl::cpu
