// The Bhattacharyya tile kernel (cpu/divergence/bhat_ukr.hpp) of every compiled Highway target, and
// the scalar reference kernel: quad and the logarithm of the product of s_h against long-double
// sums of the packed values, within the bounds diag_tiles.cpp counts on; edge tiles bitwise equal
// to the full tile, nothing written outside them; p and q swapped give the same bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cpu/diag_pairs/pack.hpp"
#include "cpu/divergence/bhat_ukr.hpp"
#include "cpu/tunables.hpp"
#include "hwy/tests/hwy_gtest.h"

namespace gausskl::cpu {
namespace {

constexpr double kUnit = 0x1p-53;

// Means near 1e3 (or all equal: spread 0), variances log-uniform over 1e-6 .. 1e6.
struct Rows {
  std::vector<double> mean, var;
};

Rows make_rows(std::mt19937_64& rng, std::int64_t rows, std::int64_t k, double spread) {
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> exponent(-6, 6);
  Rows out{std::vector<double>(rows * k), std::vector<double>(rows * k)};
  for (std::int64_t i = 0; i < rows * k; ++i) {
    out.mean[i] = 1e3 + spread * normal(rng);
    out.var[i] = std::pow(10.0, exponent(rng));
  }
  return out;
}

struct Exact {
  long double quad, log_prod;
};

Exact exact(const Rows& p, const Rows& q, std::int64_t i, std::int64_t j, std::int64_t k) {
  Exact e{0, 0};
  for (std::int64_t h = 0; h < k; ++h) {
    const long double dl = static_cast<long double>(p.mean[i * k + h]) - q.mean[j * k + h];
    const long double s = static_cast<long double>(p.var[i * k + h]) + q.var[j * k + h];
    e.quad += dl * dl / s;
    e.log_prod += std::log(s);
  }
  return e;
}

struct Out {
  std::vector<double> quad, log_mant, expo;
  explicit Out(std::size_t n) : quad(n, -7), log_mant(n, -7), expo(n, -7) {}
  bool operator==(const Out&) const = default;
};

void check_kernel(const BhatKernel& kernel, const std::string& label) {
  std::mt19937_64 rng(15);
  const std::int64_t mr = kernel.tile.mr, nr = kernel.tile.nr, ldc = nr + 3;
  for (const std::int64_t k : {1, 2, 7, 8, 9, 31, 32, 33, 64, 100, 300, 1024}) {
    for (const double spread : {1.0, 0.0}) {
      SCOPED_TRACE(label + " k " + std::to_string(k) + " spread " + std::to_string(spread));
      const Rows p = make_rows(rng, mr, k, spread), q = make_rows(rng, nr, k, spread);
      std::vector<double> p_packed(mr * 2 * k), q_packed(nr * 2 * k);
      pack_diag_q(p.mean.data(), p.var.data(), k, mr, k, mr, p_packed.data());
      pack_diag_q(q.mean.data(), q.var.data(), k, nr, k, nr, q_packed.data());
      Out full(mr * ldc);
      kernel.ukr(mr, nr, k, p_packed.data(), q_packed.data(), full.quad.data(),
                 full.log_mant.data(), full.expo.data(), ldc, kernel.tile);
      const double chunk = static_cast<double>(kBhatChunkTerms), kd = static_cast<double>(k);
      const double quad_bound =
          1.01 * kUnit * (3 * std::min(chunk, kd) + 6 + std::ceil(kd / chunk));
      for (std::int64_t i = 0; i < mr; ++i) {
        for (std::int64_t j = 0; j < nr; ++j) {
          const std::int64_t at = i * ldc + j;
          const Exact want = exact(p, q, i, j, k);
          EXPECT_LE(std::abs(full.quad[at] - static_cast<double>(want.quad)),
                    quad_bound * static_cast<double>(want.quad))
              << i << ", " << j;
          EXPECT_GE(full.log_mant[at], 0.0);
          EXPECT_LT(full.log_mant[at], 0.6931471805599454);
          EXPECT_EQ(full.expo[at], std::round(full.expo[at]));
          // The product of k rounded sums, k roundings of its own, the log within 4 ulp.
          const long double got =
              full.log_mant[at] + static_cast<long double>(full.expo[at]) * std::log(2.0L);
          EXPECT_LE(std::abs(static_cast<double>(got - want.log_prod)), (2.02 * kd + 8) * kUnit)
              << i << ", " << j;
        }
      }
      // Edge tiles: bitwise the full tile's entries, nothing else written.
      for (std::int64_t m = 1; m <= mr; ++m) {
        for (const std::int64_t n : {std::int64_t{1}, nr / 2 + 1, nr}) {
          if (n > nr) continue;
          Out part(mr * ldc);
          kernel.ukr(m, n, k, p_packed.data(), q_packed.data(), part.quad.data(),
                     part.log_mant.data(), part.expo.data(), ldc, kernel.tile);
          for (std::int64_t i = 0; i < mr; ++i) {
            for (std::int64_t j = 0; j < ldc; ++j) {
              const std::int64_t at = i * ldc + j;
              const bool inside = i < m && j < n;
              ASSERT_EQ(part.quad[at], inside ? full.quad[at] : -7) << m << "x" << n;
              ASSERT_EQ(part.log_mant[at], inside ? full.log_mant[at] : -7) << m << "x" << n;
              ASSERT_EQ(part.expo[at], inside ? full.expo[at] : -7) << m << "x" << n;
            }
          }
        }
      }
      // p and q swapped: q's rows as the kernel's rows and p's as its columns, one entry at a
      // time (the shapes differ): the same bits.
      for (std::int64_t i = 0; i < mr; ++i) {
        for (std::int64_t j = 0; j < nr; ++j) {
          std::vector<double> row(mr * 2 * k, 0.0), col(nr * 2 * k, 0.0);
          pack_diag_q(q.mean.data() + j * k, q.var.data() + j * k, k, 1, k, mr, row.data());
          pack_diag_q(p.mean.data() + i * k, p.var.data() + i * k, k, 1, k, nr, col.data());
          Out swapped(1);
          kernel.ukr(1, 1, k, row.data(), col.data(), swapped.quad.data(), swapped.log_mant.data(),
                     swapped.expo.data(), 1, kernel.tile);
          const std::int64_t at = i * ldc + j;
          ASSERT_EQ(swapped.quad[0], full.quad[at]) << i << ", " << j;
          ASSERT_EQ(swapped.log_mant[0], full.log_mant[at]) << i << ", " << j;
          ASSERT_EQ(swapped.expo[0], full.expo[at]) << i << ", " << j;
        }
      }
    }
  }
}

class UkrBhat : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(UkrBhat);

TEST_P(UkrBhat, TileWithinBound) {
  check_kernel(bhat_kernel(), hwy::TargetName(GetParam()));
}

// The reference kernel with tile shapes of every target, and odd ones.
TEST(UkrBhatRef, AnyTileShape) {
  for (const BhatTile tile : {BhatTile{1, 1}, BhatTile{3, 5}, BhatTile{4, 4}, BhatTile{8, 8}})
    check_kernel(BhatKernel{tile, &ukr_bhat_ref}, "ref");
}

// The range the kernel accepts: s_h in [2^-124, 2^121].
TEST(UkrBhat, RangeCheck) {
  EXPECT_TRUE(bhat_range_ok(1e-30, 1e30, 1e-6, 1));
  EXPECT_TRUE(bhat_range_ok(1e-300, 1, 1e-30, 1));  // s_h >= the larger of the minima
  EXPECT_FALSE(bhat_range_ok(1e-300, 1, 1e-300, 1));
  EXPECT_FALSE(bhat_range_ok(1, 1e300, 1, 1));
}

}  // namespace
}  // namespace gausskl::cpu
