// The all-pairs path of a full-covariance q with a full or diagonal p: both sides prepared once
// (pair/batches.hpp), the GEMM operands built from them (operands.hpp), and each block computed
// by the GEMM, the entries its bound does not certify re-scored by the exact pair formula.
#pragma once

#include <cstdint>
#include <optional>

#include "cpu/backend.hpp"
#include "cpu/full_pairs/operands.hpp"
#include "cpu/pair/batches.hpp"

namespace gausskl::cpu {

class FullPairs {
 public:
  // q == nullptr: q = p. The batches need not outlive the plan (it copies what it needs).
  template <class T>
  static Failure prepare(const Gaussians<T>& p, const Gaussians<T>* q, double tolerance,
                         int workers, Jitter& jitter, std::optional<FullPairs>& out);
  // Bytes the plan keeps (kept) and the most its preparing or its blocks allocate (work).
  template <class T>
  static PairsBytes bytes(const Gaussians<T>& p, const Gaussians<T>* q, int workers);

  std::int64_t rows() const { return pairs_.rows(); }
  std::int64_t cols() const { return pairs_.cols(); }
  void block(std::int64_t lo, std::int64_t hi, double* out, int workers) const;
  double exact(std::int64_t i, std::int64_t j, double* scratch) const {
    return pairs_.exact(i, j, scratch);
  }
  std::int64_t scratch_size() const { return pairs_.scratch_size(); }

 private:
  FullPairs(PreparedPairs pairs, double tolerance, int workers);

  PreparedPairs pairs_;
  FullOperands gemm_;
};

}  // namespace gausskl::cpu
