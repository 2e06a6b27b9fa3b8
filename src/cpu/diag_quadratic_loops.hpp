// The loop nest of diag_quadratic around any microkernel (ukr_diag.hpp), so that the tests can
// run it with the reference kernel or with each target's kernel.
#pragma once

#include <cstdint>

#include "cpu/ukr_diag.hpp"

namespace gausskl::cpu {

// diag_quadratic (diag_quadratic.hpp) computed with `kernel`.
template <class T>
void diag_quadratic_loops(const DiagKernel<T>& kernel, const T* mu, const T* v, std::int64_t m,
                          const T* nu, const T* lam, std::int64_t n, std::int64_t d, double* q,
                          std::int64_t ldq) noexcept;

}  // namespace gausskl::cpu
