// The oracle: KL divergences in long double by the textbook formula, for tests only.
//
// Every distribution is densified to its covariance in long double (std^2, exp(logvar),
// 1/precision, L L^T, inv(P), W W^T + diag(d)); then, with T = L_T L_T^T (long-double Cholesky),
//   2 KL(p || q) = tr(T^{-1} S) + (mu_p - mu_q)^T T^{-1} (mu_p - mu_q) - D + log|T| - log|S|.
// No stable rewrites, no shortcuts, no tiling: slow on purpose, and independent of src/cpu.
// Inputs are assumed valid (the library's validation is what the tests exercise separately).
#pragma once

#include <cstdint>

#include "gausskl/types.hpp"

namespace gausskl::reference {

// KL(p_i || q_j) in nats.
template <class T>
long double kl(const Gaussians<T>& p, std::int64_t i, const Gaussians<T>& q, std::int64_t j);

// KL(p_i || N(0, I)) in nats.
template <class T>
long double kl_standard_normal(const Gaussians<T>& p, std::int64_t i);

}  // namespace gausskl::reference
