// The fast path of all-pairs KL when q has a full covariance and p a full or diagonal one: the
// KL expanded into GEMMs over each q's inverse (below), with a deterministic error bound per entry.
//
// With P_j = T_j^{-1}, every mean centred by one common vector c (KL is translation
// invariant, and centring keeps means offset by 1e3 from inflating the expanded terms), and
// G_i = S_i + mu_i mu_i':
//   2 KL_ij = a_i . b_j + c_j - d - s_i + t_j,
//   a_i = [vech(G_i), mu_i],  b_j = [vech(P_j) with off-diagonals doubled, -2 P_j nu_j],
//   c_j = nu_j' P_j nu_j,  s_i = log|S_i|,  t_j = log|T_j|,
// a GEMM of depth K = d(d+1)/2 + d (full_pairs/gemm.hpp) after O(d^3) work per distribution,
// done in long double and rounded once to double. P_j comes from W = L^{-1} (T = L L'), and its
// error is measured, not assumed: with R = W L - I (computed in long double) and
// rho >= ||R||_2, W = (I + R) L^{-1}, so ||W x||^2 is within (2 rho + rho^2) of x' P x
// relative, for every x: the quadratic part Q = tr(P S) + delta' P delta is off by at most that
// much *relative to Q itself*, whatever the condition of T (only its effect on rho remains).
//
// The bound on 2 KL of entry (i, j), with u = 2^-53, u' = 2^-64 and the computed y = a_i . b_j:
//   gemm:   full_gemm_error_bound(K + 3 operand roundings) * (|vech G_i| |vech b_j| + |mu_i|
//   |b_j,mean|)
//           (Cauchy-Schwarz on the two halves of sum_k |a_k| |b_k|);
//   centre: 2.03 u ||P_j|| (|mu_i| + |nu_j|)^2 (the roundings of mu - c and nu - c);
//   long double: gamma'_{2d+2} (2 (|W|_F^2 + ||P||_inf) (tr S_i + (|mu_i| + |nu_j|)^2)
//           + sum |log diag|) (computing P, G, P nu, nu' P nu, s and t in long double);
//   inverse: 2.1 rho_j (|y| + |c_j| + the above) (rho_j <= 1e-3, else the column is exact);
//   finish: u (|c_j| + |s_i| + |t_j|) (rounding them to double) and 4 u (|y| + |c_j| + d +
//           |s_i| + |t_j|) (the four operations of the finish);
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
    double s, abs_s, norm_g, norm_mu, trace;
  };
  struct ColTerms {  // per q_j
    double c, t, abs_t, norm_p, norm_b, norm_nu, p_inf, w_fro2, rho;
    bool exact;
  };

  void finish_row(std::int64_t i, std::int64_t j0, std::int64_t j1, double* row) const;

  std::int64_t n_, m_, d_, kp_;
  bool self_;
  double tolerance_, gemm_bound_, ld_bound_;
  std::vector<double> a_, b_;  // [N, kp], [M, kp]
  std::vector<RowTerms> row_terms_;
  std::vector<ColTerms> col_terms_;
};

}  // namespace gausskl::cpu
