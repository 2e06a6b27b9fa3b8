// The Bhattacharyya tile kernel (cpu/divergence/bhat_ukr.hpp) of every compiled Highway target, and
// the scalar reference kernel: every value it certifies within tolerance (|B| + 1) and 1% of the
// long-double Bhattacharyya (Hellinger) of the packed values, the typical entry certified, the
// near-duplicates left to the caller; edge tiles bitwise equal to the full tile, nothing written
// outside them; p and q swapped give the same bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cpu/diag_pairs/pack.hpp"
#include "cpu/divergence/bhat_ukr.hpp"
#include "hwy/tests/hwy_gtest.h"

namespace gausskl::cpu {
namespace {

// Rows of means near 1e3 (spread: their standard deviation) and variances log-uniform over
// 1e-6 .. 1e6, packed for the kernel, with their log products.
struct Side {
  std::int64_t rows, k;
  std::vector<double> mean, var, packed, log_mant, log2;
  Side(std::int64_t rows_, std::int64_t k_, std::int64_t width) : rows(rows_), k(k_) {
    mean.resize(rows * k);
    var.resize(rows * k);
    packed.assign(width * 2 * k, 0.0);
    log_mant.assign(width, 0.0);
    log2.assign(width, 0.0);
  }
  void pack(std::int64_t width) {
    pack_diag_q(mean.data(), var.data(), k, rows, k, width, packed.data());
    for (std::int64_t i = 0; i < rows; ++i)
      bhat_log_product(var.data() + i * k, k, &log_mant[i], &log2[i]);
  }
  BhatRows view() const { return {packed.data(), log_mant.data(), log2.data()}; }
};

Side make_side(std::mt19937_64& rng, std::int64_t rows, std::int64_t k, std::int64_t width,
               double spread) {
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> exponent(-6, 6);
  Side s(rows, k, width);
  for (std::int64_t i = 0; i < rows * k; ++i) {
    s.mean[i] = 1e3 + spread * normal(rng);
    s.var[i] = std::pow(10.0, exponent(rng));
  }
  s.pack(width);
  return s;
}

// Row j: row j % rows of `from`, means moved by 1e-10 standard deviations and variances by a
// relative 1e-10: near-duplicates, B ~ 1e-20 k.
Side nudged(std::mt19937_64& rng, const Side& from, std::int64_t rows, std::int64_t width) {
  std::uniform_real_distribution<double> u(-1e-10, 1e-10);
  Side s(rows, from.k, width);
  for (std::int64_t i = 0; i < rows * from.k; ++i) {
    const std::int64_t at = i % (from.rows * from.k);
    s.mean[i] = from.mean[at] + std::sqrt(from.var[at]) * u(rng);
    s.var[i] = from.var[at] * (1 + u(rng));
  }
  s.pack(width);
  return s;
}

long double exact(const Side& p, const Side& q, std::int64_t i, std::int64_t j, bool hellinger) {
  long double b = 0;
  for (std::int64_t h = 0; h < p.k; ++h) {
    const long double dl = static_cast<long double>(p.mean[i * p.k + h]) - q.mean[j * q.k + h];
    const long double vp = p.var[i * p.k + h], vq = q.var[j * q.k + h];
    b += dl * dl / (4 * (vp + vq)) + 0.5L * std::log((vp + vq) / (2 * std::sqrt(vp * vq)));
  }
  return hellinger ? -std::expm1(-b) : b;
}

void check_kernel(const BhatKernel& kernel, const std::string& label) {
  std::mt19937_64 rng(15);
  const std::int64_t mr = kernel.tile.mr, nr = kernel.tile.nr, ldc = nr + 3;
  for (const std::int64_t k : {1, 2, 7, 8, 9, 31, 32, 33, 64, 100, 300, 1024}) {
    for (const int data : {0, 1, 2}) {  // means spread, means equal, near-duplicates
      const Side p = make_side(rng, mr, k, mr, data == 1 ? 0.0 : 1.0);
      const Side q = data == 2 ? nudged(rng, p, nr, nr) : make_side(rng, nr, k, nr, 1.0);
      for (const bool hellinger : {false, true}) {
        for (const double tolerance : {1e-13, 1e-7}) {
          SCOPED_TRACE(label + " k " + std::to_string(k) + " data " + std::to_string(data) +
                       (hellinger ? " hellinger" : " bhattacharyya") + " tol " +
                       std::to_string(tolerance));
          const BhatParams params = bhat_params(k, tolerance, hellinger);
          std::vector<double> full(mr * ldc, -7.0);
          kernel.ukr(mr, nr, k, p.view(), q.view(), params, full.data(), ldc, kernel.tile);
          for (std::int64_t i = 0; i < mr; ++i) {
            for (std::int64_t j = 0; j < nr; ++j) {
              const double got = full[i * ldc + j];
              // Distinct rows (B far from 0 and from its bound) are all certified,
              // near-duplicates none (their B is below 100 times its bound's D u).
              const bool near = data == 2 && j % mr == i;
              ASSERT_EQ(std::isnan(got), near) << i << ", " << j;
              if (near) continue;
              const long double want = exact(p, q, i, j, hellinger);
              const double err = static_cast<double>(std::abs(got - want));
              EXPECT_LE(err, tolerance * static_cast<double>(std::abs(want) + 1)) << i << ", " << j;
              EXPECT_LE(err, 0.01 * static_cast<double>(want)) << i << ", " << j;
            }
          }
          // Edge tiles: bitwise the full tile's entries (NaN as NaN), nothing else written.
          for (std::int64_t m = 1; m <= mr; ++m) {
            for (const std::int64_t n : {std::int64_t{1}, nr / 2 + 1, nr}) {
              if (n > nr) continue;
              std::vector<double> part(mr * ldc, -7.0);
              kernel.ukr(m, n, k, p.view(), q.view(), params, part.data(), ldc, kernel.tile);
              for (std::int64_t i = 0; i < mr; ++i) {
                for (std::int64_t j = 0; j < ldc; ++j) {
                  const std::int64_t at = i * ldc + j;
                  const double want = i < m && j < n ? full[at] : -7.0;
                  if (std::isnan(want)) {
                    ASSERT_TRUE(std::isnan(part[at])) << m << "x" << n;
                  } else {
                    ASSERT_EQ(part[at], want) << m << "x" << n;
                  }
                }
              }
            }
          }
        }
      }
      // p and q swapped: q's row j as the kernel's row and p's row i as its column: the same
      // bits.
      const BhatParams params = bhat_params(k, 1e-13, false);
      std::vector<double> full(mr * ldc);
      kernel.ukr(mr, nr, k, p.view(), q.view(), params, full.data(), ldc, kernel.tile);
      for (std::int64_t i = 0; i < mr; ++i) {
        for (std::int64_t j = 0; j < nr; ++j) {
          Side row(1, k, mr), col(1, k, nr);
          std::copy(q.mean.begin() + j * k, q.mean.begin() + (j + 1) * k, row.mean.begin());
          std::copy(q.var.begin() + j * k, q.var.begin() + (j + 1) * k, row.var.begin());
          std::copy(p.mean.begin() + i * k, p.mean.begin() + (i + 1) * k, col.mean.begin());
          std::copy(p.var.begin() + i * k, p.var.begin() + (i + 1) * k, col.var.begin());
          row.pack(mr);
          col.pack(nr);
          double swapped = -7;
          kernel.ukr(1, 1, k, row.view(), col.view(), params, &swapped, 1, kernel.tile);
          const double want = full[i * ldc + j];
          if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(swapped)) << i << ", " << j;
          } else {
            ASSERT_EQ(swapped, want) << i << ", " << j;
          }
        }
      }
    }
  }
}

class UkrBhat : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(UkrBhat);

TEST_P(UkrBhat, CertifiedWithinTolerance) {
  check_kernel(bhat_kernel(), hwy::TargetName(GetParam()));
}

// The reference kernel with tile shapes of every target, and odd ones.
TEST(UkrBhatRef, AnyTileShape) {
  for (const BhatTile tile : {BhatTile{1, 1}, BhatTile{3, 5}, BhatTile{4, 4}, BhatTile{8, 8}})
    check_kernel(BhatKernel{tile, &ukr_bhat_ref}, "ref");
}

// The range the kernel accepts: s_h in [2^-112, 2^121].
TEST(UkrBhat, RangeCheck) {
  EXPECT_TRUE(bhat_range_ok(1e-30, 1e30, 1e-6, 1));
  EXPECT_TRUE(bhat_range_ok(1e-300, 1, 1e-30, 1));  // s_h >= the larger of the minima
  EXPECT_TRUE(bhat_range_ok(0x1p-112, 1, 0x1p-112, 1));
  EXPECT_FALSE(bhat_range_ok(0x1p-113, 1, 0x1p-113, 1));
  EXPECT_FALSE(bhat_range_ok(1e-300, 1, 1e-300, 1));
  EXPECT_FALSE(bhat_range_ok(1, 1e300, 1, 1));
}

// The log product: prod_h v_h = 2^e exp(log m), m in [1, 2), against long double.
TEST(UkrBhat, LogProduct) {
  std::mt19937_64 rng(16);
  std::uniform_real_distribution<double> exponent(-300, 300);
  for (const std::int64_t d : {0, 1, 5, 1024}) {
    std::vector<double> v(d);
    long double want = 0;
    for (double& x : v) {
      x = std::pow(10.0, exponent(rng));
      want += std::log(static_cast<long double>(x));
    }
    double log_mant = -1, log2 = -1;
    bhat_log_product(v.data(), d, &log_mant, &log2);
    EXPECT_GE(log_mant, 0.0);
    EXPECT_LT(log_mant, 0.6931471805599454);
    const long double got = log_mant + log2 * std::log(2.0L);
    EXPECT_LE(std::abs(static_cast<double>(got - want)), (1.01 * d + 2) * 0x1p-53) << d;
  }
}

}  // namespace
}  // namespace gausskl::cpu
