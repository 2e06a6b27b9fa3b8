// Both sides of an all-pairs call prepared once for the exact pair formula (kl.hpp), and blocks
// of rows computed from them: the per-pair path (lowrank_pairs/) computes every entry so, the
// GEMM path (full_pairs/) only the entries its bound leaves to it, and knn re-scores candidates
// with exact().
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "cpu/backend.hpp"
#include "cpu/common/parallel.hpp"
#include "cpu/pair/layout.hpp"

namespace gausskl::cpu {

// Fill argument of block() that leaves every entry to the exact formula.
struct EveryEntry {};

class PreparedPairs {
 public:
  // q == nullptr: q = p (one prepared copy serves both sides). A triangular q keeps its inverse
  // when p is not triangular (kl.hpp). Fails (returns the side and the distribution) when a
  // matrix is not positive definite after `jitter`.
  template <class T>
  static Failure prepare(const Gaussians<T>& p, const Gaussians<T>* q, int workers, Jitter& jitter,
                         std::optional<PreparedPairs>& out);
  template <class T>
  static PairsBytes bytes(const Gaussians<T>& p, const Gaussians<T>* q, int workers);

  std::int64_t rows() const { return n_; }
  std::int64_t cols() const { return m_; }
  const PreparedBatch& q() const { return q_; }
  // p's batch, nullptr when q = p.
  const PreparedBatch* p() const { return p_ ? &*p_ : nullptr; }

  // KL(p_i || q_j) by the exact pair formula; exactly 0 at j == i when q = p. scratch: doubles
  // of scratch_size().
  double exact(std::int64_t i, std::int64_t j, double* scratch) const;
  std::int64_t scratch_size() const { return scratch_size_; }

  // out[(i - lo) * cols() + j] for lo <= i < hi, every j, on `workers` workers (over rows, or
  // with fewer rows than workers over columns): fill(i0, i1, j0, j1, out, ldo) first writes its
  // entries of a part, NaN where exact() must give them; with EveryEntry, exact() gives all.
  template <class Fill>
  void block(std::int64_t lo, std::int64_t hi, double* out, int workers, const Fill& fill) const;

 private:
  PreparedPairs(PreparedBatch q, std::optional<PreparedBatch> p, std::int64_t n, std::int64_t m);

  PreparedBatch q_;
  std::optional<PreparedBatch> p_;  // empty when q = p
  std::int64_t n_, m_, scratch_size_;
};

template <class Fill>
void PreparedPairs::block(std::int64_t lo, std::int64_t hi, double* out, int workers,
                          const Fill& fill) const {
  constexpr bool every = std::is_same_v<Fill, EveryEntry>;
  const std::int64_t rows = hi - lo, m = m_;
  std::vector<double> scratch(static_cast<std::size_t>(workers * scratch_size_));
  // Split rows over the workers; with fewer rows than workers (one query against a large q),
  // split each row's columns instead.
  const bool by_rows = rows >= workers;
  const std::int64_t units = by_rows ? rows : m;
  parallel_for(units, workers, [&](int w, std::int64_t a, std::int64_t b) {
    double* s = scratch.data() + w * scratch_size_;
    const std::int64_t i0 = by_rows ? lo + a : lo, i1 = by_rows ? lo + b : hi;
    const std::int64_t j0 = by_rows ? 0 : a, j1 = by_rows ? m : b;
    if constexpr (!every) fill(i0, i1, j0, j1, out + (i0 - lo) * m + j0, m);
    for (std::int64_t i = i0; i < i1; ++i) {
      double* row = out + (i - lo) * m;
      for (std::int64_t j = j0; j < j1; ++j) {
        if (every || std::isnan(row[j])) row[j] = exact(i, j, s);
      }
    }
  });
}

}  // namespace gausskl::cpu
