// The fast path of all-pairs KL when q has a full covariance and p a full or diagonal one: the
// trace part of the KL as a GEMM over each q's inverse, the mean part per pair from the two means
// as given (full_pairs/mean_terms.hpp), with a deterministic error bound per entry.
//
// With P_j = T_j^{-1} = W_j' W_j (W_j = L_j^{-1}, T_j = L_j L_j'):
//   2 KL_ij = a_i . b_j + |W_j (mu_i - nu_j)|^2 - d - s_i + t_j,
//   a_i = vech(S_i),  b_j = vech(P_j) with off-diagonals doubled,  s_i = log|S_i|,  t_j = log|T_j|,
// a GEMM of depth K = d(d+1)/2 (full_pairs/gemm.hpp) after O(d^3) work per distribution, done in
// long double and rounded once to double, and O(d^2) per pair for the mean part. No operand
// depends on any other distribution of the call (no centre shared by the batch, no choice made
// for the batch as a whole), and the GEMM and the mean part sum each entry in one fixed order:
// an entry's bits depend on p_i, q_j and the tolerance only, not on the other rows, their
// number, the block or the thread count. The mean part, a sum of squares of the difference,
// does not cancel when the means share an offset (1e3) or sit far apart.
//
// W is rounded to double once, and P is computed from that W, so the trace and the mean part are
// both exact forms of one matrix W' W, whose error is measured, not assumed: with R = W L - I
// (computed in long double) and rho >= ||R||_2, W = (I + R) L^{-1}, so ||W x||^2 is within
// (2 rho + rho^2) of x' P x relative, for every x: the quadratic part Q = tr(P S) + delta' P delta
// is off by at most that much *relative to Q itself*, whatever the condition of T.
//
// The bound on 2 KL of entry (i, j), with u = 2^-53, u' = 2^-64, the computed trace y = a_i . b_j,
// the computed mean part m and dist2 = |mu_i - nu_j|^2:
//   gemm:   full_gemm_error_bound(K + 3 operand roundings) * |vech S_i| |b_j| (Cauchy-Schwarz);
//   mean:   e = gamma_{d+1} |W|_F |delta| bounds |y_hat - y| of y = W delta (the rounding of
//           delta and of the triangular product), so gamma_d m + e (2 sqrt(m) + e) bounds m's;
//   long double: gamma'_{2d+2} (2 (|W|_F^2 + ||P||_inf) tr S_i + sum |log diag|) (computing P,
//           S, s and t in long double);
//   inverse: 2.1 rho_j (|y| + m + the above) (rho_j <= 1e-3, else the column is exact);
//   finish: u (|s_i| + |t_j|) (rounding them to double) and 4 u (|y| + m + d + |s_i| + |t_j|)
//           (the four operations of the finish);
// all times 1.01 (the norms' own roundings). Entries whose bound exceeds tolerance * (|KL| + 1),
// or 1% of KL (KL near 0: near-duplicates, identical pairs), are left for exact re-scoring.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/pair/layout.hpp"

namespace gausskl::cpu {

class FullOperands {
 public:
  // q: m distributions prepared with a triangular base; p: n prepared with a triangular or
  // diagonal base and no low rank, or nullptr for q = p. The batches need not outlive this.
  FullOperands(const PreparedBatch& q, std::int64_t m, const PreparedBatch* p, std::int64_t n,
               double tolerance, int threads);

  // Bytes a FullOperands of these sizes keeps (n = m when q = p), and the scratch its constructor
  // allocates on `threads` threads besides.
  static std::int64_t footprint(std::int64_t n, std::int64_t m, std::int64_t d);
  static std::int64_t build_scratch(std::int64_t d, int threads);

  // out[(i - i0) * ldo + (j - j0)] = KL(p_i || q_j) for i0 <= i < i1, j0 <= j < j1, or NaN
  // where the entry must be re-scored exactly (its bound is too large, its column too
  // ill-conditioned, or j == i when q = p). Single-threaded; never throws or allocates.
  void rows(std::int64_t i0, std::int64_t i1, std::int64_t j0, std::int64_t j1, double* out,
            std::int64_t ldo) const;

 private:
  struct RowTerms {  // per p_i
    double s, abs_s, norm_s, trace;
  };
  struct ColTerms {  // per q_j
    double t, abs_t, norm_p, p_inf, w_fro, w_fro2, rho;
    bool exact;
  };

  // Entries of the rows of one group of kFullLanes rows (rows [i0, i1) of it) and columns
  // [j0, j1): the trace from the GEMM in out, the mean part, then the finish and its bound.
  void finish_group(std::int64_t group, std::int64_t i0, std::int64_t i1, std::int64_t j0,
                    std::int64_t j1, double* out, std::int64_t ldo) const;
  double finish(std::int64_t i, std::int64_t j, double trace, double quad, double dist2) const;

  std::int64_t n_, m_, d_, kp_, tri_;
  bool self_;
  double tolerance_, gemm_bound_, ld_bound_, mean_bound_, sum_bound_;
  std::vector<double> a_, b_;   // [N, kp], [M, kp]: vech S_i; vech P_j, off-diagonals doubled
  std::vector<double> mu_t_;    // p's means in groups of kFullLanes rows, [h][lane] per group
  std::vector<double> nu_, w_;  // [M, d] q's means; [M, d(d+1)/2] W_j packed (mean_terms.hpp)
  std::vector<RowTerms> row_terms_;
  std::vector<ColTerms> col_terms_;
};

}  // namespace gausskl::cpu
