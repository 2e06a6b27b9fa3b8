// Splitting [0, n) over worker threads of a persistent pool.
#pragma once

#include <cstdint>
#include <functional>

namespace gausskl::cpu {

// The thread count to use for a request of `requested` (0 = one per hardware thread).
int resolve_threads(int requested);

// Calls fn(worker, begin, end) on `workers` contiguous, increasing ranges that cover [0, n),
// worker 0 on the calling thread. Each output element is computed by exactly one call, so
// results never depend on the worker count. The other ranges run on threads of a pool started
// on first use (a fresh thread per range costs more than a small call's work); the
// caller takes ranges no pool thread has taken yet, so a range never waits for a busy or
// descheduled thread to start it. After a job a pool thread stays awake for kPoolAwake
// (tunables.hpp), yielding to other threads, before it parks; so does a caller waiting for its
// job's other ranges: a parked thread's CPU may halt, and on a virtual machine waking it costs
// more than a small call's work. Ranges must not wait for one another: any of them may run after
// the others on the same thread. Safe to call from several threads at once and from inside fn;
// after fork() the child starts a pool of its own. If a thread cannot be started, its ranges run
// on the calling thread instead: this never throws.
void parallel_for(std::int64_t n, int workers,
                  const std::function<void(int, std::int64_t, std::int64_t)>& fn) noexcept;

}  // namespace gausskl::cpu
