// diag_row_terms on every compiled Highway target against diag_terms (libm, one value at a time)
// and long-double sums: log-variances within the 8u the header promises (seen through their
// sum), variances and precisions within 2u relative of the exact sigma^2 and 1 / sigma^2, the
// compensated sum within 2u of the sum of the exact log-variances plus their own error, every
// length around the vector widths, values across the accepted range of each parameterization.
#include "cpu/diag_pairs/row_terms.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cpu/common/diag_terms.hpp"
#include "hwy/tests/hwy_gtest.h"

namespace gausskl::cpu {
namespace {

constexpr double kU = 0x1p-53;

class DiagRowTerms : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(DiagRowTerms);

TEST_P(DiagRowTerms, MatchesLibm) {
  std::mt19937_64 rng(91);
  // log10 of sigma: from 1e-150 to 1e150 (variances 1e-300 .. 1e300), and near 1.
  std::uniform_real_distribution<double> wide(-150, 150), near(-1e-6, 1e-6);
  for (const DiagParam param :
       {DiagParam::stddev, DiagParam::var, DiagParam::logvar, DiagParam::precision}) {
    // Every length around the vector widths, and rows long enough for several products of
    // kProductTerms factors per lane (diag_pairs/row_terms.cpp).
    std::vector<std::int64_t> lengths;
    for (std::int64_t n = 0; n <= 37; ++n)
      lengths.push_back(n);
    for (const std::int64_t n : {1000, 4097, 9001})
      lengths.push_back(n);
    for (const std::int64_t n : lengths) {
      std::vector<double> x(n), variance(n, -1), precision(n, -1), v_only(n), lam_only(n);
      for (std::int64_t h = 0; h < n; ++h) {
        const double ls = (h % 3 ? wide(rng) : near(rng)) * std::log(10.0);  // log sigma
        switch (param) {
          case DiagParam::stddev:
            x[h] = std::exp(ls);
            break;
          case DiagParam::var:
            x[h] = std::exp(2 * ls);
            break;
          case DiagParam::logvar:
            x[h] = 2 * ls;
            break;
          case DiagParam::precision:
            x[h] = std::exp(-2 * ls);
            break;
        }
      }
      const DiagRowSums sums =
          diag_row_terms(param, x.data(), n, variance.data(), precision.data());
      const DiagRowSums alone = diag_row_terms(param, x.data(), n, v_only.data(), nullptr);
      diag_row_terms(param, x.data(), n, nullptr, lam_only.data());
      const DiagRowSums none = diag_row_terms(param, x.data(), n, nullptr, nullptr);
      long double sum = 0, abs_sum = 0;
      for (std::int64_t h = 0; h < n; ++h) {
        // The exact terms of x[h] in long double: l = log sigma^2 straight from the parameter
        // (not through sigma, whose rounding near 1 would cost l its relative accuracy).
        const long double xl = x[h];
        long double l = 0;
        switch (param) {
          case DiagParam::stddev:
            l = 2 * std::log(xl);
            break;
          case DiagParam::var:
            l = std::log(xl);
            break;
          case DiagParam::logvar:
            l = xl;
            break;
          case DiagParam::precision:
            l = -std::log(xl);
            break;
        }
        const long double var_l = param == DiagParam::stddev      ? xl * xl
                                  : param == DiagParam::var       ? xl
                                  : param == DiagParam::precision ? 1 / xl
                                                                  : std::exp(xl);
        sum += l;
        abs_sum += std::abs(l);
        const double v = static_cast<double>(var_l), lam = static_cast<double>(1 / var_l);
        EXPECT_NEAR(variance[h], v, 2.5 * kU * v) << h;
        EXPECT_NEAR(precision[h], lam, 2.5 * kU * lam) << h;
        EXPECT_EQ(v_only[h], variance[h]) << h;
        EXPECT_EQ(lam_only[h], precision[h]) << h;
      }
      // The sum within 10u of the bound on sum |l_h| (plus the long double's own error), and
      // that bound between sum |l_h| and 1.5 times it.
      EXPECT_NEAR(sums.log_det, static_cast<double>(sum), 10.5 * kU * sums.abs_log_det) << n;
      EXPECT_GE(sums.abs_log_det, static_cast<double>(abs_sum) * (1 - 1e-15))
          << n << " " << sums.abs_log_det - static_cast<double>(abs_sum);
      EXPECT_LE(sums.abs_log_det, 1.5 * static_cast<double>(abs_sum) + 1e-300) << n;
      EXPECT_EQ(sums.min_variance, n ? *std::min_element(variance.begin(), variance.end()) : 1.0);
      EXPECT_EQ(sums.max_variance, n ? *std::max_element(variance.begin(), variance.end()) : 1.0);
      EXPECT_EQ(alone.log_det, sums.log_det);
      EXPECT_EQ(none.log_det, sums.log_det);
      EXPECT_EQ(none.abs_log_det, sums.abs_log_det);
    }
  }
}

// Terms that cancel: a, tiny, -a, ... with tiny below half an ulp of a, which a plain sum loses
// entirely; the compensated sum is within u |sum| + O(n u^2) sum |l_h| of n / 3 tiny.
TEST_P(DiagRowTerms, CompensatedSumOfCancellingTerms) {
  const double a = 600.0 + 1.0 / 3, tiny = 3e-14;
  for (const std::int64_t n : {3, 9, 15, 48, 99}) {
    std::vector<double> x(n);
    for (std::int64_t h = 0; h < n; ++h)
      x[h] = h % 3 == 0 ? a : h % 3 == 1 ? tiny : -a;  // logvar: log sigma^2 itself
    const DiagRowSums sums = diag_row_terms(DiagParam::logvar, x.data(), n, nullptr, nullptr);
    const double want = static_cast<double>(n / 3) * tiny;
    EXPECT_NEAR(sums.log_det, want, 4 * kU * want + 1e-24) << n;
  }
}

// The same cancellation through logarithms: sigma and 1 / sigma alternating (log sigma^2
// summing to 0), then one sigma near 1; and all sigma within 1e-9 of 1, where every l_h is tiny.
// The product of the reduced y_h keeps the sum within 10u of the bound on sum |l_h|.
TEST_P(DiagRowTerms, LogarithmsOfCancellingAndNearOneTerms) {
  for (const DiagParam param : {DiagParam::stddev, DiagParam::var, DiagParam::precision}) {
    for (const std::int64_t n : {3, 9, 64, 5001}) {
      std::vector<double> x(n), near(n);
      long double want = 0, want_near = 0, abs_near = 0;
      for (std::int64_t h = 0; h < n; ++h) {
        x[h] = h + 1 == n ? 1.0 + 1e-9 : h % 2 ? 1 / 37.25 : 37.25;  // both exact in double
        near[h] = 1.0 + 1e-9 * static_cast<double>((h * 7919) % 13 - 6);
      }
      const long double sign = param == DiagParam::stddev ? 2 : param == DiagParam::var ? 1 : -1;
      for (std::int64_t h = 0; h < n; ++h) {
        want += sign * std::log(static_cast<long double>(x[h]));
        want_near += sign * std::log(static_cast<long double>(near[h]));
        abs_near += std::abs(sign * std::log(static_cast<long double>(near[h])));
      }
      const DiagRowSums sums = diag_row_terms(param, x.data(), n, nullptr, nullptr);
      const DiagRowSums near_sums = diag_row_terms(param, near.data(), n, nullptr, nullptr);
      EXPECT_NEAR(sums.log_det, static_cast<double>(want), 10.5 * kU * sums.abs_log_det) << n;
      EXPECT_NEAR(near_sums.log_det, static_cast<double>(want_near),
                  10.5 * kU * near_sums.abs_log_det)
          << n;
      EXPECT_LE(near_sums.abs_log_det, 1.5 * static_cast<double>(abs_near)) << n;
    }
  }
}

}  // namespace
}  // namespace gausskl::cpu
