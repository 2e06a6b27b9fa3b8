// The per-element terms of a diagonal row that the all-pairs plan needs from a scale parameter:
// log sigma and, for p, the variance. A Highway loop per target (diag_row_terms.cpp), chosen at
// run time: the logarithms were a quarter of a 1024 x 1024 x 256 pairwise call done one at a
// time through libm.
#pragma once

#include <cstdint>

#include "gausskl/types.hpp"

namespace gausskl::cpu {

// For h < n: log_sigma[h] = log sigma of x[h] under `param`, and, when variance is not null,
// variance[h] = sigma^2. Highway's Log is within 4 ulp and Exp within 1 ulp (hwy/contrib/math),
// so log_sigma[h] is within 8u |log_sigma[h]| (u = 2^-53), and variance[h] within 2u relative
// (one rounding, or Exp's ulp, or a division). x must be valid (positive and finite, variances
// in [1e-300, 1e300] as validation ensures).
void diag_row_terms(DiagParam param, const double* x, std::int64_t n, double* log_sigma,
                    double* variance) noexcept;

}  // namespace gausskl::cpu
