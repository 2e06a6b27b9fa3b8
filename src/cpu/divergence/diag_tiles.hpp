// All pairs of a divergence between two diagonal sides on the KL tile kernel (diag_pairs/loops.hpp,
// which computes Q_ij = sum_k ((a_ik - b_jk)^2 + c_ik) e_jk with a per-entry relative error bound):
//   * wasserstein2 = sum_h (mu - nu)^2 + (sigma_p - sigma_q)^2, the squared Euclidean distance of
//     the rows [mu, sigma] in R^{2D}: Q with a = [mu, sigma_p], b = [nu, sigma_q], c = 0, e = 1;
//   * jeffreys = 1/2 sum_h [(mu - nu)^2 (lam_p + lam_q) + v_p lam_q + v_q lam_p] - D
//     = 1/2 (Q_ij + Q'_ji) - D, with Q KL's quadratic part of p_i against q_j (a = mu, c = v_p,
//     b = nu, e = lam_q) and Q' that of q_j against p_i: the logarithms cancel.
// Each entry carries a deterministic error bound (the kernel's, the operands' roundings, the final
// subtraction); where it exceeds `tolerance` (|D| + 1), or 1% of D (near-duplicates: D is then a
// small difference, or sigma_p - sigma_q a difference of rounded square roots), the entry is
// recomputed by the exact per-pair form (divergence_diag_rows, diag.hpp) from the caller's arrays.
// With q = p the diagonal is exactly 0 and the matrix bit-symmetric: both forms are bitwise
// symmetric in the swap of p and q (the kernel's (a - b)^2, and Q + Q' added either way), and so
// are the bounds; a block of all rows computes each pair of tiles once and mirrors it.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/common/buffer.hpp"
#include "cpu/diag_pairs/ukr.hpp"
#include "cpu/divergence/config.hpp"
#include "cpu/pair/batches.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

// Whether two diagonal sides of `kind` have this path.
constexpr bool diag_tiles_kind(Divergence kind) {
  return kind == Divergence::wasserstein2 || kind == Divergence::jeffreys;
}

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
  // (wasserstein2).
  struct Side {
    Buffer<double> a, c, packed;
    std::vector<double> sigma_norm;
  };
  void prepare(const DiagGaussians<T>& g, Side& side) const;
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
  DiagKernel<double> kernel_;
  // |Q_hat - Q| <= kernel_bound_ Q_hat for Q of the operands as rounded.
  double kernel_bound_;
  // wasserstein2: |sigma_hat - sigma| <= sigma_error sigma for each side's parameterization.
  double sigma_error_p_ = 0, sigma_error_q_ = 0;
  Side p_side_, q_side_;  // q_side_ empty when q = p
  Buffer<double> zeros_;  // wasserstein2: c = 0 for a chunk of rows
};

}  // namespace gausskl::cpu
