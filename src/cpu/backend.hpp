// The CPU backend's interface: every declaration src/core reaches the backend by (core includes
// no other cpu/ header; tests/python/test_tree_layout.py checks it). The implementations live in
// the folders named beside each section.
//
// Backends compute; they never validate and never throw, except std::bad_alloc while
// allocating their workspace up front, which the core reports as a resource error.
// A factorization that fails (a matrix that is not positive definite) is returned, not thrown,
// so the core can word the error.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "cpu/common/parallel.hpp"    // the pool: core validates on the plan's workers
#include "cpu/common/saturating.hpp"  // the footprints' byte counts
#include "cpu/pair/prepare.hpp"
#include "cpu/tunables.hpp"  // the thresholds the plan reads
#include "gausskl/gradients.hpp"
#include "gausskl/ops.hpp"
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

// What the divergences other than KL receive from the plan: the kind, Renyi's order, the workers
// and, for all pairs of two diagonal sides, whether the tiled path runs (divergence/diag_tiles.hpp)
// and the tolerance its entries are computed to.
struct DivergenceConfig {
  Divergence kind = Divergence::jeffreys;
  double alpha = 0;  // renyi only
  int workers = 1;   // >= 1
  // OpenBLAS's threads in each worker's factorizations (wasserstein2 of full sides): the
  // library's threads when one worker does the call, else 1.
  int blas_threads = 1;
  // All pairs only: two diagonal sides by DiagDivergenceTiles, each entry within
  // tolerance * (|D| + 1) of exact; otherwise every entry exact per pair.
  bool diag_tiles = false;
  double tolerance = 0;
};

// Whether two diagonal sides of `kind` (renyi: of order alpha) have the tiled all-pairs path
// (divergence/diag_tiles.hpp).
constexpr bool diag_tiles_kind(Divergence kind, double alpha = 0) {
  return kind == Divergence::wasserstein2 || kind == Divergence::jeffreys ||
         kind == Divergence::bhattacharyya || kind == Divergence::hellinger ||
         (kind == Divergence::renyi && alpha > 0 && alpha < 1);
}

// ---- Row-wise (divergence, kl, kl_standard_normal): rowwise.cpp, rowwise/, divergence/ ----

// How a row-wise KL is computed, decided by the plan (src/core/plan.cpp) from the families:
// the diagonal SIMD kernel (two diagonal sides, or q = N(0, I)), the triangular SIMD kernel (two
// sides given by their Cholesky factors), or each pair prepared and given by the exact formula.
// The other kinds choose their forms from the families themselves (divergence/rowwise.cpp).
enum class RowwisePath { diag, tril, exact };
struct RowwiseConfig {
  Divergence kind = Divergence::kl;
  double alpha = 0;  // renyi only
  RowwisePath path = RowwisePath::exact;
  int workers = 1;       // >= 1
  int blas_threads = 1;  // DivergenceConfig::blas_threads (kinds other than KL)
};

// out[i] = D(p_i || q_i) of config.kind for i < n, a side with N = 1 broadcasting; q == nullptr
// means q = N(0, I) (KL only). The kinds other than KL go through a buffer of doubles (a failure
// leaves `out` untouched); a Renyi pair whose mixed covariance is not positive definite fails
// with side "pair": where.index the row, where.pivot and where.value its pivot.
template <class T, class U>
Failure rowwise(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n, U* out,
                const RowwiseConfig& config, Jitter& jitter);

// Bytes rowwise allocates for these arguments.
template <class T>
std::int64_t rowwise_footprint(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n,
                               const RowwiseConfig& config);

// The kinds' row-wise kernels that rowwise() chooses between: KL (rowwise/loops.cpp) and every
// other kind (divergence/rowwise.cpp).
template <class T, class U>
Failure kl_rowwise(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n, U* out,
                   const RowwiseConfig& config, Jitter& jitter);
template <class T>
std::int64_t kl_rowwise_footprint(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n,
                                  const RowwiseConfig& config);
template <class T, class U>
Failure divergence_rowwise(const Gaussians<T>& p, const Gaussians<T>& q, std::int64_t n, U* out,
                           const DivergenceConfig& config, Jitter& jitter);
template <class T>
std::int64_t divergence_rowwise_footprint(const Gaussians<T>& p, const Gaussians<T>& q,
                                          std::int64_t n, const DivergenceConfig& config);

// ---- All pairs (pairwise, pairwise_rows, knn; every kind): pairs_engine.cpp, stream.cpp ----

// The path of an all-pairs call, decided by the plan. KL: the SIMD kernels for two diagonal
// sides (diag_pairs/), the GEMM for a full-covariance q with a full or diagonal p (full_pairs/),
// the exact formula per pair for every other pair of families (lowrank_pairs/). Every other kind:
// divergence/pairs.hpp (tiles for two diagonal sides of a diag_tiles_kind, else per pair).
enum class PairsPath { diag, full, lowrank, divergence };
// The kernel of KL's diagonal path: the double one, the q = p one that gives both directions of
// a pair in one pass (in double), or the float one (float inputs, a loose enough tolerance; the
// path falls back to the double or q = p kernel if a value is out of its range).
enum class DiagKernelKind { double_kernel, sym, float_kernel };
struct PairsConfig {
  Divergence kind = Divergence::kl;
  double alpha = 0;  // renyi only
  PairsPath path = PairsPath::lowrank;
  DiagKernelKind kernel = DiagKernelKind::double_kernel;  // PairsPath::diag only
  // Entries of KL's diag and full paths, and of the divergences' tiles, whose bound exceeds
  // tolerance * (|D| + 1) are recomputed by the exact formula (> 0 there; else 0: exact).
  double tolerance = 0;
  int workers = 1;          // >= 1
  int blas_threads = 1;     // PairsPath::divergence: DivergenceConfig::blas_threads
  bool diag_tiles = false;  // PairsPath::divergence: DivergenceConfig::diag_tiles
};

// The bound of KL's float diagonal kernel relative to Q for dimension d (diag_pairs/plan.hpp),
// which the plan compares with the tolerance.
double diag_float_kernel_bound(std::int64_t d);

// What preparing both sides keeps and allocates, in bytes.
struct PairsBytes {
  std::int64_t kept = 0;  // the prepared batches
  std::int64_t work = 0;  // preparing's scratch or block()'s, whichever is larger, on all workers
  std::int64_t pair_scratch = 0;  // doubles of an exact re-score's scratch (knn's selection)
};

// Bytes knn's selection allocates for m columns on `threads` workers: per worker an index order
// [m] (int64) and exact values [m] plus the path's pair scratch (pair_scratch doubles).
std::int64_t knn_block_bytes(std::int64_t m, std::int64_t pair_scratch, int threads);

// One all-pairs engine for every kind, on the path the plan chose: every q prepared once, every p
// prepared once, then any block of rows of D(p_i || q_j) computed on demand. Paths that read the
// callers' arrays in place keep views of them: p and q must outlive the engine (the operations
// make and drop it within their call).
template <class T>
class PairsEngine {
 public:
  // q == nullptr: q = p. A failed factorization is returned (side "p" or "q") and leaves `out`
  // empty.
  static Failure prepare(const Gaussians<T>& p, const Gaussians<T>* q, const PairsConfig& config,
                         Jitter& jitter, std::optional<PairsEngine>& out);

  // What prepare() keeps for these inputs (kept) and the buffers that preparing and block()
  // allocate on config.workers workers (work): everything but the block of results and knn's
  // selection (knn_block_bytes, with pair_scratch).
  static PairsBytes footprint(const Gaussians<T>& p, const Gaussians<T>* q,
                              const PairsConfig& config);

  PairsEngine(PairsEngine&&) noexcept;
  PairsEngine& operator=(PairsEngine&&) noexcept;
  ~PairsEngine();

  std::int64_t cols() const;

  // out[(i - lo) * cols() + j] = D(p_i || q_j) for lo <= i < hi, every j, on the plan's workers;
  // exactly 0 at j == i when q = p. A Renyi pair whose mixed covariance is not positive definite
  // returns side "pair", where.index = i, column = j (the first in row order); the rows of out
  // are then unspecified.
  Failure block(std::int64_t lo, std::int64_t hi, double* out) const;
  // The same in float, on KL's diagonal path only (PairsPlan::writes_float), which writes float
  // results from a small buffer per worker rather than a block of doubles.
  void block(std::int64_t lo, std::int64_t hi, float* out) const;

  // For rows lo <= i < hi of a block from block(), the k smallest by (D, j) into
  // indices/values[(i - lo) * k + r]; exclude_self leaves out j == i. Entries computed within a
  // tolerance (KL's diag and full paths) are re-scored exactly where they could rank in the
  // first k.
  void knn(std::int64_t lo, std::int64_t hi, const double* block, std::int64_t k, bool exclude_self,
           std::int64_t* indices, double* values) const;

 private:
  struct Paths;
  explicit PairsEngine(std::unique_ptr<Paths> paths);
  std::unique_ptr<Paths> paths_;
};

// How a stream of blocks ended: every block done, a pair that failed in a block (failure, side
// "pair"), or an allocation that failed: the block of results' buffers or a block's workspace.
struct StreamEnd {
  enum class Memory { enough, block, workspace };
  Failure failure;
  Memory memory = Memory::enough;
};

// Blocks of `rows` rows of the engine's n x cols() results computed in order and either written
// into `out` or, when sink is not null, handed to it. Double results are computed in place;
// float results of a path that writes them (writes_float) are written as floats by the engine
// (no block of doubles); other float results go through a block of doubles and are converted.
// progress(done rows, n) after each block, when set. sink and progress may throw: their
// exceptions pass through.
template <class T, class U>
StreamEnd pairwise_stream(const PairsEngine<T>& engine, std::int64_t n, std::int64_t rows,
                          bool writes_float, U* out, const RowSink<U>* sink,
                          const std::function<void(std::int64_t, std::int64_t)>& progress);

// knn's rows in blocks of `rows`: the k nearest of each of the n rows into indices and values
// ([n, k], row-major).
template <class T, class U>
StreamEnd knn_stream(const PairsEngine<T>& engine, std::int64_t n, std::int64_t rows,
                     std::int64_t k, bool exclude_self, std::int64_t* indices, U* values,
                     const std::function<void(std::int64_t, std::int64_t)>& progress);

// ---- Gradients (kl_backward, pairwise_kl_backward, ...): rowwise/, diag_pairs_backward/ ----

// Row-wise: L = sum_{i < n} grad[i] KL(p_i || q_i), a side with N = 1 broadcast over every i
// (its gradients summed over i); q == nullptr means q = N(0, I). p and q have library gradients
// (has_gradients) and the same family. Empty spans are not written.
template <class T>
void kl_rowwise_backward(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n,
                         const T* grad, const Gradients<T>& dp, const Gradients<T>& dq,
                         int workers);

// Row-wise values with each row's own gradients (grad = 1), computed in double and rounded once to
// S (T, or double): diagonal p and q (or q == nullptr, N(0, I)), each with n rows. Empty spans are
// not written.
template <class T, class S>
void kl_rowwise_with_gradients(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t n,
                               T* out, const Gradients<S>& dp, const Gradients<S>& dq, int workers);

// dst[i * row_size + k] = grad[i] * unit[i * row_size + k] for i < rows, each product in double.
template <class T>
void scale_rows(const double* unit, std::int64_t rows, std::int64_t row_size, const T* grad,
                T* dst) noexcept;

// data[i * row_size + k] *= grad[i] for i < rows, in place.
template <class T>
void scale_rows_in_place(T* data, std::int64_t rows, std::int64_t row_size, const T* grad) noexcept;

// dst[k] = sum_{i < rows} grad[i] * unit[i * row_size + k], summed in double in row order.
template <class T>
void sum_scaled_rows(const double* unit, std::int64_t rows, std::int64_t row_size, const T* grad,
                     T* dst) noexcept;

// The workers of the all-pairs backward's two paths (diag_pairs_backward/front.cpp): the closed
// forms of a grad with one value at every pair, or the GEMM forms; which one runs depends on the
// grad's values, so the plan sizes both.
struct PairsBackwardConfig {
  int uniform_workers = 1;
  int gemm_workers = 1;
};

// All pairs of diagonal batches: L = sum_ij grad[i * M + j] KL(p_i || q_j), or, with grad ==
// nullptr, L = sum_grad * sum_ij KL(p_i || q_j); q == nullptr means q = p (dp then receives both
// contributions, dq is empty).
template <class T>
void pairwise_diag_backward(const DiagGaussians<T>& p, const DiagGaussians<T>* q, const T* grad,
                            double sum_grad, const Gradients<T>& dp, const Gradients<T>& dq,
                            const PairsBackwardConfig& config);

// ---- Validation's fast checks (core/validate.cpp): common/validate_rows.cpp ----
// Vectorized (Highway, the target chosen at run time), without messages: a failed check makes
// validation run its element-wise checks, which find and name the first bad value.

// True if every |x| of the `rows` rows of n values at data + i * row_stride (unit column stride)
// is at most `bound` (>= 0); NaN is not.
bool all_abs_within_rows(const float* data, std::int64_t rows, std::int64_t row_stride,
                         std::int64_t n, float bound) noexcept;
bool all_abs_within_rows(const double* data, std::int64_t rows, std::int64_t row_stride,
                         std::int64_t n, double bound) noexcept;

// True if those values all lie in [lo, hi], 0 < lo <= hi; NaN does not.
bool all_within_rows(const float* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
                     float lo, float hi) noexcept;
bool all_within_rows(const double* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
                     double lo, double hi) noexcept;

// True if every row r < d of the d x d matrix m (row stride row_stride, unit column stride) is
// finite on and left of column r and 0 right of it, and its diagonal entry x is positive with
// x^2 in [min_variance, max_variance]. window: 2 d - 1 values, d zeros then d - 1 ones (row r
// reads window + d - 1 - r as its mask of the upper triangle).
bool tril_rows(const float* m, std::int64_t row_stride, std::int64_t d, const float* window,
               double min_variance, double max_variance) noexcept;
bool tril_rows(const double* m, std::int64_t row_stride, std::int64_t d, const double* window,
               double min_variance, double max_variance) noexcept;

// ---- log det Sigma per distribution (mixtures): pair/logdet.cpp ----
// out[i] = log det Sigma_i for i < g.n(), each distribution prepared as for a pair (so a matrix
// that is not positive definite fails as there, with factoring's jitter); the first failure is
// returned (its index g's row) and out is then incomplete.
template <class T>
FactorFailure logdets(const Gaussians<T>& g, double* out, const Factoring& factoring);

// ---- Running moments (MomentAccumulator): moments/update.cpp ----
// Each chunk's own mean and centred scatter, joined to the running ones by Chan, Golub &
// LeVeque's pairwise update.

// The moments updated in place: `count` rows with mean [d] and scatter, the lower triangle of a
// row-major [d, d] (full) or the diagonal [d] (not full).
struct Moments {
  std::int64_t d = 0;
  bool full = true;
  std::int64_t* count = nullptr;
  double* mean = nullptr;
  double* scatter = nullptr;
};

// Adds the rows of x [N, d] (finite: validated by the caller). Allocates its chunk buffers first
// (std::bad_alloc is the only exception, and then nothing has changed).
template <class T>
void moments_update(const Moments& m, const View<T, 2>& x, int workers);

// Adds the moments of other rows: count_b >= 0 rows of mean_b [d] and scatter_b (the same layout
// as m's).
void moments_merge(const Moments& m, std::int64_t count_b, const double* mean_b,
                   const double* scatter_b);

}  // namespace gausskl::cpu
