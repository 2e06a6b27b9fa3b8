// The GEMM of full-covariance all-pairs KL (full_pairs/plan.hpp): C = A B^T with the rows of A and
// of B packed along the depth, so that C[i, j] is the dot product of row i of A and row j of B.
// No ISA appears here: the SIMD target is chosen at run time (full_pairs/gemm.cpp).
#pragma once

#include <cstdint>

#include "cpu/tunables.hpp"

namespace gausskl::cpu {

// Rows of A and B are padded with zeros to a multiple of this many doubles: the lanes of
// full_gemm's partial sums.
inline constexpr std::int64_t kFullLanes = 8;

inline std::int64_t full_gemm_depth(std::int64_t k) {
  return (k + kFullLanes - 1) / kFullLanes * kFullLanes;
}

// c[i * ldc + j] = sum_{k < kp} a[i * kp + k] * b[j * kp + k] for i < n, j < m; kp a multiple of
// kFullLanes, ldc >= m. Each entry is summed in one fixed order, whatever the target, tile or
// caller's split of rows and columns: k is cut into blocks of kFullKB; within a block lane l
// sums the k = l mod 8 products in increasing k (fused multiply-adds on targets with FMA, a
// product and a sum otherwise); the 8 lanes are added by a fixed tree of 3 levels; the blocks'
// sums are added in increasing order. Results are therefore bitwise independent of the thread
// count (not of the target). Never throws, never allocates; single-threaded.
void full_gemm(const double* a, std::int64_t n, const double* b, std::int64_t m, std::int64_t kp,
               double* c, std::int64_t ldc) noexcept;

// n such that |C_hat - C| <= gamma_n * sum_k |a_ik| |b_jk| for every entry of full_gemm at depth
// kp, with Higham's gamma_n = n u / (1 - n u), u = 2^-53. Derivation: in a block, a lane sums at
// most kFullKB / 8 products, so each product is perturbed by at most that many roundings (its
// own and the additions after it); the tree adds 3, and adding the block sums in order at most
// one per block.
inline std::int64_t full_gemm_roundings(std::int64_t kp) {
  const std::int64_t per_block = (kp < kFullKB ? kp : kFullKB) / kFullLanes;
  return per_block + 3 + (kp + kFullKB - 1) / kFullKB;
}

// The SIMD target the dispatcher picked: "AVX3", "AVX2", "SSE4", ... or "SCALAR".
const char* full_gemm_target() noexcept;

}  // namespace gausskl::cpu
