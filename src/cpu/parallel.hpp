// Splitting [0, n) over worker threads.
#pragma once

#include <cstdint>
#include <functional>

namespace gausskl::cpu {

// The thread count to use for a request of `requested` (0 = one per hardware thread).
int resolve_threads(int requested);

// Calls fn(worker, begin, end) on `workers` contiguous, increasing ranges that cover [0, n),
// worker 0 on the calling thread. Each output element is computed by exactly one call, so
// results never depend on the worker count. If a thread cannot be started, its range runs
// on the calling thread instead: this never throws.
void parallel_for(std::int64_t n, int workers,
                  const std::function<void(int, std::int64_t, std::int64_t)>& fn) noexcept;

}  // namespace gausskl::cpu
