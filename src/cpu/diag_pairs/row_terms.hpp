// The per-element terms of a diagonal row that the all-pairs plan needs from a scale parameter
// (variances for p, precisions for q, or both when q = p) and the sum of its log-variances. A
// Highway loop per target (diag_pairs/row_terms.cpp), chosen at run time: the logarithms were a
// quarter of a 1024 x 1024 x 256 pairwise call done one at a time through libm, and a scalar
// compensated sum of them a tenth of a 100 x 100 x 256 one; Highway's Log of each value still
// 14% of the latter, and the sum needs only the logarithm of their product.
#pragma once

#include <cstdint>

#include "gausskl/types.hpp"

namespace gausskl::cpu {

// Sums over a row of l_h = log sigma_h^2.
struct DiagRowSums {
  // sum_h l_h, within 10u abs_log_det (u = 2^-53): as if each l_h were within 8u |l_h| and
  // summed with compensation (Neumaier's sum), the promise all-pairs KL's error bounds count on
  // (diag_pairs/finish.hpp). See RowTerms (diag_pairs/row_terms.cpp) for how.
  double log_det = 0;
  // An upper bound on sum_h |l_h|, within a factor 1.5 of it (it only scales error bounds).
  double abs_log_det = 0;
  // The smallest and largest sigma_h^2 (1 for an empty row).
  double min_variance = 1, max_variance = 1;
};

// For h < n: variance[h] = sigma^2 and precision[h] = 1 / sigma^2 of x[h] under `param` (each
// only when not null), each within 2u relative (one or two roundings, or Exp's ulp), and the
// sums of the row's log-variances. x must be valid (positive and finite, variances in
// [1e-300, 1e300] as validation ensures). The values depend on the SIMD target (the lanes of
// the sum), never on anything else.
DiagRowSums diag_row_terms(DiagParam param, const double* x, std::int64_t n, double* variance,
                           double* precision) noexcept;

}  // namespace gausskl::cpu
