// The plan of an all-pairs operation (pairwise, knn): every q prepared once, every p prepared
// once, then any block of rows of KL(p_i || q_j) computed on demand. Two diagonal sides take the
// SIMD path (diag_pairs.hpp); a full-covariance q with a full or diagonal p the GEMM path
// (full_pairs.hpp), whose flagged entries are re-scored by the exact pair formula; every other
// pair of families the exact pair formula.
#pragma once

#include <cstdint>
#include <optional>

#include "cpu/backend.hpp"
#include "cpu/diag_pairs/plan.hpp"
#include "cpu/full_pairs/plan.hpp"
#include "cpu/pair/layout.hpp"

namespace gausskl::cpu {

class AllPairs {
 public:
  // The tolerance block() works to: options.tolerance, or when that is 0 ten times below the
  // accuracy promised for T (1e-7 for float, 1e-13 for double).
  template <class T>
  static double tolerance_for(double requested);

  // q == nullptr: q = p (one prepared copy serves both sides). tolerance: tolerance_for's. The
  // plan may keep views of p's and q's arrays (the diagonal path reads them to re-score), so
  // they must outlive it: the operations make and drop it within their call.
  template <class T>
  static Failure prepare(const Gaussians<T>& p, const Gaussians<T>* q, int threads,
                         double tolerance, Jitter& jitter, std::optional<AllPairs>& out);

  // Bytes prepare() keeps for these inputs plus the buffers that preparing, block() and (with
  // `knn`) knn_block() allocate on `threads` threads: everything but the block of results.
  template <class T>
  static std::int64_t footprint(const Gaussians<T>& p, const Gaussians<T>* q, int threads,
                                double tolerance, bool knn);

  // The workers to use of `threads` for these inputs: fewer on diagonal calls too small to pay
  // for starting threads (kDiagPairsWorkPerThread).
  template <class T>
  static int workers(const Gaussians<T>& p, const Gaussians<T>* q, int threads);

  std::int64_t rows() const { return n_; }
  std::int64_t cols() const { return m_; }

  // out[(i - lo) * cols() + j] = KL(p_i || q_j) for lo <= i < hi, every j, on `threads`
  // threads; exactly 0 at j == i when q = p.
  void block(std::int64_t lo, std::int64_t hi, double* out, int threads) const;
  // The same in float, for plans that write float results directly (writes_float()): the
  // diagonal path, from a small buffer per worker rather than a block of doubles.
  void block(std::int64_t lo, std::int64_t hi, float* out, int threads) const;
  template <class T>
  static bool writes_float(const Gaussians<T>& p, const Gaussians<T>* q);

  // KL(p_i || q_j) by the exact pair formula (kl_pair.hpp).
  double exact(std::int64_t i, std::int64_t j, double* scratch) const;
  std::int64_t scratch_size() const { return scratch_size_; }

  // block() is within tolerance() * (|KL| + 1) of exact() on every entry (0: it is exact()).
  double tolerance() const { return diag_ || full_ ? tolerance_ : 0.0; }

  // Whether the full-covariance GEMM path (full_pairs.hpp) serves these inputs.
  template <class T>
  static bool uses_full_pairs(const Gaussians<T>& p, const Gaussians<T>& q);

 private:
  AllPairs(std::optional<PreparedBatch> q, std::optional<PreparedBatch> p,
           std::optional<DiagPairs> diag, std::optional<FullPairs> full, std::int64_t n,
           std::int64_t m, double tolerance);

  std::optional<PreparedBatch> q_;  // empty on the diagonal path
  std::optional<PreparedBatch> p_;  // empty when q = p or on the diagonal path
  std::optional<DiagPairs> diag_;
  std::optional<FullPairs> full_;
  std::int64_t n_, m_, scratch_size_;
  double tolerance_;
};

}  // namespace gausskl::cpu
