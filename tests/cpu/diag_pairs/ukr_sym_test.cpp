// The q = p microkernel (diag_pairs/ukr_sym.hpp) of every compiled Highway target, and the scalar
// reference kernels, on one tile: c and ct against long-double sums of the packed values within
// diag_quadratic's bound; `one` bitwise `both`'s c; each entry bitwise the same from c and from
// ct of the tile with a and b swapped; accumulation into c and ct.
#include "cpu/diag_pairs/ukr_sym.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cpu/diag_pairs/bound.hpp"
#include "cpu/diag_pairs/pack.hpp"
#include "cpu/tunables.hpp"
#include "hwy/tests/hwy_gtest.h"

namespace gausskl::cpu {
namespace {

// Two panels of nr rows: means near 1e3, variances log-uniform over 1e-4 .. 1e4, precisions
// their inverses (any positive values would do for the kernel).
struct Panels {
  std::int64_t nr, k;
  std::vector<double> mu, v, lam;  // [2 nr, k]: panel 0 rows then panel 1 rows
  std::vector<double> packed;      // the two panels, 3 nr k values each
};

Panels make_panels(std::mt19937_64& rng, std::int64_t nr, std::int64_t k) {
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> exponent(-4, 4);
  Panels p{nr, k, std::vector<double>(2 * nr * k), {}, {}, std::vector<double>(6 * nr * k)};
  p.v.resize(p.mu.size());
  p.lam.resize(p.mu.size());
  for (std::size_t x = 0; x < p.mu.size(); ++x) {
    p.mu[x] = 1e3 + normal(rng);
    p.v[x] = std::pow(10.0, exponent(rng));
    p.lam[x] = 1 / std::pow(10.0, exponent(rng));
  }
  // Row 1 of panel 1 a copy of row 0 of panel 0 (KL 0 apart from v lam).
  for (std::int64_t h = 0; h < k; ++h) {
    p.mu[(nr + 1 % nr) * k + h] = p.mu[h];
  }
  for (std::int64_t panel = 0; panel < 2; ++panel) {
    pack_diag_sym(p.mu.data() + panel * nr * k, p.v.data() + panel * nr * k,
                  p.lam.data() + panel * nr * k, k, nr, k, nr,
                  p.packed.data() + panel * 3 * nr * k);
  }
  return p;
}

// Q(x, y) of rows x and y (0 .. 2 nr - 1) in long double.
long double exact(const Panels& p, std::int64_t x, std::int64_t y) {
  long double sum = 0;
  for (std::int64_t h = 0; h < p.k; ++h) {
    const long double s = static_cast<long double>(p.mu[x * p.k + h]) - p.mu[y * p.k + h];
    sum += (s * s + p.v[x * p.k + h]) * static_cast<long double>(p.lam[y * p.k + h]);
  }
  return sum;
}

void check_kernel(const DiagSymKernel& kernel, const std::string& label) {
  std::mt19937_64 rng(17);
  const std::int64_t mr = kernel.tile.mr, nr = kernel.tile.nr;
  ASSERT_EQ(nr % mr, 0) << label;
  for (const std::int64_t k : {1, 2, 5, 16, 127, 200, 256}) {
    const Panels p = make_panels(rng, nr, k);
    const double bound = diag_quadratic_error_bound<double>(k);
    const double* panel1 = p.packed.data() + 3 * nr * k;
    for (std::int64_t r0 = 0; r0 < nr; r0 += mr) {
      // a: rows r0 .. r0 + mr - 1 of panel 0; b: panel 1.
      const double* a = p.packed.data() + r0;
      std::vector<double> c(mr * nr), ct(mr * nr), c_one(mr * nr, -7.0), ct_one(mr * nr, -7.0);
      kernel.both(k, a, panel1, false, c.data(), ct.data(), kernel.tile);
      kernel.one(k, a, panel1, false, c_one.data(), ct_one.data(), kernel.tile);
      EXPECT_EQ(c_one, c) << label << " k " << k;
      EXPECT_EQ(ct_one, std::vector<double>(mr * nr, -7.0)) << label << ": one wrote ct";
      for (std::int64_t r = 0; r < mr; ++r) {
        for (std::int64_t l = 0; l < nr; ++l) {
          const std::int64_t i = r0 + r, j = nr + l;
          const long double want = exact(p, i, j), want_t = exact(p, j, i);
          ASSERT_LE(std::abs(c[r * nr + l] - static_cast<double>(want)), bound * want)
              << label << " k " << k << " r " << r << " l " << l;
          ASSERT_LE(std::abs(ct[r * nr + l] - static_cast<double>(want_t)), bound * want_t)
              << label << " k " << k << " r " << r << " l " << l << " (transposed)";
        }
      }
      // The same pairs with the roles swapped: a from panel 1 (its rows l0 .. l0 + mr - 1), b
      // panel 0. Q(i, j) comes from ct there and from c here, and must be bitwise equal.
      for (std::int64_t l0 = 0; l0 < nr; l0 += mr) {
        std::vector<double> c2(mr * nr), ct2(mr * nr);
        kernel.both(k, panel1 + l0, p.packed.data(), false, c2.data(), ct2.data(), kernel.tile);
        for (std::int64_t r = 0; r < mr; ++r) {
          for (std::int64_t l = 0; l < mr; ++l) {
            // Entry (i = r0 + r, j = nr + l0 + l): c[r][l0 + l] here, ct2[l][r0 + r] there.
            EXPECT_EQ(ct2[l * nr + r0 + r], c[r * nr + l0 + l]) << label << " k " << k;
            EXPECT_EQ(c2[l * nr + r0 + r], ct[r * nr + l0 + l]) << label << " k " << k;
          }
        }
      }
      // Accumulating: c0 + the tile's sum, one rounding.
      std::vector<double> acc(mr * nr, 1e3), acc_t(mr * nr, 2e3);
      kernel.both(k, a, panel1, true, acc.data(), acc_t.data(), kernel.tile);
      for (std::int64_t x = 0; x < mr * nr; ++x) {
        EXPECT_EQ(acc[x], 1e3 + c[x]) << label;
        EXPECT_EQ(acc_t[x], 2e3 + ct[x]) << label;
      }
    }
  }
}

class UkrDiagSym : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(UkrDiagSym);

TEST_P(UkrDiagSym, TileWithinBoundBothDirections) {
  check_kernel(diag_sym_kernel(), hwy::TargetName(GetParam()));
}

TEST(UkrDiagSymRef, AnyTileShape) {
  for (const DiagSymTile tile : {DiagSymTile{1, 1}, DiagSymTile{2, 4}, DiagSymTile{3, 6},
                                 DiagSymTile{8, 8}, DiagSymTile{4, 16}}) {
    check_kernel(DiagSymKernel{tile, &ukr_diag_sym_ref, &ukr_diag_sym_ref_one},
                 "ref " + std::to_string(tile.mr) + "x" + std::to_string(tile.nr));
  }
}

}  // namespace
}  // namespace gausskl::cpu
