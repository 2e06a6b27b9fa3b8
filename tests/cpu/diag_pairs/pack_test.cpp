// pack_diag_p / pack_diag_q against the layout their header states, padding included.
#include "cpu/diag_pairs/pack.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cpu/tunables.hpp"
#include "hwy/tests/hwy_gtest.h"

namespace gausskl::cpu {
namespace {

// Distinct values, so a misplaced element cannot match by accident.
std::vector<float> iota(std::int64_t size, float start) {
  std::vector<float> v(size);
  for (std::int64_t i = 0; i < size; ++i)
    v[i] = start + static_cast<float>(i);
  return v;
}

TEST(PackDiag, PRowsWithFixedStride) {
  for (const std::int64_t mr : {1, 4, 8}) {
    for (const std::int64_t m : {1, 3, 8, 13}) {
      const std::int64_t ld = 11, k = 7, panels = (m + mr - 1) / mr;
      const std::vector<float> mu = iota(m * ld, 1), v = iota(m * ld, 10000);
      std::vector<float> dst(panels * mr * 2 * kDiagKC + 1, -1.0f);
      pack_diag_p(mu.data(), v.data(), ld, m, k, mr, dst.data());
      for (std::int64_t i = 0; i < panels * mr; ++i) {
        const std::int64_t i0 = i / mr * mr, r = i % mr;
        const float* panel = &dst[i0 * 2 * kDiagKC];
        for (std::int64_t h = 0; h < k; ++h) {
          EXPECT_EQ(panel[r * kDiagKC + h], i < m ? mu[i * ld + h] : 0.0f) << mr << " " << i;
          EXPECT_EQ(panel[(mr + r) * kDiagKC + h], i < m ? v[i * ld + h] : 0.0f) << mr << " " << i;
        }
        EXPECT_EQ(panel[r * kDiagKC + k], -1.0f) << "wrote past depth k";
      }
      EXPECT_EQ(dst.back(), -1.0f) << "wrote past the packed block";
    }
  }
}

TEST(PackDiag, QColumnsAsLanes) {
  for (const std::int64_t nr : {1, 8, 32}) {
    for (const std::int64_t n : {1, 5, 32, 41}) {
      const std::int64_t ld = 9, k = 5, panels = (n + nr - 1) / nr;
      const std::vector<float> nu = iota(n * ld, 1), lam = iota(n * ld, 10000);
      std::vector<float> dst(panels * nr * 2 * k + 1, -1.0f);
      pack_diag_q(nu.data(), lam.data(), ld, n, k, nr, dst.data());
      for (std::int64_t j = 0; j < panels * nr; ++j) {
        const std::int64_t j0 = j / nr * nr, c = j % nr;
        for (std::int64_t h = 0; h < k; ++h) {
          const float* at = &dst[j0 * 2 * k + h * 2 * nr];
          EXPECT_EQ(at[c], j < n ? nu[j * ld + h] : 0.0f) << "nr " << nr << " j " << j;
          EXPECT_EQ(at[nr + c], j < n ? lam[j * ld + h] : 0.0f) << "nr " << nr << " j " << j;
        }
      }
      EXPECT_EQ(dst.back(), -1.0f) << "wrote past the packed panel";
    }
  }
}

TEST(PackDiag, DoubleOffsetRowsAndDepth) {
  // A sub-block of the inputs: rows from 2, h from 3 (the loop nest's pc offset).
  const std::int64_t ld = 10, m = 3, k = 4, mr = 2;
  std::vector<double> mu(6 * ld), v(6 * ld);
  for (std::size_t i = 0; i < mu.size(); ++i) {
    mu[i] = 0.5 * static_cast<double>(i);
    v[i] = -static_cast<double>(i);
  }
  std::vector<double> dst(2 * mr * 2 * kDiagKC);
  pack_diag_p(mu.data() + 2 * ld + 3, v.data() + 2 * ld + 3, ld, m, k, mr, dst.data());
  EXPECT_EQ(dst[1 * kDiagKC + 1], mu[3 * ld + 4]);
  EXPECT_EQ(dst[2 * mr * kDiagKC + (mr + 0) * kDiagKC + 3], v[4 * ld + 6]);
  EXPECT_EQ(dst[2 * mr * kDiagKC + (mr + 1) * kDiagKC + 3], 0.0);
}

// On every target: panels one vector wide take the in-register transposes
// (diag_pairs/pack_sym.cpp), the others and the last h go value by value.
class PackDiagSym : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(PackDiagSym);

TEST_P(PackDiagSym, RowsAsLanesThreeValuesPerH) {
  for (const std::int64_t nr : {1, 2, 3, 4, 8}) {
    for (const std::int64_t rows : {std::int64_t{1}, nr / 2 + 1, nr}) {
      for (const std::int64_t d : {1, 2, 7, 8, 9, 20, 33}) {
        const std::int64_t ld = d + 3;
        std::vector<double> mu(nr * ld), v(nr * ld), lam(nr * ld);
        for (std::int64_t i = 0; i < nr * ld; ++i) {
          mu[i] = static_cast<double>(i) + 1;
          v[i] = static_cast<double>(i) + 10000;
          lam[i] = static_cast<double>(i) + 20000;
        }
        std::vector<double> dst(3 * nr * d + 1, -1.0);
        pack_diag_sym(mu.data(), v.data(), lam.data(), ld, rows, d, nr, dst.data());
        for (std::int64_t c = 0; c < nr; ++c) {
          for (std::int64_t h = 0; h < d; ++h) {
            const double* at = &dst[h * 3 * nr];
            EXPECT_EQ(at[c], c < rows ? mu[c * ld + h] : 0.0) << nr << " " << c << " " << h;
            EXPECT_EQ(at[nr + c], c < rows ? v[c * ld + h] : 0.0) << nr << " " << c << " " << h;
            EXPECT_EQ(at[2 * nr + c], c < rows ? lam[c * ld + h] : 0.0) << nr << " " << c;
          }
        }
        EXPECT_EQ(dst.back(), -1.0) << "wrote past the panel";
      }
    }
  }
}

}  // namespace
}  // namespace gausskl::cpu
