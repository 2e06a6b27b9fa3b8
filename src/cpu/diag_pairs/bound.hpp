// The error bound of the quadratic part of diagonal all-pairs KL as the loop nest (loops.hpp)
// computes it with the microkernels (ukr.hpp), and the sizes of the loop nest's packing buffers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cpu/tunables.hpp"

namespace gausskl::cpu {

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

// c such that |Q_hat - Q| <= c * Q for every entry of diag_quadratic_loops<T> (loops.hpp) at depth
// d. Derivation, with u = 2^-24 (float) or 2^-53 (double) the unit roundoff: each term
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
