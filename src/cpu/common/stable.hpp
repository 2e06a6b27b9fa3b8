// Scalar forms that stay accurate where the textbook formula cancels.
#pragma once

#include <cmath>

namespace gausskl::cpu {

// 2 KL >= 0 from a sum of its terms. Inputs are validated finite with log-determinants bounded,
// so a NaN can only come from a solve that overflowed (0 * inf, inf - inf): one squared term
// already exceeds the largest double, and so does the exact value.
inline double two_kl_of_sum(double sum) {
  if (std::isnan(sum)) return HUGE_VAL;
  return sum > 0 ? sum : 0.0;  // a negative sum is round-off
}

// e^r - 1 - r, the per-dimension variance term of 2 KL with r = log(v_p / v_q)
// (it equals rho - 1 - log(rho) for rho = v_p / v_q). Exactly 0 at r = 0 and accurate
// relative to its own size near 0, where rho - 1 - log(rho) loses every digit.
// For |r| < 0.1 the Taylor series r^2/2! + r^3/3! + ... is summed to 12 terms (the
// 13th, r^13/13!, is below 2^-53 of r^2/2 there); beyond, expm1(r) - r loses at most
// a factor of 2 / |r| <= 20 ulps to cancellation.
inline double expm1_minus_x(double r) {
  if (std::abs(r) < 0.1) {
    double sum = 1.0 / 479001600.0;  // 1/12!
    constexpr double inv_fact[] = {1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0,
                                   1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,    1.0 / 24.0,
                                   1.0 / 6.0,        1.0 / 2.0};
    for (double c : inv_fact)
      sum = sum * r + c;
    return sum * r * r;
  }
  return std::expm1(r) - r;
}

}  // namespace gausskl::cpu
