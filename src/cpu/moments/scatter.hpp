// The rank-k update at the heart of a fitted covariance: the scatter of a chunk of centred rows.
#pragma once

#include <cstdint>

namespace gausskl::cpu {

// scatter += c^T c on the lower triangle (entries (i, j), j <= i) of the row-major [d, d]
// scatter, for the row-major [rows, d] centred rows c; the upper triangle is not touched. BLAS
// dsyrk on `workers` threads, which split the scatter's columns, never a sum: the result does not
// depend on `workers`.
void scatter_add(std::int64_t d, std::int64_t rows, const double* c, double* scatter, int workers);

}  // namespace gausskl::cpu
