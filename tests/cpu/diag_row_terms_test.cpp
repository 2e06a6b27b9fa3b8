// diag_row_terms on every compiled Highway target against diag_terms (libm, one value at a time):
// log sigma within the 8u |log sigma| the header promises, variances within 2u relative (of
// the exact sigma^2, which the libm side's b * b is within 3u of), every length around the
// vector widths, values across the accepted range of each parameterization.
#include "cpu/diag_row_terms.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cpu/diag_terms.hpp"
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
    for (std::int64_t n = 0; n <= 37; ++n) {
      std::vector<double> x(n), log_sigma(n), variance(n), log_only(n);
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
      diag_row_terms(param, x.data(), n, log_sigma.data(), variance.data());
      diag_row_terms(param, x.data(), n, log_only.data(), nullptr);
      for (std::int64_t h = 0; h < n; ++h) {
        double b = 0, inv_b = 0, lb = 0;
        diag_terms(param, x[h], &b, &inv_b, &lb);
        // libm's log is within 1 ulp: 10u together.
        EXPECT_NEAR(log_sigma[h], lb, 10 * kU * std::abs(lb) + 1e-300) << h;
        EXPECT_EQ(log_only[h], log_sigma[h]) << h;
        EXPECT_NEAR(variance[h], b * b, 8 * kU * b * b) << h;
      }
    }
  }
}

}  // namespace
}  // namespace gausskl::cpu
