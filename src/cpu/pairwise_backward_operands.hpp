// The operands of the pairwise backward (pairwise_backward.cpp): one diagonal batch's values in
// double, and the chain rule from the variance to the scale parameter the caller gave.
#pragma once

#include <cstdint>
#include <vector>

#include "gausskl/gradients.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

// A diagonal batch in double, C order [n, d]: means minus a shared centre (KL is invariant to
// translating both sides, and the GEMM forms cancel less on centred means), variances,
// precisions, and the derivative of the variance with respect to the caller's scale parameter.
struct DiagSide {
  std::int64_t n = 0, d = 0;
  std::vector<double> mean, var, lam, dvar;
};

// Per dimension h, the mean of p's means (q == nullptr) or the midpoint of p's and q's.
template <class T>
std::vector<double> backward_centre(const DiagGaussians<T>& p, const DiagGaussians<T>* q);

// g's values, centred by `centre` ([d]). Throws std::bad_alloc only.
template <class T>
DiagSide diag_side(const DiagGaussians<T>& g, const std::vector<double>& centre);

// Writes row i, dimensions [h0, h0 + count), of a side's gradients: dL/dmean = gmu and
// dL/dscale = gvar * dv/dscale, rounded once to T; an empty span is not written.
template <class T>
void store_gradients(const DiagSide& side, std::int64_t i, std::int64_t h0, std::int64_t count,
                     const double* gmu, const double* gvar, const Gradients<T>& out) noexcept;

}  // namespace gausskl::cpu
