// parallel_for's cost of handing work to the pool (src/cpu/common/parallel.cpp): two ranges of
// busy work on two workers, called back to back (the pool's thread still awake from the last
// call) or after the caller has been busy for longer than kPoolAwake (the thread parked, woken by
// the call). Real time per call, mean over the iterations: a slow wake-up shows in the mean, not
// in the minimum.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

#include "cpu/common/parallel.hpp"
#include "cpu/tunables.hpp"

namespace {

using Clock = std::chrono::steady_clock;

void busy(std::chrono::microseconds span) {
  const Clock::time_point until = Clock::now() + span;
  while (Clock::now() < until) {
  }
}

void BM_parallel_for_two_ranges(benchmark::State& state) {
  const std::chrono::microseconds work{state.range(0)};
  const bool parked = state.range(1) != 0;
  for (auto _ : state) {
    if (parked) {
      state.PauseTiming();
      busy(3 * gausskl::cpu::kPoolAwake);  // the caller's other work, while the thread parks
      state.ResumeTiming();
    }
    gausskl::cpu::parallel_for(2, 2, [&](int, std::int64_t, std::int64_t) { busy(work); });
  }
}

}  // namespace

BENCHMARK(BM_parallel_for_two_ranges)
    ->ArgNames({"work_us", "parked"})
    ->ArgsProduct({{0, 20, 100}, {0, 1}})
    ->UseRealTime();

BENCHMARK_MAIN();
