// An all-pairs operation (pairwise, knn) on the path the plan chose (backend.hpp, PairsPath):
// every q prepared once, every p prepared once, then any block of rows of KL(p_i || q_j) computed
// on demand. One line per path below; each path lives in its folder (diag_pairs/, full_pairs/,
// lowrank_pairs/).
#pragma once

#include <cstdint>
#include <optional>
#include <variant>

#include "cpu/backend.hpp"
#include "cpu/diag_pairs/plan.hpp"
#include "cpu/full_pairs/plan.hpp"
#include "cpu/lowrank_pairs/plan.hpp"

namespace gausskl::cpu {

class AllPairs {
 public:
  // q == nullptr: q = p. The diagonal path keeps views of p's and q's arrays (it reads them to
  // re-score), so they must outlive the plan: the operations make and drop it within their call.
  template <class T>
  static Failure prepare(const Gaussians<T>& p, const Gaussians<T>* q, const PairsConfig& config,
                         Jitter& jitter, std::optional<AllPairs>& out);

  // What prepare() keeps for these inputs (kept) and the buffers that preparing and block()
  // allocate on config.workers workers (work): everything but the block of results and knn's
  // selection (knn/loops.hpp, knn_block_bytes, with pair_scratch).
  template <class T>
  static PairsBytes footprint(const Gaussians<T>& p, const Gaussians<T>* q,
                              const PairsConfig& config);

  std::int64_t rows() const;
  std::int64_t cols() const;

  // out[(i - lo) * cols() + j] = KL(p_i || q_j) for lo <= i < hi, every j, on `workers` workers;
  // exactly 0 at j == i when q = p.
  void block(std::int64_t lo, std::int64_t hi, double* out, int workers) const;
  // The same in float, on the diagonal path only (PairsPath::diag), which writes float results
  // from a small buffer per worker rather than a block of doubles.
  void block(std::int64_t lo, std::int64_t hi, float* out, int workers) const;

  // KL(p_i || q_j) by the exact formula of the path.
  double exact(std::int64_t i, std::int64_t j, double* scratch) const;
  std::int64_t scratch_size() const;

  // block() is within tolerance() * (|KL| + 1) of exact() on every entry (0: it is exact()).
  double tolerance() const { return tolerance_; }

 private:
  template <class Path>
  AllPairs(Path path, double tolerance) : path_(std::move(path)), tolerance_(tolerance) {}

  std::variant<DiagPairs, FullPairs, LowRankPairs> path_;
  double tolerance_;
};

}  // namespace gausskl::cpu
