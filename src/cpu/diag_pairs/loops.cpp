// BLIS-style block-panel loop nest: jc over panels of kDiagNC columns of q, pc over blocks of
// kDiagKC h, ic over blocks of kDiagMC rows of p, then jr and ir over the micro-tiles.
#include "cpu/diag_pairs/loops.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>

#include "cpu/diag_pairs/bound.hpp"
#include "cpu/diag_pairs/pack.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {
namespace {

constexpr std::int64_t kPanelValues = 2 * kDiagKC * kDiagNC;
constexpr std::int64_t kBlockValues = 2 * kDiagKC * kDiagMC;
static_assert(diag_quadratic_buffer_bytes<double>() ==
              sizeof(double) * (kPanelValues + kBlockValues));
static_assert(diag_quadratic_p_block_bytes<double>() == sizeof(double) * kBlockValues);

// A packing buffer of `values` T, one per thread and Tag, allocated on its first use, so that
// concurrent calls never share it and a call never allocates; failure to allocate terminates
// (the callers are noexcept). The q panel and the p block are separate: with q packed once
// (diag_quadratic_loops_packed) a thread never needs the panel.
template <class T, std::int64_t values, class Tag>
T* packing_buffer() noexcept {
  constexpr std::align_val_t kAlign{64};
  struct Free {
    void operator()(T* ptr) const noexcept { ::operator delete[](ptr, std::align_val_t{64}); }
  };
  thread_local const std::unique_ptr<T[], Free> buffer(
      static_cast<T*>(::operator new[](sizeof(T) * values, kAlign)));
  return buffer.get();
}
struct PBlockTag {};
struct QPanelTag {};

// The loop nest over packed q panels from q_panel_at(jc, pc, nc_cur, kc_cur): packed on the
// spot (diag_quadratic_loops) or found in q packed once by pack_diag_q_panels
// (diag_quadratic_loops_packed).
template <class T, class QPanelAt>
void loop_nest(const DiagKernel<T>& kernel, const T* mu, const T* v, std::int64_t m, std::int64_t n,
               std::int64_t d, double* q, std::int64_t ldq, QPanelAt&& q_panel_at) noexcept {
  if (m <= 0 || n <= 0) return;
  if (d <= 0) {
    for (std::int64_t i = 0; i < m; ++i)
      std::fill(q + i * ldq, q + i * ldq + n, 0.0);
    return;
  }
  const std::int64_t mr = kernel.tile.mr, nr = kernel.tile.nr;
  const std::int64_t nc = diag_panel_columns(nr), mc = kDiagMC / mr * mr;
  T* const p_block = packing_buffer<T, kBlockValues, PBlockTag>();
  for (std::int64_t jc = 0; jc < n; jc += nc) {
    const std::int64_t nc_cur = std::min(nc, n - jc);
    for (std::int64_t pc = 0; pc < d; pc += kDiagKC) {
      const std::int64_t kc_cur = std::min(kDiagKC, d - pc);
      const T* q_panel = q_panel_at(jc, pc, nc_cur, kc_cur);
      for (std::int64_t ic = 0; ic < m; ic += mc) {
        const std::int64_t mc_cur = std::min(mc, m - ic);
        pack_diag_p(mu + ic * d + pc, v + ic * d + pc, d, mc_cur, kc_cur, mr, p_block);
        for (std::int64_t jr = 0; jr < nc_cur; jr += nr) {
          for (std::int64_t ir = 0; ir < mc_cur; ir += mr) {
            kernel.ukr(std::min(mr, mc_cur - ir), std::min(nr, nc_cur - jr), kc_cur,
                       p_block + ir * 2 * kDiagKC, q_panel + jr * 2 * kc_cur, pc > 0,
                       q + (ic + ir) * ldq + jc + jr, ldq, kernel.tile);
          }
        }
      }
    }
  }
}

}  // namespace

template <class T>
void diag_quadratic_loops(const DiagKernel<T>& kernel, const T* mu, const T* v, std::int64_t m,
                          const T* nu, const T* lam, std::int64_t n, std::int64_t d, double* q,
                          std::int64_t ldq) noexcept {
  T* const q_panel = packing_buffer<T, kPanelValues, QPanelTag>();
  const std::int64_t nr = kernel.tile.nr;
  loop_nest(kernel, mu, v, m, n, d, q, ldq,
            [&](std::int64_t jc, std::int64_t pc, std::int64_t nc_cur, std::int64_t kc_cur) {
              pack_diag_q(nu + jc * d + pc, lam + jc * d + pc, d, nc_cur, kc_cur, nr, q_panel);
              return static_cast<const T*>(q_panel);
            });
}

std::int64_t diag_packed_q_offset(std::int64_t n, std::int64_t d, std::int64_t nr, std::int64_t jc,
                                  std::int64_t pc) {
  const std::int64_t width = std::min(diag_panel_columns(nr), n - jc);
  return jc * 2 * d + pc * 2 * ((width + nr - 1) / nr * nr);
}

template <class T>
void pack_diag_q_panels(const T* nu, const T* lam, std::int64_t n, std::int64_t d, std::int64_t nr,
                        T* dst) noexcept {
  const std::int64_t nc = diag_panel_columns(nr);
  for (std::int64_t jc = 0; jc < n; jc += nc) {
    for (std::int64_t pc = 0; pc < d; pc += kDiagKC) {
      pack_diag_q(nu + jc * d + pc, lam + jc * d + pc, d, std::min(nc, n - jc),
                  std::min(kDiagKC, d - pc), nr, dst + diag_packed_q_offset(n, d, nr, jc, pc));
    }
  }
}

template <class T>
void diag_quadratic_loops_packed(const DiagKernel<T>& kernel, const T* mu, const T* v,
                                 std::int64_t m, const T* q_packed, std::int64_t n_all,
                                 std::int64_t j0, std::int64_t j1, std::int64_t d, double* q,
                                 std::int64_t ldq) noexcept {
  const std::int64_t nr = kernel.tile.nr;
  loop_nest(kernel, mu, v, m, j1 - j0, d, q, ldq,
            [&](std::int64_t jc, std::int64_t pc, std::int64_t, std::int64_t) {
              return q_packed + diag_packed_q_offset(n_all, d, nr, j0 + jc, pc);
            });
}

template void pack_diag_q_panels(const float*, const float*, std::int64_t, std::int64_t,
                                 std::int64_t, float*) noexcept;
template void pack_diag_q_panels(const double*, const double*, std::int64_t, std::int64_t,
                                 std::int64_t, double*) noexcept;
template void diag_quadratic_loops_packed(const DiagKernel<float>&, const float*, const float*,
                                          std::int64_t, const float*, std::int64_t, std::int64_t,
                                          std::int64_t, std::int64_t, double*,
                                          std::int64_t) noexcept;
template void diag_quadratic_loops_packed(const DiagKernel<double>&, const double*, const double*,
                                          std::int64_t, const double*, std::int64_t, std::int64_t,
                                          std::int64_t, std::int64_t, double*,
                                          std::int64_t) noexcept;
template void diag_quadratic_loops(const DiagKernel<float>&, const float*, const float*,
                                   std::int64_t, const float*, const float*, std::int64_t,
                                   std::int64_t, double*, std::int64_t) noexcept;
template void diag_quadratic_loops(const DiagKernel<double>&, const double*, const double*,
                                   std::int64_t, const double*, const double*, std::int64_t,
                                   std::int64_t, double*, std::int64_t) noexcept;

}  // namespace gausskl::cpu
