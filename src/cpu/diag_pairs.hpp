// The all-pairs plan when both sides are diagonal: the hot path of pairwise and knn.
//
// 2 KL(p_i || q_j) = Q_ij - D - S_i + T_j with Q_ij = sum_h ((mu_ih - nu_jh)^2 + v_ih) lam_jh
// from the SIMD kernel (diag_quadratic.hpp: in double, or in float for float inputs when the
// tolerance is loose enough for its bound, float_kernel_allowed), S_i = sum_h log v_ih and
// T_j = sum_h log w_jh (compensated sums of diag_row_terms' logarithms). Every entry carries a
// deterministic error bound (finish_diag.hpp): the kernel's relative bound on Q, the roundings
// of its operands and of the final subtraction, and the sums' errors. Where that bound exceeds
// `tolerance` * (KL + 1) (near-duplicates, whose KL is a small difference of D-sized numbers),
// the entry is recomputed by the exact per-dimension form from the caller's arrays, which the
// plan views (they must outlive it) rather than copies.
#pragma once

#include <algorithm>
#include <cstdint>
#include <variant>
#include <vector>

#include "cpu/tunables.hpp"
#include "cpu/ukr_diag.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

class DiagPairs {
 public:
  // q == nullptr: q = p. tolerance: the largest |error| / (KL + 1) left un-recomputed.
  template <class T>
  DiagPairs(const DiagGaussians<T>& p, const DiagGaussians<T>* q, double tolerance, int threads);

  // Bytes a DiagPairs of these sizes keeps, plus block()'s packing buffers on `threads` threads.
  template <class T>
  static std::int64_t footprint(std::int64_t n, std::int64_t m, std::int64_t d, bool self,
                                double tolerance, int threads);
  // What block(..., float*, threads) allocates besides, for m columns: a buffer per worker of
  // kDiagFloatPassBytes, or of one row if that is longer (a pass is at least one row).
  static std::int64_t float_buffer_values(std::int64_t m) {
    return std::max(kDiagFloatPassBytes / 8, m);
  }
  static std::int64_t float_block_bytes(std::int64_t m, int threads) {
    return 8 * threads * float_buffer_values(m);
  }

  // Whether float inputs with this tolerance at depth d run the float kernel: when the
  // tolerance is at least kDiagFloatKernelMargin times its bound, and the values stay in the
  // range where that bound holds (checked while constructing; float_kernel() tells).
  static bool float_kernel_allowed(double tolerance, std::int64_t d);
  bool float_kernel() const { return float_kernel_; }

  std::int64_t rows() const { return n_; }
  std::int64_t cols() const { return m_; }

  // out[(i - lo) * cols() + j] = KL(p_i || q_j) for lo <= i < hi, on `threads` threads. In
  // float, through per-worker buffers of kDiagFloatPassBytes (allocated here: std::bad_alloc).
  void block(std::int64_t lo, std::int64_t hi, double* out, int threads) const;
  void block(std::int64_t lo, std::int64_t hi, float* out, int threads) const;

  // KL(p_i || q_j) by the exact per-dimension form (0 at j == i when q = p).
  double exact(std::int64_t i, std::int64_t j) const;

 private:
  // Entries j0 <= j < j1 of row i from the kernel's q[j - j0] into out[j - j0] (out may be q):
  // the O(1) terms and the bound (finish_diag.hpp), then recomputation where needed.
  template <class U>
  void finish_row(std::int64_t i, std::int64_t j0, std::int64_t j1, const double* q, U* out) const;

  // Rows [lo, hi) into out (row i at out + (i - lo) * m): kernel then finish, in passes of rows
  // whose doubles take about pass_bytes, each worker's through `buffer(worker)` (or in place
  // in out when it is double).
  template <class U, class Buffer>
  void rows_in_passes(std::int64_t lo, std::int64_t hi, U* out, int threads,
                      std::int64_t pass_bytes, Buffer&& buffer) const;

  // The two sums of each row of g (s_ for p, t_ for q) and, for p, the kernel's operands (in
  // float with `in_float`). False if in_float and a value is outside the float kernel's range.
  template <class T>
  bool unpack(const DiagGaussians<T>& g, bool as_p, bool in_float, int threads);
  // Packs q's means and precisions for the kernel in U.
  template <class T, class U>
  void pack_q(const DiagGaussians<T>& q, std::vector<U>& packed, std::int64_t nr,
              int threads) const;
  template <class T>
  double exact_from(const DiagGaussians<T>& p, const DiagGaussians<T>& q, std::int64_t i,
                    std::int64_t j) const;

  std::int64_t n_, m_, d_;
  bool self_, float_kernel_ = false;
  // |Q_hat - Q| <= kernel_bound_ * Q_hat + kernel_abs_ (underflow of tiny terms, float only).
  double tolerance_, kernel_bound_, kernel_abs_ = 0;
  // The SIMD target's kernels, chosen once: the packed q is in the layout of the one in use.
  DiagKernel<double> kernel_;
  DiagKernel<float> kernel_f_;
  // The caller's views, which outlive the plan (it lives within one operation's call): exact()
  // computes its terms from them, so nothing but the kernel's operands is copied.
  std::variant<DiagGaussians<float>, DiagGaussians<double>> p_in_, q_in_;
  // Row-major [N, D]: p's means and variances for the kernel in use.
  std::vector<double> mu_, v_;
  std::vector<float> mu_f_, v_f_;
  std::vector<double> s_, abs_s_, t_, abs_t_;  // per row: sum log v, sum |log v|; q likewise
  // q's means and precisions packed once for the kernel in use (pack_diag_q_panels), so that
  // blocks of any number of rows never pack q again.
  std::vector<double> q_packed_;
  std::vector<float> q_packed_f_;
};

}  // namespace gausskl::cpu
