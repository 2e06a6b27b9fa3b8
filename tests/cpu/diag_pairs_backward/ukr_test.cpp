// The pairwise backward's GEMM microkernel on every compiled Highway target, and the scalar
// reference kernel: against a long-double sum of the packed values; edge tiles bitwise equal to
// the full tile; nothing written outside the tile.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cpu/diag_pairs_backward/ukr.hpp"
#include "hwy/tests/hwy_gtest.h"

namespace gausskl::cpu {
namespace {

void check_kernel(const GemmKernel& kernel, const char* label) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> exponent(-4, 4);
  const std::int64_t mr = kernel.tile.mr, nr = kernel.tile.nr;
  for (const std::int64_t k : {1, 2, 5, 16, 127, 256}) {
    // Mixed signs and magnitudes 1e-4 .. 1e4: the sums cancel.
    std::vector<double> a(k * mr), b(k * nr);
    for (double& x : a)
      x = normal(rng);
    for (double& x : b)
      x = normal(rng) * std::pow(10.0, exponent(rng));
    const std::int64_t ldc = nr + 3;
    std::vector<double> c0(mr * ldc);
    for (double& x : c0)
      x = normal(rng) * 1e3;
    for (const bool accumulate : {false, true}) {
      std::vector<double> full = c0;
      kernel.ukr(mr, nr, k, a.data(), b.data(), accumulate, full.data(), ldc, kernel.tile);
      for (std::int64_t i = 0; i < mr; ++i) {
        for (std::int64_t j = 0; j < nr; ++j) {
          long double want = accumulate ? c0[i * ldc + j] : 0.0L;
          long double size = std::abs(want);
          for (std::int64_t l = 0; l < k; ++l) {
            const long double t = static_cast<long double>(a[l * mr + i]) * b[l * nr + j];
            want += t;
            size += std::abs(t);
          }
          // A chain of k multiply-adds and one addition: (k + 1) u of the sum of |terms|.
          const double bound = static_cast<double>(k + 2) * 0x1p-53 * static_cast<double>(size);
          ASSERT_LE(std::abs(full[i * ldc + j] - static_cast<double>(want)), bound)
              << label << " k " << k << " i " << i << " j " << j << " acc " << accumulate;
        }
      }
      for (std::int64_t m = 1; m <= mr; ++m) {
        for (const std::int64_t n : {std::int64_t{1}, nr / 2 + 1, nr - 1, nr}) {
          if (n < 1) continue;
          std::vector<double> c = c0;
          kernel.ukr(m, n, k, a.data(), b.data(), accumulate, c.data(), ldc, kernel.tile);
          for (std::int64_t i = 0; i < mr; ++i) {
            for (std::int64_t j = 0; j < ldc; ++j) {
              const std::int64_t at = i * ldc + j;
              const double want = i < m && j < n ? full[at] : c0[at];
              ASSERT_EQ(c[at], want) << label << " tile " << m << "x" << n << " k " << k;
            }
          }
        }
      }
    }
  }
}

class PairwiseBackwardUkr : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(PairwiseBackwardUkr);

TEST_P(PairwiseBackwardUkr, TileWithinBound) {
  check_kernel(gemm_kernel(), hwy::TargetName(GetParam()));
}
TEST_P(PairwiseBackwardUkr, ChosenTargetIsTheForcedOne) {
  EXPECT_STREQ(gemm_kernel_target(), hwy::TargetName(GetParam()));
}

TEST(PairwiseBackwardUkrRef, AnyTileShape) {
  for (const GemmTile tile : {GemmTile{1, 1}, GemmTile{3, 5}, GemmTile{4, 8}, GemmTile{12, 16}})
    check_kernel(GemmKernel{tile, &ukr_gemm_ref}, "ref");
}

}  // namespace
}  // namespace gausskl::cpu
