// The diag_quadratic microkernel of every compiled Highway target, and the scalar reference
// kernel, on one tile: against a long-double sum of the packed values, within the documented
// bound; edge tiles bitwise equal to the full tile; nothing written outside the tile.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cpu/diag_pairs/bound.hpp"
#include "cpu/diag_pairs/pack.hpp"
#include "cpu/diag_pairs/ukr.hpp"
#include "cpu/tunables.hpp"
#include "hwy/tests/hwy_gtest.h"

namespace gausskl::cpu {
namespace {

// Adversarial-ish rows: means near 1e3, variances and precisions log-uniform over 1e-4 .. 1e4.
template <class T>
struct Rows {
  std::vector<T> mean, var;
};

template <class T>
Rows<T> make_rows(std::mt19937_64& rng, std::int64_t rows, std::int64_t k) {
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> exponent(-4, 4);
  Rows<T> out{std::vector<T>(rows * k), std::vector<T>(rows * k)};
  for (std::int64_t i = 0; i < rows * k; ++i) {
    out.mean[i] = static_cast<T>(1e3 + normal(rng));
    out.var[i] = static_cast<T>(std::pow(10.0, exponent(rng)));
  }
  return out;
}

template <class T>
long double exact(const Rows<T>& p, const Rows<T>& q, std::int64_t i, std::int64_t j,
                  std::int64_t k) {
  long double sum = 0;
  for (std::int64_t h = 0; h < k; ++h) {
    const long double s = static_cast<long double>(p.mean[i * k + h]) - q.mean[j * k + h];
    sum += (s * s + p.var[i * k + h]) * static_cast<long double>(q.var[j * k + h]);
  }
  return sum;
}

template <class T>
void check_kernel(const DiagKernel<T>& kernel, const char* label) {
  std::mt19937_64 rng(7);
  const std::int64_t mr = kernel.tile.mr, nr = kernel.tile.nr;
  // Depths up to kDiagKC, the longest a kernel call gets from the loop nest.
  for (const std::int64_t k : {1, 2, 5, 16, 127, 128, 129, 200, 256}) {
    const Rows<T> p = make_rows<T>(rng, mr, k), q = make_rows<T>(rng, nr, k);
    std::vector<T> p_packed(mr * 2 * kDiagKC), q_packed(nr * 2 * k);
    pack_diag_p(p.mean.data(), p.var.data(), k, mr, k, mr, p_packed.data());
    pack_diag_q(q.mean.data(), q.var.data(), k, nr, k, nr, q_packed.data());
    const double bound = diag_quadratic_error_bound<T>(k);
    const std::int64_t ldc = nr + 3;
    std::vector<double> c0(mr * ldc);
    std::uniform_real_distribution<double> u(0, 1e6);
    for (double& x : c0)
      x = u(rng);

    for (const bool accumulate : {false, true}) {
      std::vector<double> full = c0;
      kernel.ukr(mr, nr, k, p_packed.data(), q_packed.data(), accumulate, full.data(), ldc,
                 kernel.tile);
      for (std::int64_t i = 0; i < mr; ++i) {
        for (std::int64_t j = 0; j < nr; ++j) {
          const long double want = exact(p, q, i, j, k);
          const double got = full[i * ldc + j] - (accumulate ? c0[i * ldc + j] : 0.0);
          // Subtracting c0 back costs one double rounding of the sum.
          const double slack = accumulate ? 0x1p-52 * full[i * ldc + j] : 0.0;
          ASSERT_LE(std::abs(got - static_cast<double>(want)), bound * want + slack)
              << label << " k " << k << " i " << i << " j " << j << " acc " << accumulate;
        }
      }
      for (std::int64_t m = 1; m <= mr; ++m) {
        for (const std::int64_t n : {std::int64_t{1}, nr / 2 + 1, nr - 1, nr}) {
          if (n < 1) continue;
          std::vector<double> c = c0;
          kernel.ukr(m, n, k, p_packed.data(), q_packed.data(), accumulate, c.data(), ldc,
                     kernel.tile);
          for (std::int64_t i = 0; i < mr; ++i) {
            for (std::int64_t j = 0; j < ldc; ++j) {
              const std::int64_t at = i * ldc + j;
              const double want = i < m && j < n ? full[at] : c0[at];
              ASSERT_EQ(c[at], want) << label << " tile " << m << "x" << n << " k " << k << " i "
                                     << i << " j " << j << " acc " << accumulate;
            }
          }
        }
      }
    }
  }
}

class UkrDiag : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(UkrDiag);

TEST_P(UkrDiag, FloatTileWithinBound) {
  check_kernel(diag_kernel<float>(), hwy::TargetName(GetParam()));
}
TEST_P(UkrDiag, DoubleTileWithinBound) {
  check_kernel(diag_kernel<double>(), hwy::TargetName(GetParam()));
}
TEST_P(UkrDiag, ChosenTargetIsTheForcedOne) {
  EXPECT_STREQ(diag_kernel_target(), hwy::TargetName(GetParam()));
}

// The reference kernel with tile shapes of every target, and an odd one.
TEST(UkrDiagRef, AnyTileShape) {
  for (const DiagTile tile : {DiagTile{1, 1}, DiagTile{3, 5}, DiagTile{4, 8}, DiagTile{8, 32}}) {
    check_kernel(DiagKernel<float>{tile, &ukr_diag_ref<float>}, "ref float");
    check_kernel(DiagKernel<double>{tile, &ukr_diag_ref<double>}, "ref double");
  }
}

}  // namespace
}  // namespace gausskl::cpu
