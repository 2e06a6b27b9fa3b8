// The users' own sizes from C++ (seeds 000-003): one call of each public operation as a training
// step makes it, threads as by default. bench/peers.py (bench/seeds.py) times the same calls from
// Python, on inputs of the same sizes (and, for the pairwise call, whose work depends on the
// data, of the same distributions), in turns with these; the difference is the cost of the
// Python layer (bench/README.md).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "bench_data.hpp"
#include "gausskl/gausskl.hpp"

namespace {

using gausskl::bench::random;

// Times call(): two untimed calls first (the faster sizes the samples: the first may pay for
// first-touch memory), then one call per iteration. Counter "min_s": the smallest mean time per
// call over samples of `batch` consecutive calls (~0.2 ms of calls, at most 1000), the
// estimator bench/seeds.py uses for the same calls from Python, so that the difference of the
// two is the Python layer's cost (a repetition's mean, what Google Benchmark reports, adds the
// host's noise).
template <class Call>
void timed(benchmark::State& state, const Call& call) {
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::duration t) { return std::chrono::duration<double>(t).count(); };
  double one = std::numeric_limits<double>::infinity();
  for (int warm = 0; warm < 2; ++warm) {
    const auto start = Clock::now();
    call();
    one = std::min(one, seconds(Clock::now() - start));
  }
  one = std::max(one, 1e-9);
  const std::int64_t batch =
      std::clamp<std::int64_t>(static_cast<std::int64_t>(2e-4 / one), 1, 1000);
  double best = std::numeric_limits<double>::infinity();
  std::int64_t done = 0;
  auto t0 = Clock::now();
  for (auto _ : state) {
    call();
    if (++done == batch) {
      const auto t1 = Clock::now();
      best = std::min(best, seconds(t1 - t0) / static_cast<double>(batch));
      done = 0;
      t0 = t1;
    }
  }
  if (best != std::numeric_limits<double>::infinity()) state.counters["min_s"] = best;
}

// Lower-triangular factors with a diagonal in [0.5, 1.5] and off-diagonals in [-0.3, 0.3].
std::vector<float> tril(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  std::vector<float> v = random<float>(n * d * d, -0.3, 0.3, seed);
  const std::vector<float> diag = random<float>(n * d, 0.5, 1.5, seed + 1);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t r = 0; r < d; ++r)
      for (std::int64_t c = r; c < d; ++c)
        v[(i * d + r) * d + c] = c == r ? diag[i * d + r] : 0;
  return v;
}

gausskl::DiagGaussians<float> diag(const std::vector<float>& mean, const std::vector<float>& scale,
                                   std::int64_t n, std::int64_t d, gausskl::DiagParam param) {
  return {gausskl::contiguous<float, 2>(mean.data(), {n, d}),
          gausskl::contiguous<float, 2>(scale.data(), {n, d}), param};
}

// Row-wise diagonal KL: std || std (seed 002's two VAEs; N = 5, D = 3 is the smallest call),
// logvar || logvar (seed 003's VAE with a learned prior).
void BM_kl_diag(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const bool logvar = state.range(2) != 0;
  const auto param = logvar ? gausskl::DiagParam::logvar : gausskl::DiagParam::stddev;
  const double lo = logvar ? -1 : 0.5, hi = logvar ? 1 : 2;
  const auto mp = random<float>(n * d, -2, 2, 1), sp = random<float>(n * d, lo, hi, 2);
  const auto mq = random<float>(n * d, -2, 2, 3), sq = random<float>(n * d, lo, hi, 4);
  const gausskl::Gaussians<float> p = diag(mp, sp, n, d, param);
  const gausskl::Gaussians<float> q = diag(mq, sq, n, d, param);
  std::vector<float> out(static_cast<std::size_t>(n));
  timed(state, [&] {
    gausskl::kl(p, q, std::span<float>(out));
    benchmark::DoNotOptimize(out.data());
  });
}

// The VAE prior term (seeds 002/003): KL(N(mu, exp(logvar)) || N(0, I)), B = 128, D = 32.
void BM_kl_standard_normal(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const auto mu = random<float>(n * d, -2, 2, 1), logvar = random<float>(n * d, -1, 1, 2);
  const gausskl::Gaussians<float> p = diag(mu, logvar, n, d, gausskl::DiagParam::logvar);
  std::vector<float> out(static_cast<std::size_t>(n));
  timed(state, [&] {
    gausskl::kl_standard_normal(p, std::span<float>(out));
    benchmark::DoNotOptimize(out.data());
  });
}

// The backward of the two VAE terms (seeds 002/003) with a loss sum(KL): the library's share of a
// training step, which bench/seeds.py adds to the cost of an empty autograd.Function for the
// floor of any implementation outside torch's own operations.
void BM_kl_standard_normal_backward(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const auto mu = random<float>(n * d, -2, 2, 1), logvar = random<float>(n * d, -1, 1, 2);
  const gausskl::Gaussians<float> p = diag(mu, logvar, n, d, gausskl::DiagParam::logvar);
  const std::vector<float> grad(static_cast<std::size_t>(n), 1.0f);
  std::vector<float> dmu(mu.size()), dlogvar(mu.size());
  timed(state, [&] {
    gausskl::kl_standard_normal_backward(p, grad, {dmu, dlogvar});
    benchmark::DoNotOptimize(dlogvar.data());
  });
}

void BM_kl_diag_backward(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const auto mp = random<float>(n * d, -2, 2, 1), sp = random<float>(n * d, -1, 1, 2);
  const auto mq = random<float>(n * d, -2, 2, 3), sq = random<float>(n * d, -1, 1, 4);
  const gausskl::Gaussians<float> p = diag(mp, sp, n, d, gausskl::DiagParam::logvar);
  const gausskl::Gaussians<float> q = diag(mq, sq, n, d, gausskl::DiagParam::logvar);
  const std::vector<float> grad(static_cast<std::size_t>(n), 1.0f);
  std::vector<float> g0(mp.size()), g1(mp.size()), g2(mp.size()), g3(mp.size());
  timed(state, [&] {
    gausskl::kl_backward(p, q, grad, {g0, g1}, {g2, g3});
    benchmark::DoNotOptimize(g3.data());
  });
}

// A kept training step's whole library share for a loss sum(KL) (what gausskl's forward and
// backward call): the values with each row's gradients, which the backward hands over as they are
// (a mean or a weighted loss adds one in-place scale_rows per array).
void BM_kl_standard_normal_with_gradients(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const auto mu = random<float>(n * d, -2, 2, 1), logvar = random<float>(n * d, -1, 1, 2);
  const gausskl::Gaussians<float> p = diag(mu, logvar, n, d, gausskl::DiagParam::logvar);
  std::vector<float> out(static_cast<std::size_t>(n)), dmu(mu.size()), dlogvar(mu.size());
  timed(state, [&] {
    gausskl::kl_standard_normal_with_gradients(p, std::span<float>(out), {dmu, dlogvar});
    benchmark::DoNotOptimize(dlogvar.data());
  });
}

void BM_kl_diag_with_gradients(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const auto mp = random<float>(n * d, -2, 2, 1), sp = random<float>(n * d, -1, 1, 2);
  const auto mq = random<float>(n * d, -2, 2, 3), sq = random<float>(n * d, -1, 1, 4);
  const gausskl::Gaussians<float> p = diag(mp, sp, n, d, gausskl::DiagParam::logvar);
  const gausskl::Gaussians<float> q = diag(mq, sq, n, d, gausskl::DiagParam::logvar);
  std::vector<float> out(static_cast<std::size_t>(n));
  std::vector<float> g[4];
  for (auto& unit : g)
    unit.resize(mp.size());
  timed(state, [&] {
    gausskl::kl_with_gradients(p, q, std::span<float>(out), {g[0], g[1]}, {g[2], g[3]});
    benchmark::DoNotOptimize(g[3].data());
  });
}

// The blog's full-covariance KL (seed 001), both sides scale_tril.
void BM_kl_full(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const auto mp = random<float>(n * d, -2, 2, 1), mq = random<float>(n * d, -2, 2, 2);
  const auto lp = tril(n, d, 3), lq = tril(n, d, 5);
  const auto view = [&](const std::vector<float>& m, const std::vector<float>& l) {
    return gausskl::Gaussians<float>(gausskl::FullGaussians<float>{
        gausskl::contiguous<float, 2>(m.data(), {n, d}),
        gausskl::contiguous<float, 3>(l.data(), {n, d, d}), gausskl::FullParam::scale_tril});
  };
  const auto p = view(mp, lp), q = view(mq, lq);
  std::vector<float> out(static_cast<std::size_t>(n));
  timed(state, [&] {
    gausskl::kl(p, q, std::span<float>(out));
    benchmark::DoNotOptimize(out.data());
  });
}

// Seed 000: the pairwise matrix of one batch, mu, std [B, H]; mu as torch.randn makes it (as
// bench/seeds.py does: how many entries the float kernel must recompute depends on the data).
void BM_pairwise_self(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const auto mu = gausskl::bench::normal<float>(n * d, 1), sd = random<float>(n * d, 0.5, 2, 2);
  const gausskl::Gaussians<float> p = diag(mu, sd, n, d, gausskl::DiagParam::stddev);
  std::vector<float> out(static_cast<std::size_t>(n * n));
  timed(state, [&] {
    gausskl::pairwise_kl(p, std::span<float>(out));
    benchmark::DoNotOptimize(out.data());
  });
}

}  // namespace

BENCHMARK(BM_kl_diag)
    ->ArgNames({"N", "D", "logvar"})
    ->Args({5, 3, 0})
    ->Args({8, 8, 0})
    ->Args({128, 32, 0})
    ->Args({128, 32, 1});
BENCHMARK(BM_kl_standard_normal)->ArgNames({"N", "D"})->Args({5, 3})->Args({128, 32});
BENCHMARK(BM_kl_standard_normal_backward)->ArgNames({"N", "D"})->Args({128, 32});
BENCHMARK(BM_kl_diag_backward)->ArgNames({"N", "D"})->Args({128, 32});
BENCHMARK(BM_kl_standard_normal_with_gradients)->ArgNames({"N", "D"})->Args({128, 32});
BENCHMARK(BM_kl_diag_with_gradients)->ArgNames({"N", "D"})->Args({128, 32});
BENCHMARK(BM_kl_full)->ArgNames({"N", "D"})->Args({5, 3})->Args({256, 16});
BENCHMARK(BM_pairwise_self)
    ->ArgNames({"N", "D"})
    ->Args({100, 256})
    ->Args({1024, 256})
    ->UseRealTime();

BENCHMARK_MAIN();
