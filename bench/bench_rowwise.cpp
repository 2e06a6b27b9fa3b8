// Row-wise KL, out[i] = KL(p_i || q_i), for each family, float and double, and its gradients
// (kl_backward, kl_standard_normal_backward: BM_backward_*, each next to the forward of the same
// shape, so that the ratio backward / forward reads off directly).
//
// BM_naive_diag is the floor to read the diagonal results against: the textbook formula in a
// plain loop over rows and dimensions, single-threaded, as users write it by hand. Compare
// BM_kl_diag at threads:1 with it at the same D (the `per_element` column, seconds per (i, h),
// makes the ratio direct); threads:0 shows all cores.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "bench_data.hpp"
#include "gausskl/gausskl.hpp"
#include "gausskl/gradients.hpp"

namespace {

using gausskl::bench::random;

constexpr std::int64_t kRows = 4096;

// n lower-triangular d x d factors: off-diagonal entries in [-0.3, 0.3], diagonal in [0.5, 1.5].
template <class T>
std::vector<T> random_tril(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  std::vector<T> v = random<T>(n * d * d, -0.3, 0.3, seed);
  const std::vector<T> diag = random<T>(n * d, 0.5, 1.5, seed + 1);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t r = 0; r < d; ++r) {
      for (std::int64_t c = r; c < d; ++c)
        v[(i * d + r) * d + c] = c == r ? diag[i * d + r] : 0;
    }
  }
  return v;
}

// One side of a benchmark: owned arrays, viewed as the family's Gaussians.
template <class T>
struct Side {
  std::vector<T> mean, scale, diag;
};

template <class T>
Side<T> diag_side(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  return {random<T>(n * d, -2, 2, seed), random<T>(n * d, 0.5, 2, seed + 1), {}};
}

template <class T>
gausskl::DiagGaussians<T> diag_view(const Side<T>& s, std::int64_t n, std::int64_t d) {
  return {gausskl::contiguous<T, 2>(s.mean.data(), {n, d}),
          gausskl::contiguous<T, 2>(s.scale.data(), {n, d}), gausskl::DiagParam::stddev};
}

template <class T>
void run(benchmark::State& state, const gausskl::Gaussians<T>& p, const gausskl::Gaussians<T>& q,
         int threads) {
  std::vector<T> out(static_cast<std::size_t>(p.n()));
  for (auto _ : state) {
    gausskl::kl(p, q, std::span<T>(out), gausskl::Options{.threads = threads});
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * p.n());
}

void count_elements(benchmark::State& state, std::int64_t elements) {
  state.counters["per_element"] = benchmark::Counter(
      static_cast<double>(elements),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

template <class T>
void BM_kl_diag(benchmark::State& state) {
  const std::int64_t d = state.range(0);
  const Side<T> p = diag_side<T>(kRows, d, 1), q = diag_side<T>(kRows, d, 3);
  run<T>(state, diag_view(p, kRows, d), diag_view(q, kRows, d), static_cast<int>(state.range(1)));
  count_elements(state, kRows * d);
}

// Row-wise divergence of another kind on BM_kl_diag's data (std parameterization, D from the
// argument): its per_element against BM_kl_diag's of the same run.
template <class T>
void run_kind(benchmark::State& state, gausskl::Divergence kind, double alpha) {
  const std::int64_t d = state.range(0);
  const Side<T> p = diag_side<T>(kRows, d, 1), q = diag_side<T>(kRows, d, 3);
  const gausskl::Gaussians<T> gp(diag_view(p, kRows, d)), gq(diag_view(q, kRows, d));
  std::vector<T> out(kRows);
  const gausskl::Options options{
      .threads = static_cast<int>(state.range(1)), .divergence = kind, .alpha = alpha};
  for (auto _ : state) {
    gausskl::divergence(gp, gq, std::span<T>(out), options);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  count_elements(state, kRows * d);
}

template <class T>
void BM_jeffreys_diag(benchmark::State& state) {
  run_kind<T>(state, gausskl::Divergence::jeffreys, 0);
}
template <class T>
void BM_bhattacharyya_diag(benchmark::State& state) {
  run_kind<T>(state, gausskl::Divergence::bhattacharyya, 0);
}
template <class T>
void BM_hellinger_diag(benchmark::State& state) {
  run_kind<T>(state, gausskl::Divergence::hellinger, 0);
}
template <class T>
void BM_renyi_diag(benchmark::State& state) {
  run_kind<T>(state, gausskl::Divergence::renyi, 0.5);
}
template <class T>
void BM_wasserstein2_diag(benchmark::State& state) {
  run_kind<T>(state, gausskl::Divergence::wasserstein2, 0);
}

// The VAE KL term: kl_standard_normal of N(mu, diag(exp(logvar))), the encoder's output.
template <class T>
void BM_kl_standard_normal_logvar(benchmark::State& state) {
  const std::int64_t d = state.range(0);
  const std::vector<T> mean = random<T>(kRows * d, -2, 2, 1),
                       logvar = random<T>(kRows * d, -3, 1, 2);
  const gausskl::DiagGaussians<T> p{gausskl::contiguous<T, 2>(mean.data(), {kRows, d}),
                                    gausskl::contiguous<T, 2>(logvar.data(), {kRows, d}),
                                    gausskl::DiagParam::logvar};
  std::vector<T> out(kRows);
  const auto threads = static_cast<int>(state.range(1));
  for (auto _ : state) {
    gausskl::kl_standard_normal(gausskl::Gaussians<T>(p), std::span<T>(out),
                                gausskl::Options{.threads = threads});
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  count_elements(state, kRows * d);
}

template <class T>
void BM_naive_diag(benchmark::State& state) {
  const std::int64_t d = state.range(0);
  const Side<T> p = diag_side<T>(kRows, d, 1), q = diag_side<T>(kRows, d, 3);
  std::vector<T> out(kRows);
  for (auto _ : state) {
    for (std::int64_t i = 0; i < kRows; ++i) {
      T sum = 0;
      for (std::int64_t h = 0; h < d; ++h) {
        const std::size_t k = i * d + h;
        const T vp = p.scale[k] * p.scale[k], vq = q.scale[k] * q.scale[k];
        const T diff = p.mean[k] - q.mean[k];
        sum += (vp + diff * diff) / vq - 1 - std::log(vp) + std::log(vq);
      }
      out[i] = sum / 2;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  count_elements(state, kRows * d);
}

template <class T>
void BM_kl_full(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const std::vector<T> mp = random<T>(n * d, -2, 2, 1), mq = random<T>(n * d, -2, 2, 2);
  const std::vector<T> lp = random_tril<T>(n, d, 3), lq = random_tril<T>(n, d, 5);
  const auto view = [&](const std::vector<T>& mean, const std::vector<T>& tril) {
    return gausskl::FullGaussians<T>{gausskl::contiguous<T, 2>(mean.data(), {n, d}),
                                     gausskl::contiguous<T, 3>(tril.data(), {n, d, d}),
                                     gausskl::FullParam::scale_tril};
  };
  run<T>(state, view(mp, lp), view(mq, lq), 1);
}

// The same factors as BM_kl_full packed row by row with log diagonals (seed 001's form).
template <class T>
void BM_kl_full_packed_log(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1), k = d * (d + 1) / 2;
  const std::vector<T> mp = random<T>(n * d, -2, 2, 1), mq = random<T>(n * d, -2, 2, 2);
  const auto pack = [&](const std::vector<T>& tril) {
    std::vector<T> out;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t r = 0; r < d; ++r)
        for (std::int64_t c = 0; c <= r; ++c) {
          const T x = tril[(i * d + r) * d + c];
          out.push_back(c == r ? std::log(x) : x);
        }
    return out;
  };
  const std::vector<T> lp = pack(random_tril<T>(n, d, 3)), lq = pack(random_tril<T>(n, d, 5));
  const auto view = [&](const std::vector<T>& mean, const std::vector<T>& packed) {
    return gausskl::FullGaussians<T>{gausskl::contiguous<T, 2>(mean.data(), {n, d}),
                                     {},
                                     gausskl::FullParam::packed_scale_tril,
                                     gausskl::contiguous<T, 2>(packed.data(), {n, k}),
                                     true};
  };
  run<T>(state, view(mp, lp), view(mq, lq), 1);
}

template <class T>
void BM_kl_lowrank(benchmark::State& state) {
  const std::int64_t d = state.range(0), r = state.range(1);
  const auto side = [&](std::uint64_t seed) {
    return Side<T>{random<T>(kRows * d, -2, 2, seed), random<T>(kRows * d * r, -0.5, 0.5, seed + 1),
                   random<T>(kRows * d, 0.5, 1.5, seed + 2)};
  };
  const Side<T> p = side(1), q = side(4);
  const auto view = [&](const Side<T>& s) {
    return gausskl::LowRankGaussians<T>{gausskl::contiguous<T, 2>(s.mean.data(), {kRows, d}),
                                        gausskl::contiguous<T, 3>(s.scale.data(), {kRows, d, r}),
                                        gausskl::contiguous<T, 2>(s.diag.data(), {kRows, d})};
  };
  run<T>(state, view(p), view(q), 1);
}

// The VAE KL term at a given batch: kl_standard_normal of N(mu, diag(exp(logvar))) (forward) and
// the gradients of sum_i grad_i KL_i with respect to mu and logvar (backward).
template <class T>
struct Vae {
  std::int64_t n, d;
  std::vector<T> mean, logvar;
  gausskl::DiagGaussians<T> view() const {
    return {gausskl::contiguous<T, 2>(mean.data(), {n, d}),
            gausskl::contiguous<T, 2>(logvar.data(), {n, d}), gausskl::DiagParam::logvar};
  }
};

template <class T>
Vae<T> vae(std::int64_t n, std::int64_t d) {
  return {n, d, random<T>(n * d, -2, 2, 1), random<T>(n * d, -3, 1, 2)};
}

template <class T>
void BM_vae_forward(benchmark::State& state) {
  const Vae<T> v = vae<T>(state.range(0), state.range(1));
  std::vector<T> out(static_cast<std::size_t>(v.n));
  const gausskl::Options options{.threads = static_cast<int>(state.range(2))};
  for (auto _ : state) {
    gausskl::kl_standard_normal(gausskl::Gaussians<T>(v.view()), std::span<T>(out), options);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  count_elements(state, v.n * v.d);
}

template <class T>
void BM_vae_backward(benchmark::State& state) {
  const Vae<T> v = vae<T>(state.range(0), state.range(1));
  const std::vector<T> grad = random<T>(v.n, 0.5, 1.5, 3);
  std::vector<T> d_mean(v.mean.size()), d_logvar(v.logvar.size());
  const gausskl::Gradients<T> dp{d_mean, d_logvar};
  const gausskl::Options options{.threads = static_cast<int>(state.range(2))};
  for (auto _ : state) {
    gausskl::kl_standard_normal_backward(gausskl::Gaussians<T>(v.view()), grad, dp, options);
    benchmark::DoNotOptimize(d_mean.data());
    benchmark::DoNotOptimize(d_logvar.data());
    benchmark::ClobberMemory();
  }
  count_elements(state, v.n * v.d);
}

// Diagonal p and q given by std, every gradient of both sides (kl_backward), against BM_kl_diag.
template <class T>
void BM_backward_diag(benchmark::State& state) {
  const std::int64_t d = state.range(0);
  const Side<T> p = diag_side<T>(kRows, d, 1), q = diag_side<T>(kRows, d, 3);
  const std::vector<T> grad = random<T>(kRows, 0.5, 1.5, 5);
  std::vector<T> g[4];
  for (auto& v : g)
    v.resize(static_cast<std::size_t>(kRows * d));
  const gausskl::Gradients<T> dp{g[0], g[1]}, dq{g[2], g[3]};
  const gausskl::Options options{.threads = static_cast<int>(state.range(1))};
  const gausskl::Gaussians<T> pg(diag_view(p, kRows, d)), qg(diag_view(q, kRows, d));
  for (auto _ : state) {
    gausskl::kl_backward(pg, qg, grad, dp, dq, options);
    benchmark::DoNotOptimize(g[0].data());
    benchmark::ClobberMemory();
  }
  count_elements(state, kRows * d);
}

// Full p and q given by scale_tril: every gradient of both sides (all:1) or p's only (all:0),
// one thread or all (threads:0), against BM_kl_full.
template <class T>
void BM_backward_full(benchmark::State& state) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const bool both = state.range(2) != 0;
  const std::vector<T> mp = random<T>(n * d, -2, 2, 1), mq = random<T>(n * d, -2, 2, 2);
  const std::vector<T> lp = random_tril<T>(n, d, 3), lq = random_tril<T>(n, d, 5);
  const auto view = [&](const std::vector<T>& mean, const std::vector<T>& tril) {
    return gausskl::FullGaussians<T>{gausskl::contiguous<T, 2>(mean.data(), {n, d}),
                                     gausskl::contiguous<T, 3>(tril.data(), {n, d, d}),
                                     gausskl::FullParam::scale_tril};
  };
  const std::vector<T> grad = random<T>(n, 0.5, 1.5, 7);
  std::vector<T> g_mp(mp.size()), g_lp(lp.size()), g_mq(mq.size()), g_lq(lq.size());
  const gausskl::Gradients<T> dp{g_mp, g_lp};
  const gausskl::Gradients<T> dq =
      both ? gausskl::Gradients<T>{g_mq, g_lq} : gausskl::Gradients<T>{};
  const gausskl::Options options{.threads = static_cast<int>(state.range(3))};
  const gausskl::Gaussians<T> pg(view(mp, lp)), qg(view(mq, lq));
  for (auto _ : state) {
    gausskl::kl_backward(pg, qg, grad, dp, dq, options);
    benchmark::DoNotOptimize(g_lp.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
}

// Real time, not CPU time: with threads:0 the work runs on threads the CPU timer does not see.
void naive_args(benchmark::internal::Benchmark* b) {
  b->ArgName("D")->Arg(64)->Arg(256)->Arg(1024)->UseRealTime();
}

void diag_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"D", "threads"})->UseRealTime();
  for (int d : {64, 256, 1024}) {
    for (int threads : {1, 0})
      b->Args({d, threads});
  }
}

void full_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "D"})->Args({5, 3})->Args({256, 16})->Args({kRows, 32})->UseRealTime();
}

void vae_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "D", "threads"})->UseRealTime();
  for (const auto& [n, d] : {std::pair{128, 32}, std::pair{4096, 256}}) {
    for (int threads : {1, 0})
      b->Args({n, d, threads});
  }
}

void backward_diag_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"D", "threads"})->UseRealTime();
  for (int d : {32, 256}) {
    for (int threads : {1, 0})
      b->Args({d, threads});
  }
}

void backward_full_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "D", "all", "threads"})->UseRealTime();
  for (const auto& [n, d] : {std::pair{5, 3}, std::pair{256, 16}, std::pair{int{kRows}, 32}}) {
    for (int all : {1, 0})
      for (int threads : {1, 0})
        b->Args({n, d, all, threads});
  }
}

void lowrank_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"D", "R"})->Args({256, 8})->UseRealTime();
}

}  // namespace

BENCHMARK_TEMPLATE(BM_naive_diag, float)->Apply(naive_args);
BENCHMARK_TEMPLATE(BM_naive_diag, double)->Apply(naive_args);
BENCHMARK_TEMPLATE(BM_kl_diag, float)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_kl_diag, double)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_jeffreys_diag, float)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_jeffreys_diag, double)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_bhattacharyya_diag, float)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_bhattacharyya_diag, double)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_hellinger_diag, float)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_hellinger_diag, double)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_renyi_diag, float)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_renyi_diag, double)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_wasserstein2_diag, float)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_wasserstein2_diag, double)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_kl_standard_normal_logvar, float)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_kl_standard_normal_logvar, double)->Apply(diag_args);
BENCHMARK_TEMPLATE(BM_kl_full, float)->Apply(full_args);
BENCHMARK_TEMPLATE(BM_kl_full, double)->Apply(full_args);
BENCHMARK_TEMPLATE(BM_kl_full_packed_log, float)->Apply(full_args);
BENCHMARK_TEMPLATE(BM_kl_full_packed_log, double)->Apply(full_args);
BENCHMARK_TEMPLATE(BM_vae_forward, float)->Apply(vae_args);
BENCHMARK_TEMPLATE(BM_vae_backward, float)->Apply(vae_args);
BENCHMARK_TEMPLATE(BM_backward_diag, float)->Apply(backward_diag_args);
BENCHMARK_TEMPLATE(BM_backward_diag, double)->Apply(backward_diag_args);
BENCHMARK_TEMPLATE(BM_backward_full, float)->Apply(backward_full_args);
BENCHMARK_TEMPLATE(BM_backward_full, double)->Apply(backward_full_args);
BENCHMARK_TEMPLATE(BM_kl_lowrank, float)->Apply(lowrank_args);
BENCHMARK_TEMPLATE(BM_kl_lowrank, double)->Apply(lowrank_args);
