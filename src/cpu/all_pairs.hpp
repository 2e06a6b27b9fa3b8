// The plan of an all-pairs operation (pairwise, knn): every q prepared once, every p prepared
// once, then any block of rows of KL(p_i || q_j) computed on demand.
#pragma once

#include <cstdint>
#include <optional>

#include "cpu/backend.hpp"
#include "cpu/prepared.hpp"

namespace gausskl::cpu {

class AllPairs {
 public:
  // q == nullptr: q = p (one prepared copy serves both sides).
  template <class T>
  static Failure prepare(const Gaussians<T>& p, const Gaussians<T>* q, int threads,
                         std::optional<AllPairs>& out);

  std::int64_t rows() const { return n_; }
  std::int64_t cols() const { return m_; }
  bool self() const { return !p_; }

  // out[(i - lo) * cols() + j] = KL(p_i || q_j) for lo <= i < hi, every j, on `threads`
  // threads; exactly 0 at j == i when q = p.
  void block(std::int64_t lo, std::int64_t hi, double* out, int threads) const;

  // KL(p_i || q_j) by the exact pair formula (kl_pair.hpp).
  double exact(std::int64_t i, std::int64_t j, double* scratch) const;
  std::int64_t scratch_size() const { return scratch_size_; }

 private:
  AllPairs(PreparedBatch q, std::optional<PreparedBatch> p, std::int64_t n, std::int64_t m);

  PreparedBatch q_;
  std::optional<PreparedBatch> p_;  // empty when q = p
  std::int64_t n_, m_, scratch_size_;
};

}  // namespace gausskl::cpu
