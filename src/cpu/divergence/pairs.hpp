// All pairs of a divergence other than KL (PairsEngine's alternative for them): any block of rows
// of D(p_i || q_j), exact in double, for every pair of families.
//   * two diagonal sides: with config.diag_tiles (jeffreys, wasserstein2, bhattacharyya,
//     hellinger, renyi of an order in (0, 1): diag_tiles.hpp) SIMD tiles, each entry within
//     config.tolerance; else (renyi of an order > 1) the row-wise closed forms (diag.hpp) of p_i
//     against a range of q's rows, read in place: nothing prepared;
//   * otherwise each distribution prepared once (slots.hpp: jeffreys' pair-formula layouts, the
//     other kinds' dense factors), then the per-pair forms; only the pair's mixed covariance is
//     factored per pair (bhattacharyya, hellinger, renyi), because the math needs its determinant.
// q = p with a symmetric kind: within a block of rows each pair is computed once and mirrored
// (bit-identical); the pairs left of the block, computed in earlier blocks, are computed again,
// with the same bits since every pair form is bitwise symmetric in the swap of p and q. The
// diagonal is exactly 0 for every kind.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "cpu/backend.hpp"
#include "cpu/divergence/diag_tiles.hpp"
#include "cpu/divergence/slots.hpp"
#include "cpu/pair/batches.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

template <class T>
class DivergencePairs {
 public:
  // q == nullptr: q = p. Keeps views of p's and q's arrays (the diagonal path reads them in
  // place), so they must outlive the object. A failed factorization is returned (side "p" or
  // "q") and leaves `out` empty.
  static Failure prepare(const Gaussians<T>& p, const Gaussians<T>* q,
                         const DivergenceConfig& config, Jitter& jitter,
                         std::optional<DivergencePairs>& out);

  // Bytes prepare() keeps (kept) and the work buffers of preparing and of block() (work).
  static PairsBytes footprint(const Gaussians<T>& p, const Gaussians<T>* q,
                              const DivergenceConfig& config);

  std::int64_t cols() const { return q_.n(); }

  // out[(i - lo) * cols() + j] = D(p_i || q_j) for lo <= i < hi and every j, on config.workers
  // workers. A Renyi pair whose mixed covariance is not positive definite: returns side "pair",
  // where.index = i, column = j (the first such pair in row order), where.pivot and where.value
  // its pivot; the rows of out are then unspecified. Never throws but std::bad_alloc for its
  // per-worker scratch.
  Failure block(std::int64_t lo, std::int64_t hi, double* out) const;

 private:
  DivergencePairs(const Gaussians<T>& p, const Gaussians<T>& q, bool self,
                  const DivergenceConfig& config)
      : p_(p), q_(q), self_(self), config_(config) {}

  // dst[j - j0] = D(p_i || q_j) for j0 <= j < j1; the first failing j, or -1.
  std::int64_t range(std::int64_t i, std::int64_t j0, std::int64_t j1, double* dst, double* scratch,
                     FactorFailure& fail) const;

  Gaussians<T> p_, q_;
  bool self_;
  DivergenceConfig config_;
  // Two diagonal sides with config.diag_tiles. A pointer, not an optional: GCC 12's
  // -Wmaybe-uninitialized (with the sanitizers, -O2) misreads the optional's emplace of its
  // Buffers.
  std::unique_ptr<DiagDivergenceTiles<T>> tiles_;
  std::optional<DivergenceSlots> slots_;         // empty for two diagonal sides
  std::vector<double> p_prepared_, q_prepared_;  // q_prepared_ empty when q = p
};

}  // namespace gausskl::cpu
