// finish_diag_row on every compiled Highway target against the formula of diag_pairs/finish.hpp
// written out in scalar code here: kept entries, marks (NaN) and their count, every length
// around the vector widths, float and double output, in place for double.
#include "cpu/diag_pairs/finish.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "hwy/tests/hwy_gtest.h"

namespace gausskl::cpu {
namespace {

double scalar_finish(double q, double t, double abs_t, const DiagFinishRow& row) {
  constexpr double u = std::numeric_limits<double>::epsilon() / 2;
  const double two_kl = (q - row.d) - row.s + t;
  const double bound =
      row.kernel_bound * q + row.kernel_abs +
      u * (3 * (q + row.d + std::abs(row.s) + std::abs(t)) + 10 * (row.abs_s + abs_t));
  const double kl = 0.5 * two_kl;
  const bool keep = 0.5 * bound <= row.tolerance * (std::abs(kl) + 1) && 0.5 * bound <= 1e-2 * kl;
  return keep ? kl : std::numeric_limits<double>::quiet_NaN();
}

class FinishDiag : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(FinishDiag);

TEST_P(FinishDiag, MatchesTheScalarFormula) {
  std::mt19937_64 rng(90);
  std::uniform_real_distribution<double> unit(0, 1);
  const DiagFinishRow row{64, 3.5, 40, 1e-5, 2.4e-6, 1e-30};
  for (std::int64_t n = 0; n <= 40; ++n) {
    std::vector<double> q(n), t(n), abs_t(n);
    for (std::int64_t j = 0; j < n; ++j) {
      // About half the entries near KL = 0 (Q ~ D + s - t), which must be marked.
      t[j] = 10 * unit(rng) - 5;
      abs_t[j] = std::abs(t[j]) + 30 * unit(rng);
      q[j] = j % 2 ? row.d + row.s - t[j] + 1e-6 * unit(rng) : row.d + 200 * unit(rng);
    }
    std::vector<double> in_place = q;
    std::vector<float> narrow(n);
    const std::int64_t marked_d =
        finish_diag_row(in_place.data(), t.data(), abs_t.data(), n, row, in_place.data());
    const std::int64_t marked_f =
        finish_diag_row(q.data(), t.data(), abs_t.data(), n, row, narrow.data());
    std::int64_t marked = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double want = scalar_finish(q[j], t[j], abs_t[j], row);
      if (std::isnan(want)) {
        ++marked;
        EXPECT_TRUE(std::isnan(in_place[j])) << "n " << n << ", j " << j;
        EXPECT_TRUE(std::isnan(narrow[j])) << "n " << n << ", j " << j;
      } else {
        // FMA contraction may differ from the scalar code in the last bit.
        EXPECT_NEAR(in_place[j], want, 1e-15 * (std::abs(want) + 1)) << "n " << n << ", j " << j;
        EXPECT_EQ(narrow[j], static_cast<float>(in_place[j])) << "n " << n << ", j " << j;
      }
    }
    EXPECT_EQ(marked_d, marked) << "n " << n;
    EXPECT_EQ(marked_f, marked) << "n " << n;
    EXPECT_GT(n < 4 ? 1 : marked, 0) << "n " << n;  // the test data do mark entries
  }
}

// A tile in one call: each row as finish_diag_row gives it with that row's s and abs_s.
TEST_P(FinishDiag, TileIsItsRows) {
  std::mt19937_64 rng(92);
  std::uniform_real_distribution<double> unit(0, 1);
  const DiagFinishRow common{64, 0, 0, 1e-7, 1e-12, 0};
  for (const std::int64_t cols : {1, 3, 8, 13}) {
    const std::int64_t rows = 5, ldq = cols + 2, ldo = cols + 3;
    std::vector<double> q(rows * ldq), s(rows), abs_s(rows), t(cols), abs_t(cols);
    for (std::int64_t r = 0; r < rows; ++r) {
      s[r] = 10 * unit(rng) - 5;
      abs_s[r] = std::abs(s[r]) + 30 * unit(rng);
    }
    for (std::int64_t c = 0; c < cols; ++c) {
      t[c] = 10 * unit(rng) - 5;
      abs_t[c] = std::abs(t[c]) + 30 * unit(rng);
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        // Some entries near KL = 0 (marked), the others far from it.
        q[r * ldq + c] =
            (r + c) % 3 ? common.d + s[r] - t[c] + 50 * unit(rng) : common.d + s[r] - t[c] + 1e-9;
      }
    }
    std::vector<float> tile(rows * ldo, -7.0f), by_rows(rows * ldo, -7.0f);
    const std::int64_t marked = finish_diag_tile(q.data(), ldq, rows, cols, s.data(), abs_s.data(),
                                                 t.data(), abs_t.data(), common, tile.data(), ldo);
    std::int64_t marked_rows = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      DiagFinishRow row = common;
      row.s = s[r];
      row.abs_s = abs_s[r];
      marked_rows += finish_diag_row(q.data() + r * ldq, t.data(), abs_t.data(), cols, row,
                                     by_rows.data() + r * ldo);
    }
    EXPECT_EQ(marked, marked_rows);
    EXPECT_GT(marked, 0);
    for (std::size_t k = 0; k < tile.size(); ++k) {
      if (std::isnan(by_rows[k])) {
        EXPECT_TRUE(std::isnan(tile[k])) << k;
      } else {
        EXPECT_EQ(tile[k], by_rows[k]) << k;
      }
    }
  }
}

}  // namespace
}  // namespace gausskl::cpu
