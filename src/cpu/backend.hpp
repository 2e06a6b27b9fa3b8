// The CPU backend: what src/core dispatches to after validation.
//
// Backends compute; they never validate and never throw, except std::bad_alloc while
// allocating their workspace up front, which the core reports as a resource error.
// A factorization that fails (a matrix that is not positive definite) is returned, not thrown,
// so the core can word the error.
#pragma once

#include <atomic>
#include <cstdint>

#include "cpu/pair/prepare.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

struct Failure {
  const char* side = nullptr;  // "p" or "q"; nullptr when nothing failed
  FactorFailure where;
};

// Options::jitter, and where to count the distributions of each side that needed it.
struct Jitter {
  double eps = 0;
  std::atomic<std::int64_t> p{0}, q{0};
  Factoring of_p() { return {eps, &p}; }
  Factoring of_q() { return {eps, &q}; }
};

// out[i] = KL(p_i || q_i) for i < n, a side with N = 1 broadcasting; q == nullptr means
// q = N(0, I).
template <class T, class U>
Failure kl_rowwise(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n, U* out,
                   int threads, Jitter& jitter);

// The workers kl_rowwise uses of `threads` (0 = all cores) for n rows: fewer when the rows are
// too few or too light to pay for starting threads (kRowwiseWorkPerThread).
template <class T>
int rowwise_workers(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n, int threads);

// Bytes kl_rowwise allocates for these arguments.
template <class T>
std::int64_t kl_rowwise_footprint(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n,
                                  int threads);

// All-pairs operations (pairwise_kl, knn_kl) plan with AllPairs (all_pairs.hpp) and select
// neighbours with knn_block (knn.hpp).

}  // namespace gausskl::cpu
