// The operands of the pairwise backward (diag_pairs_backward/front.cpp): a diagonal batch's rows
// read in double, and the chain rule from the variance to the scale parameter the caller gave.
#pragma once

#include <cstdint>
#include <vector>

#include "gausskl/gradients.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

// A diagonal batch read row by row in double (nothing is copied up front: the paths read each
// row where they need it), its means less a shared centre: KL is invariant to translating both
// sides, and the GEMM forms cancel less on centred means.
template <class T>
struct DiagRows {
  DiagGaussians<T> g;
  const double* centre;  // [d]

  std::int64_t n() const noexcept { return g.mean.shape[0]; }
  std::int64_t d() const noexcept { return g.mean.shape[1]; }
  // Row i, dimensions [h0, h0 + count): mean - centre, variance, precision and dv/dscale; a
  // null destination is not computed.
  void read(std::int64_t i, std::int64_t h0, std::int64_t count, double* mean, double* var,
            double* lam, double* dvar) const noexcept;
};

// Per dimension h, the mean of p's means, or with q the midpoint of p's and q's means.
template <class T>
std::vector<double> backward_centre(const DiagGaussians<T>& p, const DiagGaussians<T>* q);

// Writes row i, dimensions [h0, h0 + count), of a batch's gradients ([n, d] arrays):
// dL/dmean = gmu and dL/dscale = gvar * dvar, rounded once to T; empty spans are not written.
template <class T>
void store_gradients(const Gradients<T>& out, std::int64_t d, std::int64_t i, std::int64_t h0,
                     std::int64_t count, const double* gmu, const double* gvar,
                     const double* dvar) noexcept;

}  // namespace gausskl::cpu
