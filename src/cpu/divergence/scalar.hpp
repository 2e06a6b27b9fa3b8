// Scalar forms of the divergences' terms that stay accurate where the textbook formula cancels
// (docs/divergences.md derives each). Two parameters describe a pair of variances, or a pair of
// directions of two covariances: mu = lambda - 1 and r = log lambda = log1p(mu), lambda the ratio
// sigma_1^2 / sigma_2^2 (an eigenvalue of Sigma_2^-1 Sigma_1); both are passed because either may
// be the one known exactly (r from the logs of a diagonal, mu from a difference of covariances).
#pragma once

#include <cmath>

namespace gausskl::cpu {

// u - log1p(u) >= 0 for u > -1, relative to its own size near 0 (where it is u^2 / 2): the series
// to u^11 for |u| < 1e-2 (the next term is below 2^-53 of u^2 / 2 there).
inline double minus_log1p_plus_x(double u) {
  if (std::abs(u) < 1e-2) {
    double sum = 0;
    for (int k = 11; k >= 2; --k)
      sum = sum * u + ((k % 2 == 0) ? 1.0 : -1.0) / k;
    return sum * u * u;
  }
  return u - std::log1p(u);
}

// log cosh t >= 0, exactly 0 at t = 0 and relative to its size (t^2 / 2) near 0: cosh t - 1 is
// 2 sinh^2(t / 2), without the cancellation of cosh t - 1; for |t| >= 20 the form
// |t| - log 2 + log1p(e^-2|t|), which does not overflow.
inline double log_cosh(double t) {
  const double a = std::abs(t);
  if (a < 20) {
    const double s = std::sinh(0.5 * a);
    return std::log1p(2 * s * s);
  }
  return a - 0.69314718055994530942 + std::log1p(std::exp(-2 * a));
}

// Jeffreys' variance term per direction, 2 (cosh r - 1) = e^r - 1 + e^-r - 1 = mu^2 / (1 + mu)
// (= 4 sinh^2(r / 2)): a sum of two non-negative terms, never a difference.
inline double jeffreys_variance_term(double r) {
  const double s = std::sinh(0.5 * r);
  return 4 * s * s;
}

// Renyi's variance term per direction, with beta = 1 - alpha and 1 + beta mu > 0:
//   [log1p(beta mu) - beta r] / (2 beta)
// which is the log of the mixed variance over the geometric mean, over 2 (alpha - 1), with sign.
// Near mu = 0 both logs cancel to first order: there it is [m(mu) - m(beta mu) / beta] / 2 with
// m(u) = u - log1p(u) (the same quantity: beta mu - beta r = beta m(mu)), a difference of two
// second-order terms that loses at most a factor 1 / alpha (alpha < 1; for alpha > 1 both are
// non-negative). Tends to KL's (e^r - 1 - r) / 2 as alpha -> 1.
inline double renyi_variance_term(double mu, double r, double beta) {
  if (std::abs(mu) < 0.5) {
    return 0.5 * (minus_log1p_plus_x(mu) - minus_log1p_plus_x(beta * mu) / beta);
  }
  const double term = (std::log1p(beta * mu) - beta * r) / (2 * beta);
  return term > 0 ? term : 0.0;  // >= 0 exactly (a divergence in one dimension); below is round-off
}

// A sum of non-negative terms as a divergence: NaN only from an overflow (inf - inf) where the
// exact value is beyond the largest double too.
inline double divergence_of_sum(double sum) {
  if (std::isnan(sum)) return HUGE_VAL;
  return sum > 0 ? sum : 0.0;
}

}  // namespace gausskl::cpu
