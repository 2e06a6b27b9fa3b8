// The hot loop of diagonal all-pairs KL: the quadratic part of 2 KL(p_i || q_j),
//   Q[i, j] = sum_h ((mu_ih - nu_jh)^2 + v_ih) lam_jh,
// with mu, v the means and variances of p and nu, lam the means and precisions of q. The caller
// adds the O(N + M) terms (- D + sum log v - sum log w) in double. No ISA appears here: the
// SIMD target is chosen at run time (ukr_diag.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cpu/tunables.hpp"

namespace gausskl::cpu {

// Q[i * ldq + j] = sum_{h < d} ((mu[i*d + h] - nu[j*d + h])^2 + v[i*d + h]) * lam[j*d + h]
// for i < m, j < n. Inputs row-major, contiguous; ldq >= n; m, n, d >= 0 (d = 0 gives Q = 0).
// T = float computes each term in float and accumulates blocks of at most kDiagFloatBlock terms
// in float, adding each block into double; T = double computes in double. Every entry satisfies
// |Q_hat - Q| <= diag_quadratic_error_bound<T>(d) * Q (below), as long as no intermediate
// overflows (it then gives +inf) and no nonzero term falls below the smallest normal T.
//
// An entry's value depends only on its own two rows and on the SIMD target: calling on any
// split of the rows or columns gives bitwise the same Q (thread-count independence).
// Never throws; never allocates except two thread_local packing buffers of fixed size (a q panel
// and a p block, diag_quadratic_buffer_bytes<T>() together: 640 KiB for float, 1280 KiB for
// double), allocated on the first call in each thread (the process terminates if that fails).
// Safe to call from several threads at once. Single-threaded: the caller splits rows over threads.
template <class T>
void diag_quadratic(const T* mu, const T* v, std::int64_t m, const T* nu, const T* lam,
                    std::int64_t n, std::int64_t d, double* q, std::int64_t ldq) noexcept;

// Bytes of the per-thread packing buffer: a q panel and a p block of KC h, two values each.
template <class T>
constexpr std::int64_t diag_quadratic_buffer_bytes() noexcept {
  return static_cast<std::int64_t>(sizeof(T)) * 2 * kDiagKC * (kDiagNC + kDiagMC);
}

// Of which the p block, all that a thread running only diag_quadratic_loops_packed allocates.
template <class T>
constexpr std::int64_t diag_quadratic_p_block_bytes() noexcept {
  return static_cast<std::int64_t>(sizeof(T)) * 2 * kDiagKC * kDiagMC;
}

// The SIMD target the dispatcher picked: "AVX3", "AVX2", "SSE4", "SSSE3" or "SCALAR".
const char* diag_quadratic_target() noexcept;

// c such that |Q_hat - Q| <= c * Q for every entry of diag_quadratic<T> at depth d.
// Derivation, with u = 2^-24 (float) or 2^-53 (double) the unit roundoff: each term
// ((mu - nu)^2 + v) lam is non-negative and takes at most 5 roundings (sub, square, add v,
// times lam, with a separate multiply and add on targets without FMA), and a block of L terms
// summed recursively in T adds at most L more, so a block is off by at most
// gamma_{L+5} = (L + 5) u / (1 - (L + 5) u) relative. Blocks are added into double, exactly
// widened, with one rounding per block.
//   float:  L <= min(d, kDiagFloatBlock); gamma_{L+5}(2^-24) <= (L + 5.5) 2^-24 for L <= 400,
//           and the double additions of the blocks add less than 0.5 * 2^-24 while d < 2^27.
//           Bound: (min(d, kDiagFloatBlock) + 6) * 2^-24.
//   double: one block per kDiagKC h, L <= min(d, kDiagKC), then ceil(d / kDiagKC) additions:
//           (min(d, kDiagKC) + ceil(d / kDiagKC) + 6) * 2^-53.
// The worst case is deterministic; errors on real data are typically sqrt(L) times smaller.
template <class T>
constexpr double diag_quadratic_error_bound(std::int64_t d) noexcept {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  if constexpr (std::is_same_v<T, float>) {
    static_assert(kDiagFloatBlock <= 400, "the float bound below assumes blocks of <= 400 terms");
    return static_cast<double>(std::min(d, kDiagFloatBlock) + 6) * 0x1p-24;
  } else {
    const std::int64_t blocks = (d + kDiagKC - 1) / kDiagKC;
    return static_cast<double>(std::min(d, kDiagKC) + blocks + 6) * 0x1p-53;
  }
}

}  // namespace gausskl::cpu
