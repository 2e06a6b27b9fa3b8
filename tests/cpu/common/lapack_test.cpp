// The OpenBLAS the library links (cmake/openblas.cmake), called through cpu/common/lapack.hpp:
// against values worked by hand.
#include "cpu/common/lapack.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace gausskl::cpu {
namespace {

TEST(Lapack, CholeskyAndEigenvaluesOfASmallMatrix) {
  // [[4, 2], [2, 3]] = L L^T with L = [[2, 0], [1, sqrt 2]]; eigenvalues (7 -+ sqrt 17) / 2.
  std::vector<double> a = {4, 2, 2, 3};
  ASSERT_EQ(lapack::dpotrf('L', 2, a.data(), 2), 0);
  EXPECT_DOUBLE_EQ(a[0], 2);
  EXPECT_DOUBLE_EQ(a[1], 1);
  EXPECT_DOUBLE_EQ(a[3], std::sqrt(2.0));
  std::vector<double> b = {4, 2, 2, 3}, w(2);
  lapack::Int lwork = 0, liwork = 0;
  lapack::dsyevd_workspace('N', 2, &lwork, &liwork);
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<lapack::Int> iwork(static_cast<std::size_t>(liwork));
  ASSERT_EQ(
      lapack::dsyevd('N', 'L', 2, b.data(), 2, w.data(), work.data(), lwork, iwork.data(), liwork),
      0);
  EXPECT_NEAR(w[0], (7 - std::sqrt(17.0)) / 2, 1e-15);
  EXPECT_NEAR(w[1], (7 + std::sqrt(17.0)) / 2, 1e-15);
}

TEST(Lapack, NotPositiveDefiniteNamesTheMinor) {
  std::vector<double> a = {1, 2, 2, 1};
  EXPECT_EQ(lapack::dpotrf('L', 2, a.data(), 2), 2);
}

TEST(Lapack, SyrkIsAGramMatrix) {
  // A = [[1, 2], [3, 4]] column-major (columns (1, 3), (2, 4)): A^T A = [[10, 14], [14, 20]].
  const std::vector<double> a = {1, 3, 2, 4};
  std::vector<double> c(4, 0.0);
  lapack::dsyrk('L', 'T', 2, 2, 1.0, a.data(), 2, 0.0, c.data(), 2);
  EXPECT_EQ(c[0], 10);
  EXPECT_EQ(c[1], 14);
  EXPECT_EQ(c[3], 20);
}

}  // namespace
}  // namespace gausskl::cpu
