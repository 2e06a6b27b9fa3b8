// The per-pair all-pairs path: every pair of families that neither the diagonal SIMD path nor
// the full-covariance GEMM path serves (a low-rank side, or a full p with a diagonal q). Both
// sides are prepared once (pair/batches.hpp) and every entry is the exact pair formula. A GEMM
// path for low-rank families (through Woodbury, as pair/ does per pair) would live here.
#pragma once

#include <cstdint>
#include <optional>

#include "cpu/backend.hpp"
#include "cpu/pair/batches.hpp"

namespace gausskl::cpu {

class LowRankPairs {
 public:
  // q == nullptr: q = p.
  template <class T>
  static Failure prepare(const Gaussians<T>& p, const Gaussians<T>* q, int workers, Jitter& jitter,
                         std::optional<LowRankPairs>& out);
  template <class T>
  static PairsBytes bytes(const Gaussians<T>& p, const Gaussians<T>* q, int workers) {
    return PreparedPairs::bytes(p, q, workers);
  }

  std::int64_t cols() const { return pairs_.cols(); }
  void block(std::int64_t lo, std::int64_t hi, double* out, int workers) const {
    pairs_.block(lo, hi, out, workers, EveryEntry{});
  }
  double exact(std::int64_t i, std::int64_t j, double* scratch) const {
    return pairs_.exact(i, j, scratch);
  }
  std::int64_t scratch_size() const { return pairs_.scratch_size(); }

 private:
  explicit LowRankPairs(PreparedPairs pairs) : pairs_(std::move(pairs)) {}

  PreparedPairs pairs_;
};

}  // namespace gausskl::cpu
