// The library's limits and defaults, defined here once: the core checks and plans by them, the
// command-line tool and the Python package read them (and their messages are made from them).
#pragma once

#include <cstdint>
#include <type_traits>

namespace gausskl::limits {

// Options::tolerance at most this: beyond 0.1%, not a KL one should rank by.
inline constexpr double max_tolerance = 1e-3;

// Options::tolerance 0: the error all-pairs entries are computed to, relative to |KL| + 1; ten
// times below the accuracy promised for float32 and float64 inputs (1e-6 and 1e-12), so the fast
// paths never cost a digit of that promise.
inline constexpr double default_tolerance_float32 = 1e-7;
inline constexpr double default_tolerance_float64 = 1e-13;
template <class T>
inline constexpr double default_tolerance =
    std::is_same_v<T, float> ? default_tolerance_float32 : default_tolerance_float64;

// Options::memory_budget 0: the blocks of results of all-pairs operations, large enough that a
// block's overhead (a progress report, a sink call, a parallel region) is noise, small enough
// not to matter beside the inputs of a call that needs blocks.
inline constexpr std::int64_t default_block_bytes = std::int64_t{128} << 20;

// Variances (as implied by any parameterization) must lie in [min_variance, max_variance], so
// that their reciprocals, square roots and logs are finite, normal doubles in every formula.
inline constexpr double min_variance = 1e-300;
inline constexpr double max_variance = 1e300;

}  // namespace gausskl::limits
