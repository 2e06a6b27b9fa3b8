// The orthogonal polar factor of a small dense row-major matrix by one-sided (Hestenes) Jacobi,
// which never forms C^T C and so keeps the small singular directions. Never throws, never
// allocates. (The symmetric eigen-decomposition, two-sided Jacobi, is cpu/pair/linalg.hpp's
// jacobi_eigen.)
#pragma once

#include <cstdint>

namespace gausskl::cpu {

// u [d*d] <- the orthogonal polar factor of c [d*d] (c = u h, h symmetric positive
// semi-definite), the orthogonal u that maximizes tr(u^T c). c is overwritten; y [d*d] is scratch.
void polar_factor(double* c, double* y, double* u, std::int64_t d) noexcept;

}  // namespace gausskl::cpu
