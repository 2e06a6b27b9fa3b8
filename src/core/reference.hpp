// The oracle: KL divergences in long double by the textbook formula, for tests only.
//
// Every distribution is densified to its covariance in long double (std^2, exp(logvar),
// 1/precision, L L^T, inv(P), W W^T + diag(d)); then, with T = L_T L_T^T (long-double Cholesky),
//   2 KL(p || q) = tr(T^{-1} S) + (mu_p - mu_q)^T T^{-1} (mu_p - mu_q) - D + log|T| - log|S|.
// No stable rewrites, no shortcuts, no tiling: slow on purpose, and independent of src/cpu.
// Inputs are assumed valid (the library's validation is what the tests exercise separately).
#pragma once

#include <cstdint>
#include <vector>

#include "gausskl/types.hpp"

namespace gausskl::reference {

// KL(p_i || q_j) in nats.
template <class T>
long double kl(const Gaussians<T>& p, std::int64_t i, const Gaussians<T>& q, std::int64_t j);

// D(p_i || q_j) in nats for any kind (alpha: renyi's order), by the textbook formulas of
// docs/divergences.md: the mixed covariance (Sigma_1 + Sigma_2) / 2 or alpha Sigma_2 +
// (1 - alpha) Sigma_1 factored, log-determinants subtracted; wasserstein2 as
// |d|^2 + min over orthogonal U of |L_1 - L_2 U|_F^2 (U the polar factor of L_2^T L_1, by
// one-sided Jacobi; the trace form tr(S_1 + S_2 - 2 (...)^1/2) cancels to nothing on
// near-duplicates even in long double), per dimension for two diagonal covariances. NaN for a renyi
// pair whose mixed covariance is not positive definite.
template <class T>
long double divergence(Divergence kind, long double alpha, const Gaussians<T>& p, std::int64_t i,
                       const Gaussians<T>& q, std::int64_t j);

// KL(p_i || N(0, I)) in nats.
template <class T>
long double kl_standard_normal(const Gaussians<T>& p, std::int64_t i);

// The mean [D] and scatter [D, D] (row-major, sum of (x - mean)(x - mean)^T) of the rows of
// x [N, D], N >= 1, by two passes in long double: the oracle of MomentAccumulator.
template <class T>
void moments(const View<T, 2>& x, std::vector<long double>& mean,
             std::vector<long double>& scatter);

}  // namespace gausskl::reference
