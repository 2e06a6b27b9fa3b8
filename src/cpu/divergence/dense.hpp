// The divergences of one pair of distributions of any families (bhattacharyya, hellinger,
// renyi, wasserstein2), each distribution brought once to a dense Cholesky factor L
// (Sigma = L L^T) and covariance in double; docs/divergences.md derives the forms.
//
// Bhattacharyya and Renyi factor the pair's mixed covariance (Sigma_1 + Sigma_2) / 2 or
// alpha Sigma_2 + (1 - alpha) Sigma_1 (the math needs its determinant: once per pair), with the
// log-determinants of Sigma_1 and Sigma_2 from their factors' diagonals. Where those logs cancel
// past 6 digits (near-duplicates) the pair is computed again from the spectrum of
// E = L_2^-1 Sigma_1 L_2^-T - I = N + N^T + N N^T, N = L_2^-1 (L_1 - L_2), whose eigenvalues
// mu are small and exact relative to themselves there: every term is then a function of mu with
// no cancellation (scalar.hpp).
// Wasserstein-2 is |d|^2 + min over orthogonal U of |L_1 - L_2 U|_F^2 (the Bures distance of any
// factors), U the polar factor of L_2^T L_1 (jacobi.hpp): a sum of squares of small entries when
// Sigma_1 ~ Sigma_2, never trace minus trace. Two full sides (and any side whose covariance is
// singular) go by symmetric factorizations instead (OpenBLAS; w2_trace.cpp): with F F^T = Sigma_1,
// M = F^T Sigma_2 F is similar to Sigma_1 Sigma_2, and tr (Sigma_1^1/2 Sigma_2 Sigma_1^1/2)^1/2
// is the sum of the square roots of M's eigenvalues. Where the bound on that trace term's error
// exceeds kW2Accept of it (cancellation between the traces on near-duplicates, or small
// eigenvalues whose square roots lost digits), the pair is computed again: by the polar form
// above up to kW2PolarMaxD, else from the singular values of F_2^T F_1.
#pragma once

#include <cstdint>

#include "cpu/backend.hpp"
#include "cpu/divergence/dense_gaussian.hpp"
#include "cpu/pair/prepare.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

// Doubles of one prepared distribution, and of the scratch dense_prepare needs (w2: for kind
// wasserstein2, whose full covariances are factored by OpenBLAS).
inline std::int64_t dense_slot_size(std::int64_t d) {
  return d + 2 * d * d + 2;
}
std::int64_t dense_prepare_scratch(std::int64_t d, bool w2 = false);
// Doubles of scratch dense_pair needs.
inline std::int64_t dense_pair_scratch(std::int64_t d) {
  return 3 * d * d + 19 * d + 1;
}

// Distribution n of g into slot (dense_slot_size doubles). w2: prepared for wasserstein2 (a
// singular covariance accepted; blas_threads for OpenBLAS).
template <class T>
FactorFailure dense_prepare(const Gaussians<T>& g, std::int64_t n, double* slot, double* scratch,
                            const Factoring& factoring, bool w2 = false, int blas_threads = 1);
DenseGaussian dense_view(std::int64_t d, const double* slot);

// D(p || q) for config.kind (not kl or jeffreys). Renyi whose mixed covariance is not positive
// definite: returns -1 and sets fail's pivot and value (the caller sets the index).
double dense_pair(const DivergenceConfig& config, const DenseGaussian& p, const DenseGaussian& q,
                  double* scratch, FactorFailure& fail) noexcept;

}  // namespace gausskl::cpu
