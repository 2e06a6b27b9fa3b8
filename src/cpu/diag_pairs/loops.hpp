// The hot loop of diagonal all-pairs KL: the quadratic part of 2 KL(p_i || q_j),
//   Q[i, j] = sum_h ((mu_ih - nu_jh)^2 + v_ih) lam_jh,
// with mu, v the means and variances of p and nu, lam the means and precisions of q, as a
// BLIS-style loop nest around any microkernel (ukr.hpp): the plan passes the kernel of the SIMD
// target chosen at run time (diag_kernel<T>()), the tests also the reference kernel. The caller
// adds the O(N + M) terms (- D + sum log v - sum log w) in double.
#pragma once

#include <cstdint>

#include "cpu/diag_pairs/ukr.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {

// Q[i * ldq + j] = sum_{h < d} ((mu[i*d + h] - nu[j*d + h])^2 + v[i*d + h]) * lam[j*d + h]
// for i < m, j < n, computed with `kernel`. Inputs row-major, contiguous; ldq >= n; m, n, d >= 0
// (d = 0 gives Q = 0). T = float computes each term in float and accumulates blocks of at most
// kDiagFloatBlock terms in float, adding each block into double; T = double computes in double.
// Every entry satisfies |Q_hat - Q| <= diag_quadratic_error_bound<T>(d) * Q (bound.hpp), as long
// as no intermediate overflows (it then gives +inf) and no nonzero term falls below the smallest
// normal T.
//
// An entry's value depends only on its own two rows and on the kernel: calling on any split of
// the rows or columns gives bitwise the same Q (thread-count independence). Never throws; never
// allocates except two thread_local packing buffers of fixed size (a q panel and a p block,
// diag_quadratic_buffer_bytes<T>() together: 640 KiB for float, 1280 KiB for double), allocated
// on the first call in each thread (the process terminates if that fails). Safe to call from
// several threads at once. Single-threaded: the caller splits rows over threads.
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
