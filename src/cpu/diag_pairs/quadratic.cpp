// The front end of diag_quadratic: the runtime-chosen kernel (ukr_diag.cpp) in the loop nest
// (diag_quadratic_loops.cpp).
#include "cpu/diag_pairs/bound.hpp"

#include "cpu/diag_pairs/loops.hpp"
#include "cpu/diag_pairs/ukr.hpp"

namespace gausskl::cpu {

template <class T>
void diag_quadratic(const T* mu, const T* v, std::int64_t m, const T* nu, const T* lam,
                    std::int64_t n, std::int64_t d, double* q, std::int64_t ldq) noexcept {
  diag_quadratic_loops(diag_kernel<T>(), mu, v, m, nu, lam, n, d, q, ldq);
}

const char* diag_quadratic_target() noexcept {
  return diag_kernel_target();
}

template void diag_quadratic(const float*, const float*, std::int64_t, const float*, const float*,
                             std::int64_t, std::int64_t, double*, std::int64_t) noexcept;
template void diag_quadratic(const double*, const double*, std::int64_t, const double*,
                             const double*, std::int64_t, std::int64_t, double*,
                             std::int64_t) noexcept;

}  // namespace gausskl::cpu
