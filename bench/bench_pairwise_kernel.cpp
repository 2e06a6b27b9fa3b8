// The diagonal all-pairs loop nest (src/cpu/diag_pairs/loops.hpp) with the chosen kernel alone,
// single-threaded, on every SIMD target this CPU supports: Q[i, j] = sum_h ((mu_ih - nu_jh)^2 +
// v_ih) lam_jh for N = M rows.
//
// Counters: gflops_eq counts 3 operations per (i, j, h) (subtract, two multiply-adds), the work
// the kernel does; ns_per_ijh is the time per (i, j, h). The floor to read them against is one
// SGEMM of [N, 2D] x [2D, M] (4 N M D flops), timed single-threaded with the same N and D, e.g.
//   OPENBLAS_NUM_THREADS=1 python3 -c "import numpy as n, time; a=n.ones((4096, 512), 'f4');
//     b=n.ones((512, 4096), 'f4'); a@b; t=time.perf_counter(); a@b; print(time.perf_counter()-t)"
// (one line).
// Run with --benchmark_repetitions=5 and read the min rows (the machine is shared).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bench_data.hpp"
#include "cpu/diag_pairs/loops.hpp"
#include "cpu/diag_pairs/pack.hpp"
#include "cpu/diag_pairs/ukr.hpp"
#include "cpu/diag_pairs/ukr_sym.hpp"
#include "hwy/targets.h"
#include "support/diag_sym_quadratic.hpp"

namespace {

using gausskl::bench::random;

template <class T>
void BM_diag_quadratic(benchmark::State& state, std::int64_t target) {
  hwy::SetSupportedTargetsForTest(target);
  const std::int64_t n = state.range(0), d = state.range(1);
  const std::vector<T> mu = random<T>(n * d, -1, 1, 1), v = random<T>(n * d, 0.5, 2, 2);
  const std::vector<T> nu = random<T>(n * d, -1, 1, 3), lam = random<T>(n * d, 0.5, 2, 4);
  std::vector<double> q(n * n);
  const gausskl::cpu::DiagKernel<T> kernel = gausskl::cpu::diag_kernel<T>();
  for (auto _ : state) {
    gausskl::cpu::diag_quadratic_loops(kernel, mu.data(), v.data(), n, nu.data(), lam.data(), n, d,
                                       q.data(), n);
    benchmark::DoNotOptimize(q.data());
    benchmark::ClobberMemory();
  }
  const double ijh = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(d);
  state.counters["gflops_eq"] =
      benchmark::Counter(3 * ijh * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ns_per_ijh"] = benchmark::Counter(
      ijh * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetLabel(gausskl::cpu::diag_kernel_target());
  hwy::SetSupportedTargetsForTest(0);
}

// The q = p kernel (ukr_sym.hpp) over all n x n entries (tests/support/diag_sym_quadratic.hpp):
// both directions per tile (range(2) = 0) or the one-sided kernel on every tile (1), from packed
// panels.
void BM_diag_sym(benchmark::State& state, std::int64_t target) {
  hwy::SetSupportedTargetsForTest(target);
  const std::int64_t n = state.range(0), d = state.range(1);
  const bool one_sided = state.range(2) != 0;
  const gausskl::cpu::DiagSymKernel kernel = gausskl::cpu::diag_sym_kernel();
  const std::int64_t nr = kernel.tile.nr;
  const std::vector<double> mu = random<double>(n * d, -1, 1, 1),
                            v = random<double>(n * d, 0.5, 2, 2);
  std::vector<double> lam(v.size());
  for (std::size_t k = 0; k < v.size(); ++k)
    lam[k] = 1 / v[k];
  std::vector<double> panels(gausskl::cpu::diag_sym_panels_size(n, d, nr));
  for (std::int64_t j0 = 0; j0 < n; j0 += nr) {
    gausskl::cpu::pack_diag_sym(mu.data() + j0 * d, v.data() + j0 * d, lam.data() + j0 * d, d,
                                std::min(nr, n - j0), d, nr, panels.data() + j0 * 3 * d);
  }
  std::vector<double> q(n * n);
  for (auto _ : state) {
    gausskl::test::diag_sym_quadratic(kernel, panels.data(), n, d, q.data(), n, one_sided);
    benchmark::DoNotOptimize(q.data());
    benchmark::ClobberMemory();
  }
  const double ijh = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(d);
  state.counters["ns_per_ijh"] = benchmark::Counter(
      ijh * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetLabel(std::to_string(kernel.tile.mr) + "x" + std::to_string(nr));
  hwy::SetSupportedTargetsForTest(0);
}

void register_all() {
  for (const std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
    const std::string name = hwy::TargetName(target);
    for (auto* bm : {benchmark::RegisterBenchmark(("BM_diag_quadratic<float>/" + name).c_str(),
                                                  BM_diag_quadratic<float>, target),
                     benchmark::RegisterBenchmark(("BM_diag_quadratic<double>/" + name).c_str(),
                                                  BM_diag_quadratic<double>, target)}) {
      bm->ArgNames({"N", "D"})
          ->ArgsProduct({{1024, 4096}, {64, 256}})
          ->Unit(benchmark::kMillisecond)
          ->ComputeStatistics("min", [](const std::vector<double>& v) {
            return *std::min_element(v.begin(), v.end());
          });
    }
    benchmark::RegisterBenchmark(("BM_diag_sym/" + name).c_str(), BM_diag_sym, target)
        ->ArgNames({"N", "D", "one_sided"})
        ->ArgsProduct({{100, 1024}, {256}, {0, 1}})
        ->Unit(benchmark::kMillisecond)
        ->ComputeStatistics("min", [](const std::vector<double>& v) {
          return *std::min_element(v.begin(), v.end());
        });
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
