// pairwise_kl with a full-covariance q (full_pairs/plan.hpp, the GEMM path): N = M, float64,
// scale_tril factors built as bench/peers.py's "fullpair" rows build them (means N(0, 1),
// off-diagonals N(0, 1) * 0.5 / sqrt(D), diagonal exp(0.3 N(0, 1))), on 2 threads.
//
// The `rescored` counter is the share of entries the GEMM path leaves to the exact pair formula
// (its bound was too large), measured once on the same data through the internal plan.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "cpu/full_pairs/operands.hpp"
#include "cpu/pair/prepare.hpp"
#include "gausskl/gausskl.hpp"

namespace {

struct Side {
  std::vector<double> mean, tril;
};

Side full_side(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z;
  Side s{std::vector<double>(static_cast<std::size_t>(n * d)),
         std::vector<double>(static_cast<std::size_t>(n * d * d), 0.0)};
  for (double& x : s.mean)
    x = z(rng);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t r = 0; r < d; ++r) {
      for (std::int64_t c = 0; c < r; ++c)
        s.tril[static_cast<std::size_t>((i * d + r) * d + c)] = z(rng) * 0.5 / std::sqrt(d);
      s.tril[static_cast<std::size_t>((i * d + r) * d + r)] = std::exp(0.3 * z(rng));
    }
  }
  return s;
}

gausskl::FullGaussians<double> view(const Side& s, std::int64_t n, std::int64_t d) {
  return {gausskl::contiguous<double, 2>(s.mean.data(), {n, d}),
          gausskl::contiguous<double, 3>(s.tril.data(), {n, d, d}), gausskl::FullParam::scale_tril};
}

// Share of entries FullOperands flags for exact re-scoring (q = p's diagonal excluded).
double rescored_share(const gausskl::Gaussians<double>& p, const gausskl::Gaussians<double>& q) {
  using namespace gausskl::cpu;
  PreparedBatch pb(layout_for(p, false), p.n()), qb(layout_for(q, false), q.n());
  prepare_range(p, 0, p.n(), pb, 2);
  prepare_range(q, 0, q.n(), qb, 2);
  const FullOperands plan(qb, q.n(), &pb, p.n(), 1e-13, 2);
  std::vector<double> out(static_cast<std::size_t>(p.n() * q.n()));
  plan.rows(0, p.n(), 0, q.n(), out.data(), q.n());
  std::int64_t flagged = 0;
  for (double x : out)
    flagged += std::isnan(x) ? 1 : 0;
  return static_cast<double>(flagged) / static_cast<double>(out.size());
}

void BM_pairwise_full(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const Side ps = full_side(n, d, 1), qs = full_side(n, d, 2);
  const gausskl::Gaussians<double> p(view(ps, n, d)), q(view(qs, n, d));
  std::vector<double> out(static_cast<std::size_t>(n * n));
  for (auto _ : state) {
    gausskl::pairwise_kl(p, q, std::span<double>(out), gausskl::Options{.threads = 2});
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["rescored"] = rescored_share(p, q);
}
BENCHMARK(BM_pairwise_full)
    ->ArgNames({"N", "D"})
    ->Args({512, 16})
    ->Args({512, 32})
    ->Args({512, 64})
    ->Args({2048, 16})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
