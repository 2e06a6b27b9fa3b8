// Jacobi methods on small dense row-major matrices, for the divergences of pairs that need a
// spectrum: cyclic Jacobi eigen-decomposition of a symmetric matrix (values and vectors), and the
// orthogonal polar factor of a square matrix by one-sided (Hestenes) Jacobi, which never forms
// C^T C and so keeps the small singular directions. Never throw, never allocate.
#pragma once

#include <cstdint>

namespace gausskl::cpu {

// a [d*d] symmetric (both triangles stored): its eigenvalues onto its diagonal, and v [d*d] the
// eigenvectors as columns (a = v diag v^T). Sweeps until the off-diagonal is below 2^-60 of the
// whole (or 64 sweeps).
void jacobi_eigen(double* a, double* v, std::int64_t d) noexcept;

// u [d*d] <- the orthogonal polar factor of c [d*d] (c = u h, h symmetric positive
// semi-definite), the orthogonal u that maximizes tr(u^T c). c is overwritten; y [d*d] is scratch.
void polar_factor(double* c, double* y, double* u, std::int64_t d) noexcept;

}  // namespace gausskl::cpu
