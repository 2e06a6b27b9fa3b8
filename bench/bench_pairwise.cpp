// The public pairwise_kl on diagonal float32 inputs at the sizes of the PyTorch forum's question
// (seed 000 in bench/README.md: mu, std [B, H], all pairs) and bench/README.md's table: q = p and
// q != p,
// float32 results, default tolerance, real time. threads 0 is every hardware thread.
//
// The reference to read these against is the torch GEMM expansion of bench/peers.py timed in the
// same sitting, e.g. /work/main/.venv/bin/python bench/torch_gemm.py (min of repeats).
// Run with --benchmark_repetitions=5 and read the min rows (the machine is shared).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "bench_data.hpp"
#include "gausskl/ops.hpp"

namespace {

using gausskl::bench::random;

// Means N(0, 1)-like (uniform in [-1.7, 1.7]), std uniform in [0.5, 2], as in peers.py.
struct Batch {
  std::vector<float> mu, sd;
  gausskl::DiagGaussians<float> view;
  Batch(std::int64_t n, std::int64_t d, std::uint64_t seed)
      : mu(random<float>(n * d, -1.7, 1.7, seed)), sd(random<float>(n * d, 0.5, 2, seed + 1)) {
    view = {gausskl::contiguous<float, 2>(mu.data(), {n, d}),
            gausskl::contiguous<float, 2>(sd.data(), {n, d}), gausskl::DiagParam::stddev};
  }
};

// Args: N (= M), D, q distinct (0: q = p), threads.
void BM_pairwise_kl(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const bool distinct = state.range(2) != 0;
  gausskl::Options options;
  options.threads = static_cast<int>(state.range(3));
  const Batch p(n, d, 1), q(n, d, 11);
  std::vector<float> out(static_cast<std::size_t>(n * n));
  for (auto _ : state) {
    if (distinct) {
      gausskl::pairwise_kl(gausskl::Gaussians<float>(p.view), gausskl::Gaussians<float>(q.view),
                           std::span<float>(out), options);
    } else {
      gausskl::pairwise_kl(gausskl::Gaussians<float>(p.view), std::span<float>(out), options);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["ns_per_ijh"] = benchmark::Counter(
      static_cast<double>(n * n * d) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_pairwise_kl)
    ->ArgNames({"N", "D", "distinct", "threads"})
    ->ArgsProduct({{100, 1024}, {256}, {0, 1}, {0, 1}})
    ->Args({4096, 64, 1, 0})
    ->Args({4096, 256, 1, 0})
    ->Args({4096, 256, 0, 0})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond)
    ->ComputeStatistics("min", [](const std::vector<double>& v) {
      return *std::min_element(v.begin(), v.end());
    });

// gausskl::pairwise of each divergence on diagonal inputs in T (std parameterization), q != p,
// results in T, default tolerance, against KL in the same run: ns per (i, j, h). Args: kind
// (gausskl::Divergence's order: 0 kl, 1 jeffreys, 2 bhattacharyya, 3 hellinger, 4 wasserstein2),
// N (= M), D, threads.
template <class T>
void BM_pairwise_kind(benchmark::State& state) {
  const auto kind = static_cast<gausskl::Divergence>(state.range(0));
  const std::int64_t n = state.range(1), d = state.range(2);
  gausskl::Options options;
  options.divergence = kind;
  options.threads = static_cast<int>(state.range(3));
  const std::vector<T> mu_p = random<T>(n * d, -1.7, 1.7, 1), sd_p = random<T>(n * d, 0.5, 2, 2);
  const std::vector<T> mu_q = random<T>(n * d, -1.7, 1.7, 11), sd_q = random<T>(n * d, 0.5, 2, 12);
  const gausskl::Gaussians<T> p(gausskl::DiagGaussians<T>{
      gausskl::contiguous<T, 2>(mu_p.data(), {n, d}),
      gausskl::contiguous<T, 2>(sd_p.data(), {n, d}), gausskl::DiagParam::stddev});
  const gausskl::Gaussians<T> q(gausskl::DiagGaussians<T>{
      gausskl::contiguous<T, 2>(mu_q.data(), {n, d}),
      gausskl::contiguous<T, 2>(sd_q.data(), {n, d}), gausskl::DiagParam::stddev});
  std::vector<T> out(static_cast<std::size_t>(n * n));
  for (auto _ : state) {
    gausskl::pairwise(p, q, std::span<T>(out), options);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(gausskl::divergence_name(kind));
  state.counters["ns_per_ijh"] = benchmark::Counter(
      static_cast<double>(n * n * d) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void kind_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"kind", "N", "D", "threads"});
  for (const int kind : {0, 1, 2, 3, 4}) {
    for (const int n : {1000, 4096})
      b->Args({kind, n, 64, 1});
  }
}

BENCHMARK(BM_pairwise_kind<float>)->Apply(kind_args)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_pairwise_kind<double>)->Apply(kind_args)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
