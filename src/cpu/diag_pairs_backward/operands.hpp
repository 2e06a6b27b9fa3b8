// The operands of the pairwise backward (diag_pairs_backward/front.cpp): a diagonal batch's rows
// read in double, and the chain rule from the variance to the scale parameter the caller gave.
#pragma once

#include <cstdint>
#include <vector>

#include "gausskl/gradients.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

// A diagonal batch read row by row in double (nothing is copied up front: the paths read each
// row where they need it), its means less a centre: KL is invariant to translating both sides,
// and the GEMM forms cancel less on centred means.
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

// Per dimension h, the mean of the batch's means.
template <class T>
std::vector<double> mean_of_means(const DiagGaussians<T>& g);

// Both sides as the backward reads them, each product's operands and the gradient formulas that
// read it at one centre: the sums over q (for p's gradients) at q's mean of means, those over p
// (for q's) at p's. The gradient of p_i so depends only on p_i, q and G's row i, and that of q_j
// only on q_j, p and G's column j, whatever the other rows of the call. With q = p all four are
// p at its own centre.
template <class T>
struct CentredSides {
  DiagRows<T> p_at_q, q_at_q;  // p's gradients and the sums over q they read
  DiagRows<T> p_at_p, q_at_p;  // the sums over p and q's gradients
  bool self;                   // q = p: dp gets both sides' contributions
};

// Writes row i, dimensions [h0, h0 + count), of a batch's gradients ([n, d] arrays):
// dL/dmean = gmu and dL/dscale = gvar * dvar, rounded once to T; empty spans are not written.
template <class T>
void store_gradients(const Gradients<T>& out, std::int64_t d, std::int64_t i, std::int64_t h0,
                     std::int64_t count, const double* gmu, const double* gvar,
                     const double* dvar) noexcept;

}  // namespace gausskl::cpu
