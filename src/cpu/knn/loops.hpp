// Nearest neighbours from a block of all-pairs values (PairsEngine::knn).
#pragma once

#include <cstdint>
#include <functional>

#include "cpu/backend.hpp"

namespace gausskl::cpu {

// exact(i, j, scratch): D(p_i || q_j) by the path's exact formula, with scratch_size doubles of
// scratch.
using ExactPair = std::function<double(std::int64_t, std::int64_t, double*)>;

// For rows lo <= i < hi, given block[(i - lo) * m + j] within tolerance * (|v| + 1) of
// D(p_i || q_j) (tolerance 0: exact, and `exact` is never called), writes the k smallest by
// (D, j) to indices/values[(i - lo) * k + r]. With a tolerance, every candidate that could rank
// in the first k is re-scored exactly before the final order. exclude_self leaves out j == i.
void knn_block(std::int64_t m, std::int64_t scratch_size, const ExactPair& exact, std::int64_t lo,
               std::int64_t hi, const double* block, double tolerance, std::int64_t k,
               bool exclude_self, std::int64_t* indices, double* values, int threads);

}  // namespace gausskl::cpu
