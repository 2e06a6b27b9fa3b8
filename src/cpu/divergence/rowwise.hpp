// Row-wise divergences other than KL (which src/core sends to the KL kernels): out[i] =
// D(p_i || q_i), a side with one row broadcasting.
//   * two diagonal sides: per dimension in closed form (diag.hpp), reading the views in place;
//   * jeffreys otherwise: KL both ways by the pair formula every KL path shares (pair/kl.hpp),
//     each distribution prepared once;
//   * every other kind: dense factors once per distribution, the pair's forms (dense.hpp).
#pragma once

#include <cstdint>

#include "cpu/backend.hpp"
#include "cpu/divergence/config.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

// Results go through a buffer of doubles: a failure leaves `out` untouched. A Renyi pair whose
// mixed covariance is not positive definite fails with side "pair": where.index the row,
// where.pivot the dimension (diagonal sides) or the pivot of the mixed covariance's Cholesky
// factorization, where.value the pivot's value.
template <class T, class U>
Failure divergence_rowwise(const Gaussians<T>& p, const Gaussians<T>& q, std::int64_t n, U* out,
                           const DivergenceConfig& config, Jitter& jitter);

// Bytes divergence_rowwise allocates for these arguments.
template <class T>
std::int64_t divergence_rowwise_footprint(const Gaussians<T>& p, const Gaussians<T>& q,
                                          std::int64_t n, const DivergenceConfig& config);

}  // namespace gausskl::cpu
