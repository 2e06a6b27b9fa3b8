// The CPU backend: what src/core dispatches to after validation.
//
// Backends compute; they never validate and never throw, except std::bad_alloc while
// allocating their workspace up front, which the core reports as a resource error.
// A factorization that fails (a matrix that is not positive definite) is returned, not thrown,
// so the core can word the error.
#pragma once

#include <atomic>
#include <cstdint>

#include "cpu/pair/prepare.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

struct Failure {
  const char* side = nullptr;  // "p", "q" or "pair"; nullptr when nothing failed
  FactorFailure where;
  // side "pair" of an all-pairs call: the column j of the pair (where.index is its row i).
  std::int64_t column = -1;
};

// Options::jitter, and where to count the distributions of each side that needed it.
struct Jitter {
  double eps = 0;
  std::atomic<std::int64_t> p{0}, q{0};
  Factoring of_p() { return {eps, &p}; }
  Factoring of_q() { return {eps, &q}; }
};

// ---- Row-wise operations (kl, kl_standard_normal): rowwise/ ----

// How a row-wise call is computed, decided by the plan (src/core/plan.cpp) from the families:
// the diagonal SIMD kernel (two diagonal sides, or q = N(0, I)), the triangular SIMD kernel (two
// sides given by their Cholesky factors), or each pair prepared and given by the exact formula.
enum class RowwisePath { diag, tril, exact };
struct RowwiseConfig {
  RowwisePath path = RowwisePath::exact;
  int workers = 1;  // >= 1
};

// out[i] = KL(p_i || q_i) for i < n, a side with N = 1 broadcasting; q == nullptr means
// q = N(0, I).
template <class T, class U>
Failure kl_rowwise(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n, U* out,
                   const RowwiseConfig& config, Jitter& jitter);

// Bytes kl_rowwise allocates for these arguments.
template <class T>
std::int64_t kl_rowwise_footprint(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n,
                                  const RowwiseConfig& config);

// ---- All-pairs operations (pairwise_kl, knn_kl): all_pairs.hpp, knn/ ----

// The path of an all-pairs call, decided by the plan: the SIMD kernels for two diagonal sides
// (diag_pairs/), the GEMM for a full-covariance q with a full or diagonal p (full_pairs/), and
// the exact formula per pair for every other pair of families (lowrank_pairs/).
enum class PairsPath { diag, full, lowrank };
// The kernel of the diagonal path: the double one, the q = p one that gives both directions of
// a pair in one pass (in double), or the float one (float inputs, a loose enough tolerance; the
// path falls back to the double or q = p kernel if a value is out of its range).
enum class DiagKernelKind { double_kernel, sym, float_kernel };
struct PairsConfig {
  PairsPath path = PairsPath::lowrank;
  DiagKernelKind kernel = DiagKernelKind::double_kernel;  // PairsPath::diag only
  // Entries of the diag and full paths whose bound exceeds tolerance * (|KL| + 1) are recomputed
  // by the exact formula (> 0).
  double tolerance = 0;
  int workers = 1;  // >= 1
};

// All-pairs operations plan with AllPairs (all_pairs.hpp) and select neighbours with knn_block
// (knn/loops.hpp).

}  // namespace gausskl::cpu
