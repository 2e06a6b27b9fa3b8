// Seed 000's training step, backward: the gradients of L = sum_ij G_ij KL(p_i || p_j) for one
// batch mu, std [B, H], float32, threads as by default. G all ones is the users' loss (the sum
// of the matrix: the closed-form path, found by reading G); G random is any other loss (the GEMM
// path). BM_pairwise_sum_backward: the sum given as its one value (pairwise_kl_sum_backward, as
// the Python package calls it for a sum's or a mean's broadcast gradient): no G to read.
// bench/pairwise_backward_torch.py times torch's GEMM-expansion autograd on the same sizes; both
// report wall time and the CPU time of all threads.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <span>
#include <vector>

#include "bench_data.hpp"
#include "gausskl/gausskl.hpp"
#include "gausskl/gradients.hpp"

namespace {

using gausskl::bench::random;

void BM_pairwise_backward(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const bool ones = state.range(2) == 0;
  const auto mu = random<float>(n * d, -2, 2, 1), sd = random<float>(n * d, 0.5, 2, 2);
  const gausskl::Gaussians<float> p(gausskl::DiagGaussians<float>{
      gausskl::contiguous<float, 2>(mu.data(), {n, d}),
      gausskl::contiguous<float, 2>(sd.data(), {n, d}), gausskl::DiagParam::stddev});
  const std::vector<float> grad = ones ? std::vector<float>(static_cast<std::size_t>(n * n), 1.0f)
                                       : random<float>(n * n, -1, 1, 3);
  std::vector<float> d_mu(static_cast<std::size_t>(n * d)), d_sd(d_mu.size());
  const gausskl::Gradients<float> dp{d_mu, d_sd};
  for (auto _ : state) {
    gausskl::pairwise_kl_backward(p, std::span<const float>(grad), dp);
    benchmark::DoNotOptimize(d_mu.data());
    benchmark::DoNotOptimize(d_sd.data());
  }
}

void BM_pairwise_sum_backward(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const auto mu = random<float>(n * d, -2, 2, 1), sd = random<float>(n * d, 0.5, 2, 2);
  const gausskl::Gaussians<float> p(gausskl::DiagGaussians<float>{
      gausskl::contiguous<float, 2>(mu.data(), {n, d}),
      gausskl::contiguous<float, 2>(sd.data(), {n, d}), gausskl::DiagParam::stddev});
  std::vector<float> d_mu(static_cast<std::size_t>(n * d)), d_sd(d_mu.size());
  const gausskl::Gradients<float> dp{d_mu, d_sd};
  for (auto _ : state) {
    gausskl::pairwise_kl_sum_backward(p, 1.0f, dp);
    benchmark::DoNotOptimize(d_mu.data());
    benchmark::DoNotOptimize(d_sd.data());
  }
}

}  // namespace

BENCHMARK(BM_pairwise_sum_backward)
    ->ArgNames({"B", "H"})
    ->Args({100, 256})
    ->Args({1024, 256})
    ->MeasureProcessCPUTime()
    ->UseRealTime();

BENCHMARK(BM_pairwise_backward)
    ->ArgNames({"B", "H", "grad_random"})
    ->Args({100, 256, 0})
    ->Args({1024, 256, 0})
    ->Args({100, 256, 1})
    ->Args({1024, 256, 1})
    ->MeasureProcessCPUTime()  // CPU: of every worker thread (the machine is shared)
    ->UseRealTime();

BENCHMARK_MAIN();
