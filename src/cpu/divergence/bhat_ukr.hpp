// The microkernel of the tiled Bhattacharyya path of two diagonal sides (diag_tiles.hpp). Per pair
// of a p row and a q column, with s_h = v_ph + v_qh and a_h = (mu_ph - nu_qh)^2,
//   B = 1/4 quad + 1/2 [log prod_h s_h - 1/2 log prod_h v_ph - 1/2 log prod_h v_qh - D log 2],
//   quad = sum_h a_h / s_h,
// without a division or a logarithm per term. The fractions of a chunk of kBhatChunkTerms terms are
// carried as one, N / P (N' = N s + a P, P' = P s: all terms positive, so each keeps its relative
// accuracy), divided once per chunk; P is brought back to [1, 2) every kBhatRenormTerms terms by
// its exponent bits (exact: N is scaled by the same power of two), the exponents summed apart as
// integers, and one logarithm is taken per entry, of the final mantissa m_s. The rows' products
// come the same way (2^e m, m in [1, 2)), so that the log part is
//   [log m_s - 1/2 (log m_p + log m_q)] + log 2 [e_s - D - 1/2 (e_p + e_q)]
// with the bracket of exponents exact: its error grows with D u, not with the logarithms' size.
//
// Each entry gets its deterministic error bound (BhatParams) and is certified when the bound is
// within tolerance (|B| + 1) and 1% of B; the kernel writes certified values (B, or the hellinger
// -expm1(-B)) and NaN for the others, which the caller recomputes exactly. Partial products stay
// normal, as the bound assumes, only where every s_h is in [2^-112, 2^121] (bhat_range_ok): the
// caller recomputes the pairs outside whatever the kernel wrote.
#pragma once

#include <cstdint>

namespace gausskl::cpu {

// The packing shape a kernel reads: micro-panels of mr p rows and of nr q columns, both laid out
// as pack_diag_q writes them (diag_pairs/pack.hpp, "nr" = mr for p): for panel row r and h,
// panel[h * 2 * mr + r] = mu, panel[h * 2 * mr + mr + r] = v (zeros past the last row).
struct BhatTile {
  std::int64_t mr;
  std::int64_t nr;
};

// What every entry shares: D, the error bound's parts and the certification rule.
struct BhatParams {
  double dims = 0;
  // |quad_hat - quad| <= quad_bound quad_hat (with the inputs' variances' rounding).
  double quad_bound = 0;
  // The log part's bound apart from its terms proportional to the values.
  double log_bound = 0;
  double tolerance = 0;
  bool hellinger = false;
  // renyi of order alpha in (0, 1) (renyi_params): the packed variances are beta v_p and
  // alpha v_q (beta = 1 - alpha), so that s_h is the mixed variance m_h, and
  //   D = alpha/2 quad + 1/(2 beta) [log prod m - beta log prod v_p - alpha log prod v_q],
  // the weights' products with the rows' exponents rounded (weight_error per unit of them).
  bool renyi = false;
  double quad_scale = 0.25, log_scale = 0.5, p_weight = 0.5, q_weight = 0.5, weight_error = 0;
};

// The parameters of dimension d: the bound's parts (derived in bhat_ukr.cpp) and, for hellinger,
// the tolerance B is certified to so that -expm1(-B) is within `tolerance` (H + 1).
BhatParams bhat_params(std::int64_t d, double tolerance, bool hellinger);

// The parameters of renyi of order alpha in (0, 1) at dimension d (derived in bhat_ukr.cpp).
BhatParams renyi_params(std::int64_t d, double tolerance, double alpha);

// prod_h v_h = 2^log2 exp(log_mant), the mantissa in [1, 2), for v_h in [1e-300, 1e300]:
// renormalized after every factor, d roundings, libm's log.
void bhat_log_product(const double* v, std::int64_t d, double* log_mant, double* log2);

// One side's rows as the kernel reads them: the micro-panel's packed values and, per row (from the
// panel's first), log m and e of prod_h v_h = 2^e m; readable for whole micro-panels.
struct BhatRows {
  const double* packed;
  const double* log_mant;
  const double* log2;
};

// The m x n (m <= mr, n <= nr) tile at depth k >= 1 from a p micro-panel and a q micro-panel:
// out[i * ldc + j] = the certified value of (p row i, q column j), or NaN. Padding rows and
// columns are computed but never written. The operations of an entry do not depend on its
// position in the tile, and are the same with p's and q's rows swapped (v_p + v_q,
// (mu - nu)^2 and the rows' terms added either way).
using BhatUkr = void (*)(std::int64_t m, std::int64_t n, std::int64_t k, const BhatRows& p,
                         const BhatRows& q, const BhatParams& params, double* out, std::int64_t ldc,
                         const BhatTile& tile) noexcept;

struct BhatKernel {
  BhatTile tile;
  BhatUkr ukr;
};

// The scalar reference kernel (any shape, read from `tile`): the same chunks, renormalizations
// and bound, std::fma, std::log and std::expm1; the scalar target's kernel and the tests' oracle.
void ukr_bhat_ref(std::int64_t m, std::int64_t n, std::int64_t k, const BhatRows& p,
                  const BhatRows& q, const BhatParams& params, double* out, std::int64_t ldc,
                  const BhatTile& tile) noexcept;

// The kernel of the SIMD target chosen at run time (Highway dynamic dispatch).
BhatKernel bhat_kernel() noexcept;

// Whether every partial product of a pair stays normal: s_h >= max(min v_p, min v_q) and
// s_h <= 2 max(max v_p, max v_q), so products of kBhatRenormTerms (8) terms from [1, 2) stay in
// [2^-896, 2^970]. The lower end leaves room below it: a calling thread that flushes subnormals
// to zero (torch.set_flush_denormal) loses at most 2^-1022 of N, 2^-126 of the fraction N / P.
inline bool bhat_range_ok(double min_p, double max_p, double min_q, double max_q) {
  const double lo = min_p > min_q ? min_p : min_q, hi = max_p > max_q ? max_p : max_q;
  return lo >= 0x1p-112 && hi <= 0x1p120;
}

}  // namespace gausskl::cpu
