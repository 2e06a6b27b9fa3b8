// The CPU backend: what src/core dispatches to after validation.
//
// Backends compute; they never validate and never throw, except std::bad_alloc while
// allocating their workspace up front, which the core reports as a resource error.
// A factorization that fails (a matrix that is not positive definite) is returned, not thrown,
// so the core can word the error.
#pragma once

#include <cstdint>

#include "cpu/prepare.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

struct Failure {
  const char* side = nullptr;  // "p" or "q"; nullptr when nothing failed
  FactorFailure where;
};

// out[i] = KL(p_i || q_i) for i < n, a side with N = 1 broadcasting; q == nullptr means
// q = N(0, I).
template <class T, class U>
Failure kl_rowwise(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n, U* out,
                   int threads);

// out[i * M + j] = KL(p_i || q_j); q == nullptr means q = p, with an exact zero diagonal.
template <class T, class U>
Failure kl_pairwise(const Gaussians<T>& p, const Gaussians<T>* q, U* out, int threads);

// The k smallest KL(p_i || q_j) per row, ascending, ties to the lower j; q == nullptr means
// q = p, and then exclude_self leaves out j == i.
template <class T, class U>
Failure kl_knn(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t k, bool exclude_self,
               std::int64_t* indices, U* values, int threads);

}  // namespace gausskl::cpu
