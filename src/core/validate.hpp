// Input rules, checked once at the public entry, before any computation.
// Every failure throws std::invalid_argument "[op] what, where".
#pragma once

#include <cstddef>
#include <cstdint>

#include "gausskl/types.hpp"

namespace gausskl::detail {

// Variances (as implied by any parameterization) must lie in [limits::min_variance,
// limits::max_variance] (gausskl/limits.hpp).

// Shapes, strides, finiteness, positivity, triangularity and symmetry of one batch.
// `side` names it in messages ("p" or "q"). Positive definiteness is checked where the
// matrices are factored (see src/cpu/prepare.hpp) and reported by the core. Full matrices are
// checked on `threads` threads (0 = all cores).
template <class T>
void validate(const char* op, const char* side, const Gaussians<T>& g, int threads = 1);

// p and q must have the same D.
template <class T>
void validate_same_d(const char* op, const Gaussians<T>& p, const Gaussians<T>& q);

// Rows of a row-wise result: equal N, or N = 1 on one side broadcasting to the other.
template <class T>
std::int64_t broadcast_rows(const char* op, const Gaussians<T>& p, const Gaussians<T>& q);

// An output or input span's size: "[op] name has got elements, expected expected".
void check_size(const char* op, const char* name, std::size_t got, std::int64_t expected);

}  // namespace gausskl::detail
