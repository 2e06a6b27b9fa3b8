// The microkernel of the tiled Bhattacharyya path of two diagonal sides (diag_tiles.hpp): per pair
// of a p row and a q column, over h < k, with s_h = v_ph + v_qh,
//   quad = sum_h (mu_ph - nu_qh)^2 / s_h,   prod_h s_h = 2^expo * exp(log_mant), mant in [1, 2)
// without a division or a logarithm per term. The fractions of a chunk of kBhatChunkTerms terms are
// carried as one, N / P (N' = N s + a P, P' = P s: all terms positive, so each keeps its relative
// accuracy), divided once per chunk; P is brought back to [1, 2) every kBhatRenormTerms terms by
// its exponent bits (exact: N is scaled by the same power of two), the exponents summed apart as
// integers, and one logarithm is taken per entry, of the final mantissa.
//
// Partial products stay normal (and the error bound of diag_tiles.cpp holds) when every s_h is in
// [2^-124, 2^121]: bhat_range_ok. Outside, entries may be inf or NaN; the caller recomputes them.
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

// The m x n (m <= mr, n <= nr) tile at full depth k >= 1 from a p micro-panel and a q
// micro-panel: quad, log_mant and expo of entry (i, j) at [i * ldc + j] (stored, never
// accumulated). Padding rows and columns are computed but never written. The operations of an
// entry do not depend on its position in the tile, and are the same with p's and q's rows
// swapped (v_p + v_q and (mu - nu)^2 are bitwise symmetric).
using BhatUkr = void (*)(std::int64_t m, std::int64_t n, std::int64_t k, const double* p,
                         const double* q, double* quad, double* log_mant, double* expo,
                         std::int64_t ldc, const BhatTile& tile) noexcept;

struct BhatKernel {
  BhatTile tile;
  BhatUkr ukr;
};

// The scalar reference kernel (any shape, read from `tile`): the same chunks, renormalizations
// and error bound, std::fma and std::log; the scalar target's kernel and the tests' oracle.
void ukr_bhat_ref(std::int64_t m, std::int64_t n, std::int64_t k, const double* p, const double* q,
                  double* quad, double* log_mant, double* expo, std::int64_t ldc,
                  const BhatTile& tile) noexcept;

// The kernel of the SIMD target chosen at run time (Highway dynamic dispatch).
BhatKernel bhat_kernel() noexcept;

// x[i] := -expm1(-x[i]) (hellinger of bhattacharyya) for i < n, within 4 ulp (Highway's Expm1;
// libm's on the scalar target); x[i] < -700 is taken as -700.
void bhat_hellinger(double* x, std::int64_t n) noexcept;

// Whether every partial product of a pair stays normal: s_h >= max(min v_p, min v_q) and
// s_h <= 2 max(max v_p, max v_q), so products of kBhatRenormTerms (8) terms from [1, 2) stay in
// [2^-993, 2^970].
inline bool bhat_range_ok(double min_p, double max_p, double min_q, double max_q) {
  const double lo = min_p > min_q ? min_p : min_q, hi = max_p > max_q ? max_p : max_q;
  return lo >= 0x1p-124 && hi <= 0x1p120;
}

}  // namespace gausskl::cpu
