// The plan of an operation, decided once per call from the options, the inputs' shapes and
// families, and the footprints the backend's paths declare: which path, the tolerance the
// entries are computed to, the kernel, the worker count and the rows per block of results. The
// backend receives it finished (cpu::RowwiseConfig, cpu::PairsConfig) and decides none of it
// again. Every threshold used here is in cpu/tunables.hpp with its reason.
//
// Nothing here validates: a plan is made from unvalidated shapes (it only reads them, with
// saturating arithmetic) so that validation can run on the plan's workers; the budget checks
// (check_rowwise_budget, size_blocks) come after validation and throw the budget's errors.
#pragma once

#include <cstdint>

#include "cpu/backend.hpp"
#include "gausskl/types.hpp"

namespace gausskl::detail {

// ---- row-wise: divergence, kl, kl_standard_normal and the gradients ----

// n rows of results of options.divergence; q == nullptr: q = N(0, I).
template <class T>
cpu::RowwiseConfig plan_rowwise(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n,
                                const Options& options);

// With options.memory_budget, the row-wise work must fit in it ("the memory budget (...) is too
// small").
template <class T>
void check_rowwise_budget(const char* op, const cpu::RowwiseConfig& plan, const Gaussians<T>& p,
                          const Gaussians<T>* q, std::int64_t n, const Options& options);

// ---- all pairs of every kind: pairwise, pairwise_rows, knn (and the _kl names) ----

struct PairsPlan {
  cpu::PairsConfig backend;
  // Float results are written by the path itself (KL's diagonal path), without a block of
  // doubles.
  bool writes_float = false;
  // Rows per block of results (size_blocks).
  std::int64_t block_rows = 0;
};

// The tolerance all-pairs entries are computed to: `requested`, or when that is 0 the default
// for T (limits::default_tolerance).
template <class T>
double effective_tolerance(double requested);

// The engine's path for options.divergence, its tolerance, kernel and workers; q == nullptr:
// q = p. KL: by the families (cpu::PairsPath). Other kinds: for two diagonal sides of a kind with
// a tiled path (cpu::diag_tiles_kind) that path, its tolerance and the diagonal kernel's workers
// (kDiagPairsWorkPerThread); otherwise the row-wise rule's workers over the N * M pairs, every
// entry exact per pair.
template <class T>
PairsPlan plan_pairs(const Gaussians<T>& p, const Gaussians<T>* q, const Options& options);

// Bytes per row of m results of type U that size pairwise's blocks; to_out: the results go to
// the caller's array, else to a sink. An error if it overflows.
template <class U>
std::int64_t result_row_bytes(const char* op, const PairsPlan& plan, std::int64_t m, bool to_out);

// plan.block_rows for results of row_bytes per row (and knn's selection with `knn`): with a
// budget, what the engine's footprint leaves of it, an error if that cannot hold one row;
// without, blocks of limits::default_block_bytes.
template <class T>
void size_blocks(const char* op, PairsPlan& plan, const Gaussians<T>& p, const Gaussians<T>* q,
                 const Options& options, std::int64_t row_bytes, bool knn);

// ---- all-pairs gradients ----

// The workers of pairwise_kl_backward for n x m pairs of dimension d, on either of its paths;
// validation runs on the forward's (plan_pairs) workers.
cpu::PairsBackwardConfig plan_pairs_backward(std::int64_t n, std::int64_t m, std::int64_t d,
                                             bool self, const Options& options);

}  // namespace gausskl::detail
