// All pairs of a divergence between two diagonal sides in SIMD tiles, each entry with a
// deterministic error bound:
//   * wasserstein2 and jeffreys on the KL tile kernel (diag_pairs/loops.hpp, which computes
//     Q_ij = sum_k ((a_ik - b_jk)^2 + c_ik) e_jk with a per-entry relative error bound):
//     wasserstein2 = sum_h (mu - nu)^2 + (sigma_p - sigma_q)^2, the squared Euclidean distance of
//     the rows [mu, sigma] in R^{2D}: Q with a = [mu, sigma_p], b = [nu, sigma_q], c = 0, e = 1;
//     jeffreys = 1/2 sum_h [(mu - nu)^2 (lam_p + lam_q) + v_p lam_q + v_q lam_p] - D
//     = 1/2 (Q_ij + Q'_ji) - D, with Q KL's quadratic part of p_i against q_j (a = mu, c = v_p,
//     b = nu, e = lam_q) and Q' that of q_j against p_i: the logarithms cancel;
//   * bhattacharyya and hellinger on their own kernel (bhat_ukr.hpp): with s_h = v_p + v_q,
//     B = 1/4 sum_h (mu - nu)^2 / s_h + 1/2 [log prod_h s_h - 1/2 log prod_h v_p
//     - 1/2 log prod_h v_q] - D/2 log 2, each product as a mantissa in [1, 2) and an integer
//     exponent (the kernel's for s, prepared per row for v), so that the logarithms' difference is
//     of mantissas (|log m| < 0.7) plus log 2 times an exact integer: its error grows with D u,
//     not with the size of the logarithms; hellinger = -expm1(-B) of the certified B;
//   * renyi of an order alpha in (0, 1) on the same kernel, p's variances weighted by 1 - alpha and
//     q's by alpha, so that s_h is the mixed variance (bhat_ukr.hpp, BhatParams::renyi).
// Where an entry's bound exceeds `tolerance` (|D| + 1), or 1% of D (near-duplicates: D is then a
// small difference, or sigma_p - sigma_q a difference of rounded square roots), the entry is
// recomputed by the exact per-pair form (divergence_diag_rows, diag.hpp) from the caller's arrays.
// A Bhattacharyya within 1% of itself gives a Hellinger within 1% of itself (dH/H <= dB/B), and
// one within 0.999 tolerance - 8u times (B + 1) a Hellinger within tolerance (H + 1)
// (e^-B (B + 1) <= 1, and the 4 ulp of its SIMD expm1).
// With q = p the diagonal is exactly 0 and the matrix bit-symmetric: every form is bitwise
// symmetric in the swap of p and q (the kernels' (a - b)^2 and v_p + v_q, Q + Q' added either
// way, the per-row logarithms added either way), and so are the bounds; a block of all rows
// computes each pair of tiles once and mirrors it.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/backend.hpp"
#include "cpu/common/buffer.hpp"
#include "cpu/diag_pairs/ukr.hpp"
#include "cpu/divergence/bhat_ukr.hpp"
#include "cpu/pair/batches.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

template <class T>
class DiagDivergenceTiles {
 public:
  // q == nullptr: q = p. config.kind one of diag_tiles_kind's, config.tolerance > 0. Keeps views
  // of p's and q's arrays (the exact re-computation reads them): they must outlive the object.
  // Prepares on config.workers workers. Throws std::bad_alloc only.
  DiagDivergenceTiles(const DiagGaussians<T>& p, const DiagGaussians<T>* q,
                      const DivergenceConfig& config);

  // Bytes the object keeps (kept) and those of preparing and of block() on config.workers
  // workers (work).
  static PairsBytes footprint(std::int64_t n, std::int64_t m, std::int64_t d, bool self,
                              const DivergenceConfig& config);

  // out[(i - lo) * m + j] = D(p_i || q_j) for lo <= i < hi, every j, on config.workers workers;
  // an entry's bits do not depend on the block or the workers. Throws std::bad_alloc only.
  void block(std::int64_t lo, std::int64_t hi, double* out) const;

 private:
  // What the kernel reads of one side: its rows (a and c of Q: jeffreys' means and variances,
  // wasserstein2's [mu, sigma] and no c) and its columns packed (b and e of Q: jeffreys' means
  // and precisions, wasserstein2's [mu, sigma] and 1), and per row the norm of sigma
  // (wasserstein2). Bhattacharyya: no a and c; its means and variances packed as columns
  // (`packed`, nr wide) and, where the side is p and the kernel's mr differs, as rows
  // (`packed_rows`, mr wide); per row prod_h v_h = 2^log2_v exp(log_mant_v) (mantissa in [1, 2),
  // padded to whole panels), whether the row alone keeps the kernel in range (bhat_range_ok) and
  // its smallest and largest v_h.
  struct Side {
    Buffer<double> a, c, packed, packed_rows;
    std::vector<double> sigma_norm;
    std::vector<double> log_mant_v, log2_v, min_v, max_v;
    std::vector<char> in_range;
    const double* rows(const BhatTile& t) const {
      return t.mr == t.nr ? packed.data() : packed_rows.data();
    }
  };
  void prepare(const DiagGaussians<T>& g, Side& side) const;
  // weight: the factor of the variances the kernel reads (renyi's 1 - alpha for p, alpha for q).
  void prepare_bhat(const DiagGaussians<T>& g, Side& side, bool as_rows, bool as_cols,
                    double weight) const;
  // The bhattacharyya (hellinger) part of tile(): the values, certified or recomputed.
  void bhat_tile(std::int64_t r0, std::int64_t r1, std::int64_t j0, std::int64_t j1, double* work,
                 double* out, std::int64_t ldo, double* out_t) const;
  // The entry (i, j) of a tile: `value` if certified (bound <= tolerance (|value| + 1) and
  // <= 1% of value), else exact; 0 on q = p's diagonal; to out and out_t (when not null).
  void put(std::int64_t i, std::int64_t j, double value, double bound, double* out,
           double* out_t) const;
  // The tile of rows [r0, r1) (within the row chunk starting at the panel boundary c0) by columns
  // [j0, j1) (j0 a panel boundary) into out (row stride ldo, row r0 first, column j0 first);
  // with `mirror`, also its transpose into out_t (row stride ldo, row j0 first, column r0 first).
  void tile(std::int64_t c0, std::int64_t r0, std::int64_t r1, std::int64_t j0, std::int64_t j1,
            double* work, double* out, std::int64_t ldo, double* out_t) const;
  // D(p_i || q_j) by the exact per-pair form.
  double exact(std::int64_t i, std::int64_t j) const;

  DiagGaussians<T> p_, q_;
  std::int64_t n_, m_, d_, depth_;
  bool self_;
  DivergenceConfig config_;
  bool bhat_;           // bhattacharyya, hellinger or renyi: bhat_kernel_ instead of kernel_
  bool renyi_;          // renyi: weighted variances, its own q side also for q = p, no mirror
  std::int64_t panel_;  // rows and columns of a tile
  DiagKernel<double> kernel_;
  BhatKernel bhat_kernel_;
  // bhattacharyya: D, the error bound's parts and the rule, for the kernel.
  BhatParams bhat_params_;
  // |Q_hat - Q| <= kernel_bound_ Q_hat for Q of the operands as rounded.
  double kernel_bound_;
  // wasserstein2: |sigma_hat - sigma| <= sigma_error sigma for each side's parameterization.
  double sigma_error_p_ = 0, sigma_error_q_ = 0;
  Side p_side_, q_side_;  // q_side_ empty when q = p
  Buffer<double> zeros_;  // wasserstein2: c = 0 for a chunk of rows
};

}  // namespace gausskl::cpu
