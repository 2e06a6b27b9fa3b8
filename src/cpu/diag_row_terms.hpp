// The per-element terms of a diagonal row that the all-pairs plan needs from a scale parameter
// (variances for p, precisions for q, or both when q = p) and the sums of its log-variances. A
// Highway loop per target (diag_row_terms.cpp), chosen at run time: the logarithms were a
// quarter of a 1024 x 1024 x 256 pairwise call done one at a time through libm, and a scalar
// compensated sum of them a tenth of a 100 x 100 x 256 one.
#pragma once

#include <cstdint>

#include "gausskl/types.hpp"

namespace gausskl::cpu {

// Sums over a row of l_h = log sigma_h^2, each l_h within 8u |l_h| (Highway's Log is within
// 4 ulp, u = 2^-53).
struct DiagRowSums {
  // sum_h l_h, compensated (Neumaier's sum in each lane, then over the lanes' sums and carries):
  // within u |sum| + O(n u^2) sum_h |l_h| of the exact sum of the computed l_h, so within
  // 2u sum_h |l_h| for any n this library meets.
  double log_det = 0;
  double abs_log_det = 0;  // sum_h |l_h| (plain sum: it only scales error bounds)
  double max_abs_log = 0;  // max_h |l_h|
};

// For h < n: variance[h] = sigma^2 and precision[h] = 1 / sigma^2 of x[h] under `param` (each
// only when not null), each within 2u relative (one or two roundings, or Exp's ulp), and the
// sums of the row's log-variances. x must be valid (positive and finite, variances in
// [1e-300, 1e300] as validation ensures). The values depend on the SIMD target (the lanes of
// the sum), never on anything else.
DiagRowSums diag_row_terms(DiagParam param, const double* x, std::int64_t n, double* variance,
                           double* precision) noexcept;

}  // namespace gausskl::cpu
