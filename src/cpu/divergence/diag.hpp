// Row-wise divergences between two diagonal batches, per dimension in closed form
// (docs/divergences.md): no logarithm of a ratio taken as a difference of logarithms where the
// ratio is near 1, no difference of standard deviations taken from rounded ones where the
// parameterization gives it exactly.
#pragma once

#include <cstdint>

#include "cpu/backend.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

// Rows [first, first + count) of a diagonal batch, as a batch of its own.
template <class T>
DiagGaussians<T> rows_of(const DiagGaussians<T>& g, std::int64_t first, std::int64_t count) {
  DiagGaussians<T> r = g;
  r.mean.data += first * g.mean.strides[0];
  r.mean.shape[0] = count;
  r.scale.data += first * g.scale.strides[0];
  r.scale.shape[0] = count;
  return r;
}

// out[i - lo] = D(p_i || q_i) for rows lo <= i < hi (a side with one row broadcasting), in
// double. Renyi with alpha > 1 and a dimension whose mixed variance alpha v_q + (1 - alpha) v_p
// is not positive: returns the first such row (and sets *dim, *value to the dimension and the
// mixed variance); otherwise -1. Never throws, never allocates. Every kind but kl by the SIMD
// kernel (diag_simd.hpp), the rows it leaves by the scalar form.
template <class T>
std::int64_t divergence_diag_rows(const DiagGaussians<T>& p, const DiagGaussians<T>& q,
                                  const DivergenceConfig& config, std::int64_t lo, std::int64_t hi,
                                  double* out, std::int64_t* dim, double* value) noexcept;

// The same by the scalar form alone, one term at a time in h order with libm: the oracle of the
// kernel's tests.
template <class T>
std::int64_t divergence_diag_rows_ref(const DiagGaussians<T>& p, const DiagGaussians<T>& q,
                                      const DivergenceConfig& config, std::int64_t lo,
                                      std::int64_t hi, double* out, std::int64_t* dim,
                                      double* value) noexcept;

}  // namespace gausskl::cpu
