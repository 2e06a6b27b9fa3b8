// The q = p tiles (loops_sym.hpp) over whole matrices (tests/support/diag_sym_quadratic.hpp) on
// every compiled Highway target: every entry within diag_quadratic's bound of a long-double sum, on
// random and adversarial rows (means offset by 1e3, std over 1e-3 .. 1e3, near-duplicates and exact
// duplicates), n around the tile sizes and d around kDiagKC; the one-sided kernel bitwise the same
// matrix.
#include "cpu/diag_pairs/loops_sym.hpp"

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
#include "support/diag_sym_quadratic.hpp"

namespace gausskl::cpu {
namespace {

struct Rows {
  std::int64_t n, d;
  std::vector<double> mu, v, lam;
};

Rows make_rows(bool adversarial, std::int64_t n, std::int64_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit(-1, 1);
  Rows out{n, d, std::vector<double>(n * d), std::vector<double>(n * d),
           std::vector<double>(n * d)};
  for (std::int64_t i = 0; i < n; ++i) {
    // Adversarial: every third row a near-duplicate (1e-6 relative) of the row before, every
    // fifth an exact one.
    const bool twin = adversarial && i > 0 && (i % 3 == 0 || i % 5 == 0);
    const double rel = i % 5 == 0 ? 0 : 1e-6;
    for (std::int64_t h = 0; h < d; ++h) {
      const std::int64_t at = i * d + h;
      double mean = 0, sd = 1;
      if (twin) {
        mean = out.mu[at - d] * (1 + rel * unit(rng));
        sd = std::sqrt(out.v[at - d]) * (1 + rel * unit(rng));
      } else {
        mean = (adversarial ? 1e3 : 0) + normal(rng);
        sd = adversarial ? std::pow(10.0, 3 * unit(rng)) : std::pow(2.0, unit(rng));
      }
      out.mu[at] = mean;
      out.v[at] = sd * sd;
      out.lam[at] = 1 / (sd * sd);
    }
  }
  return out;
}

std::vector<double> pack(const Rows& rows, std::int64_t nr) {
  std::vector<double> panels(diag_sym_panels_size(rows.n, rows.d, nr), -1.0);
  for (std::int64_t j0 = 0; j0 < rows.n; j0 += nr) {
    pack_diag_sym(rows.mu.data() + j0 * rows.d, rows.v.data() + j0 * rows.d,
                  rows.lam.data() + j0 * rows.d, rows.d, std::min(nr, rows.n - j0), rows.d, nr,
                  panels.data() + j0 * 3 * rows.d);
  }
  return panels;
}

long double exact(const Rows& r, std::int64_t i, std::int64_t j) {
  long double sum = 0;
  for (std::int64_t h = 0; h < r.d; ++h) {
    const long double s = static_cast<long double>(r.mu[i * r.d + h]) - r.mu[j * r.d + h];
    sum += (s * s + r.v[i * r.d + h]) * static_cast<long double>(r.lam[j * r.d + h]);
  }
  return sum;
}

void check_target(const DiagSymKernel& kernel, const std::string& target) {
  std::uint64_t seed = 5;
  for (const bool adversarial : {false, true}) {
    for (const std::int64_t n : {1, 3, 8, 9, 17, 33, 70}) {
      for (const std::int64_t d : {1, 7, 64, 255, 256, 257, 513, 1024}) {
        if (n * n * d > 70 * 70 * 300) continue;  // the long-double oracle's time
        const Rows rows = make_rows(adversarial, n, d, seed++);
        const std::vector<double> panels = pack(rows, kernel.tile.nr);
        const std::int64_t ldq = n + 2;
        std::vector<double> q(n * ldq, -7.0), one(n * ldq, -7.0);
        test::diag_sym_quadratic(kernel, panels.data(), n, d, q.data(), ldq, false);
        test::diag_sym_quadratic(kernel, panels.data(), n, d, one.data(), ldq, true);
        ASSERT_EQ(q, one) << target << " n " << n << " d " << d;
        const double bound = diag_quadratic_error_bound<double>(d);
        const double slack = static_cast<double>(d + 4) * 0x1p-63;  // the oracle's own
        for (std::int64_t i = 0; i < n; ++i) {
          for (std::int64_t j = 0; j < n; ++j) {
            const long double want = exact(rows, i, j);
            ASSERT_LE(std::abs(q[i * ldq + j] - static_cast<double>(want)),
                      (bound + slack) * static_cast<double>(want))
                << target << (adversarial ? " adversarial" : " random") << " n " << n << " d " << d
                << " i " << i << " j " << j;
          }
          ASSERT_EQ(q[i * ldq + n], -7.0) << "wrote past n";
        }
      }
    }
  }
}

class DiagSymLoops : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(DiagSymLoops);

TEST_P(DiagSymLoops, WithinBoundAndOneSidedTheSame) {
  check_target(diag_sym_kernel(), hwy::TargetName(GetParam()));
}

TEST(DiagSymLoopsRef, OddTileShape) {
  check_target(DiagSymKernel{{3, 6}, &ukr_diag_sym_ref, &ukr_diag_sym_ref_one}, "ref 3x6");
}

TEST(DiagSymLoops, EmptyDepth) {
  const DiagSymKernel kernel = diag_sym_kernel();
  std::vector<double> q(6, -7.0);
  test::diag_sym_quadratic(kernel, nullptr, 2, 0, q.data(), 3, false);
  EXPECT_EQ(q, (std::vector<double>{0, 0, -7, 0, 0, -7}));
}

}  // namespace
}  // namespace gausskl::cpu
