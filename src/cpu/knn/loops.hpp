// Nearest neighbours from a block of all-pairs values.
#pragma once

#include <cstdint>

#include "cpu/all_pairs.hpp"

namespace gausskl::cpu {

// For rows lo <= i < hi, given block[(i - lo) * M + j] within tolerance * (|v| + 1) of
// KL(p_i || q_j) (tolerance 0: exact), writes the k smallest by (KL, j) to
// indices/values[(i - lo) * k + r]. With a tolerance, every candidate that could rank in the
// first k is re-scored exactly before the final order. exclude_self leaves out j == i.
void knn_block(const AllPairs& plan, std::int64_t lo, std::int64_t hi, const double* block,
               double tolerance, std::int64_t k, bool exclude_self, std::int64_t* indices,
               double* values, int threads);

// The same for a block of exact values of m columns (the divergences' all pairs: no re-scoring).
void knn_block_exact(std::int64_t m, std::int64_t lo, std::int64_t hi, const double* block,
                     std::int64_t k, bool exclude_self, std::int64_t* indices, double* values,
                     int threads);

// Bytes knn_block allocates for m columns on `threads` workers: per worker an index order [m]
// (int64) and exact values [m] plus the path's pair scratch (pair_scratch doubles).
std::int64_t knn_block_bytes(std::int64_t m, std::int64_t pair_scratch, int threads);

}  // namespace gausskl::cpu
