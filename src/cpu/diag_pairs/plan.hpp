// The all-pairs plan when both sides are diagonal: the hot path of pairwise and knn.
//
// 2 KL(p_i || q_j) = Q_ij - D - S_i + T_j with Q_ij = sum_h ((mu_ih - nu_jh)^2 + v_ih) lam_jh
// from a SIMD kernel, S_i = sum_h log v_ih and T_j = sum_h log w_jh (compensated sums of
// diag_row_terms' logarithms). The kernel: with q = p (and the double kernel), the symmetric one
// (diag_pairs/loops_sym.hpp), which gives Q_ij and Q_ji from one pass over a pair of rows; else
// diag_quadratic's (diag_pairs/bound.hpp: in double, or in float for float inputs when the
// tolerance is loose enough for its bound, float_kernel_allowed). Every entry carries a
// deterministic error bound (diag_pairs/finish.hpp): the kernel's relative bound on Q, the
// roundings of its operands and of the final subtraction, and the sums' errors. Where that bound
// exceeds `tolerance` * (KL + 1) (near-duplicates, whose KL is a small difference of D-sized
// numbers), the entry is recomputed by the exact per-dimension form from the caller's arrays, which
// the plan views (they must outlive it) rather than copies.
#pragma once

#include <algorithm>
#include <cstdint>
#include <variant>
#include <vector>

#include "cpu/backend.hpp"
#include "cpu/common/buffer.hpp"
#include "cpu/diag_pairs/ukr.hpp"
#include "cpu/diag_pairs/ukr_sym.hpp"
#include "cpu/tunables.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

class DiagPairs {
 public:
  // q == nullptr: q = p. tolerance: the largest |error| / (KL + 1) left un-recomputed. kernel:
  // the plan's (sym only with q = p, float_kernel only with T = float); with float_kernel, the
  // pairs of a row with a value outside its range are computed by exact() (the other pairs keep
  // the kernel: an entry's value depends on its own rows only).
  template <class T>
  DiagPairs(const DiagGaussians<T>& p, const DiagGaussians<T>* q, double tolerance,
            DiagKernelKind kernel, int threads);

  // Bytes a DiagPairs of these sizes keeps, plus preparing's and block()'s packing buffers on
  // `threads` threads (with float_kernel, the double kernel's too: a bound).
  template <class T>
  static std::int64_t footprint(std::int64_t n, std::int64_t m, std::int64_t d, bool self,
                                DiagKernelKind kernel, int threads);
  // What block(..., float*, threads) allocates besides, for m columns: a buffer per worker of
  // kDiagFloatPassBytes, or of one row if that is longer (a pass is at least one row).
  static std::int64_t float_buffer_values(std::int64_t m) {
    return std::max(kDiagFloatPassBytes / 8, m);
  }
  static std::int64_t float_block_bytes(std::int64_t m, int threads) {
    return 8 * threads * float_buffer_values(m);
  }

  // The float kernel's bound on |Q_hat - Q| relative to the computed Q at depth d, operands'
  // roundings included: what the plan weighs the tolerance against (kDiagFloatKernelMargin).
  static double float_kernel_bound(std::int64_t d);
  // Whether this plan runs the float kernel.
  bool float_kernel() const { return float_kernel_; }
  // Whether this plan runs the symmetric kernel (q = p and the double kernel).
  bool symmetric() const { return sym_; }

  std::int64_t rows() const { return n_; }
  std::int64_t cols() const { return m_; }

  // out[(i - lo) * cols() + j] = KL(p_i || q_j) for lo <= i < hi, on `threads` threads; an
  // entry's value does not depend on the block or the thread count. The symmetric kernel gives
  // both directions of a pair only when the block holds all rows, else one (the same values).
  // The other kernels write float results through per-worker buffers of kDiagFloatPassBytes.
  // Allocates (std::bad_alloc).
  void block(std::int64_t lo, std::int64_t hi, double* out, int threads) const;
  void block(std::int64_t lo, std::int64_t hi, float* out, int threads) const;

  // KL(p_i || q_j) by the exact per-dimension form (0 at j == i when q = p).
  double exact(std::int64_t i, std::int64_t j) const;

 private:
  // Entries j0 <= j < j1 of row i from the kernel's q[j - j0] into out[j - j0] (out may be q):
  // the O(1) terms and the bound (diag_pairs/finish.hpp), then recomputation where needed.
  template <class U>
  void finish_row(std::int64_t i, std::int64_t j0, std::int64_t j1, const double* q, U* out) const;

  // Rows [lo, hi) into out (row i at out + (i - lo) * m): kernel then finish, in passes of rows
  // whose doubles take about pass_bytes, each worker's through `buffer(worker)` (or in place
  // in out when it is double).
  template <class U, class Buffer>
  void rows_in_passes(std::int64_t lo, std::int64_t hi, U* out, int threads,
                      std::int64_t pass_bytes, Buffer&& buffer) const;

  // The symmetric kernel's blocks: all rows (both directions of each tile) or rows [lo, hi)
  // (the one-sided kernel); tiles handed out to the workers as they come.
  template <class U>
  void sym_block(std::int64_t lo, std::int64_t hi, U* out, int threads) const;
  // The finish of a tile of rows i0 .. i0 + rows - 1 and columns j0 .. j0 + cols - 1 of Q (q,
  // row stride ldq) into out (row stride ldo): finish_diag_tile, exact recomputation of the
  // marked entries, 0 on the diagonal when q = p.
  template <class U>
  void finish_tile(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols,
                   const double* q, std::int64_t ldq, U* out, std::int64_t ldo) const;

  // What prepare() writes for a side: p's rows for diag_quadratic (mu_ and v_, or in float),
  // q packed for it (q_packed_ or q_packed_f_), or the symmetric kernel's panels.
  struct Layouts {
    bool p_rows = false, q_packed = false, sym_panels = false;
  };
  // The two sums of each row of g (s_ when it is p, else t_) and the kernel's operands of
  // `layouts` (in float with `in_float`), in one pass over g on `threads` threads. In float, the
  // rows with a value outside the float kernel's range are marked in outside_p_ / outside_q_ and
  // given neutral operands.
  template <class T>
  void prepare(const DiagGaussians<T>& g, Layouts layouts, bool as_p, bool in_float, int threads);
  template <class T>
  double exact_from(const DiagGaussians<T>& p, const DiagGaussians<T>& q, std::int64_t i,
                    std::int64_t j) const;

  std::int64_t n_, m_, d_;
  bool self_, float_kernel_ = false, sym_ = false;
  // |Q_hat - Q| <= kernel_bound_ * Q_hat + kernel_abs_ (underflow of tiny terms, float only).
  double tolerance_, kernel_bound_, kernel_abs_ = 0;
  // The SIMD target's kernels, chosen once: the packed q is in the layout of the one in use.
  DiagKernel<double> kernel_;
  DiagKernel<float> kernel_f_;
  DiagSymKernel sym_kernel_;
  // The caller's views, which outlive the plan (it lives within one operation's call): exact()
  // computes its terms from them, so nothing but the kernel's operands is copied.
  std::variant<DiagGaussians<float>, DiagGaussians<double>> p_in_, q_in_;
  // Row-major [N, D]: p's means and variances for the kernel in use.
  Buffer<double> mu_, v_;
  Buffer<float> mu_f_, v_f_;
  std::vector<double> s_, abs_s_, t_, abs_t_;  // per row: sum log v, sum |log v|; q likewise
  // The float kernel's rows outside its range, per row of p and of q (empty otherwise): every
  // pair with one is computed by exact().
  std::vector<char> outside_p_, outside_q_;
  // q's means and precisions packed once for the kernel in use (pack_diag_q_panels), so that
  // blocks of any number of rows never pack q again.
  Buffer<double> q_packed_;
  Buffer<float> q_packed_f_;
  // q = p with the double kernel: every row's mean, variance and precision in the symmetric
  // kernel's panels (pack_diag_sym), in place of mu_, v_ and q_packed_.
  Buffer<double> sym_panels_;
};

}  // namespace gausskl::cpu
