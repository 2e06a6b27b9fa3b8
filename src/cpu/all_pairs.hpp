// Shared set-up of the all-pairs operations (pairwise, knn): every q prepared once, every p
// prepared once, then any row i of KL(p_i || q_j) computed on demand.
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
  std::int64_t scratch_size() const { return scratch_size_; }
  // out[j] = KL(p_i || q_j) for every j < cols(); exactly 0 at j == i when q = p.
  void row(std::int64_t i, double* out, double* scratch) const;

 private:
  AllPairs(PreparedBatch q, std::optional<PreparedBatch> p, std::int64_t n, std::int64_t m);

  PreparedBatch q_;
  std::optional<PreparedBatch> p_;  // empty when q = p
  std::int64_t n_, m_, scratch_size_;
};

}  // namespace gausskl::cpu
