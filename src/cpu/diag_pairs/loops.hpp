// The loop nest of diag_quadratic around any microkernel (ukr_diag.hpp), so that the tests can
// run it with the reference kernel or with each target's kernel.
#pragma once

#include <cstdint>

#include "cpu/diag_pairs/ukr.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {

// diag_quadratic (diag_quadratic.hpp) computed with `kernel`.
template <class T>
void diag_quadratic_loops(const DiagKernel<T>& kernel, const T* mu, const T* v, std::int64_t m,
                          const T* nu, const T* lam, std::int64_t n, std::int64_t d, double* q,
                          std::int64_t ldq) noexcept;

// Columns per q panel of the loop nest for a kernel of nr columns (kDiagNC rounded down to whole
// micro-panels).
inline std::int64_t diag_panel_columns(std::int64_t nr) {
  return kDiagNC / nr * nr;
}

// All of q packed once, panel after panel (each KC-deep block as pack_diag_q writes it), for
// many calls over different rows of p: values held, and where panel jc's block pc starts.
inline std::int64_t diag_packed_q_size(std::int64_t n, std::int64_t d, std::int64_t nr) {
  return (n + nr - 1) / nr * nr * 2 * d;
}
std::int64_t diag_packed_q_offset(std::int64_t n, std::int64_t d, std::int64_t nr, std::int64_t jc,
                                  std::int64_t pc);
template <class T>
void pack_diag_q_panels(const T* nu, const T* lam, std::int64_t n, std::int64_t d, std::int64_t nr,
                        T* dst) noexcept;

// diag_quadratic_loops for columns [j0, j1) of q as packed by pack_diag_q_panels (n_all columns,
// the same kernel); j0 must be a multiple of diag_panel_columns(nr). Column j goes to
// q[i * ldq + j - j0]. Bitwise the same values as diag_quadratic_loops.
template <class T>
void diag_quadratic_loops_packed(const DiagKernel<T>& kernel, const T* mu, const T* v,
                                 std::int64_t m, const T* q_packed, std::int64_t n_all,
                                 std::int64_t j0, std::int64_t j1, std::int64_t d, double* q,
                                 std::int64_t ldq) noexcept;

}  // namespace gausskl::cpu
