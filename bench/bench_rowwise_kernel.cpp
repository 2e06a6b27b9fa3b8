// The row-wise diagonal kernel (src/cpu/rowwise/ukr_diag.hpp) alone, single-threaded, without the
// validation kl() does first: on every SIMD target this CPU supports, and the scalar reference
// (libm, the path kl() took before the kernel). N = 4096 rows; per_element is the time per
// (i, h); D = 32 is the VAE's. Cases: stddev || stddev (data as bench_rowwise's BM_kl_diag),
// logvar || N(0, I) (the VAE term), logvar || logvar (a VAE with a learned prior), and
// near-duplicates (stddev q = p (1 + 1e-6 u): every |r| is small).
// Also the row-wise factor kernel (src/cpu/rowwise/ukr_full.hpp), D = 32, with N = 128 pairs (the
// factors stay in L2) and N = 4096 (33 MB of float factors, streamed from L3); per_pair is the
// time per row. Factors as scale_tril, and packed_scale_tril (the same factors) without and with
// log diagonals (`packed`, `packed_log`).
// Run with --benchmark_repetitions=5 and read the min rows (the machine is shared).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_data.hpp"
#include "cpu/rowwise/ukr_diag.hpp"
#include "cpu/rowwise/ukr_full.hpp"
#include "hwy/aligned_allocator.h"
#include "hwy/targets.h"

namespace {

using gausskl::DiagParam;
using gausskl::bench::random;

constexpr std::int64_t kRows = 4096;

enum class Case { stddev, vae_logvar, logvar, near_duplicate };

template <class T>
void BM_rowwise_diag(benchmark::State& state, std::int64_t target, Case c) {
  const std::int64_t d = state.range(0);
  std::vector<T> mp = random<T>(kRows * d, -2, 2, 1), sp = random<T>(kRows * d, 0.5, 2, 2);
  std::vector<T> mq = random<T>(kRows * d, -2, 2, 3), sq = random<T>(kRows * d, 0.5, 2, 4);
  DiagParam param = DiagParam::stddev;
  if (c == Case::vae_logvar || c == Case::logvar) {
    sp = random<T>(kRows * d, -3, 1, 2);
    sq = random<T>(kRows * d, -3, 1, 4);
    param = DiagParam::logvar;
  }
  if (c == Case::near_duplicate) {
    const std::vector<T> u = random<T>(kRows * d, -1e-6, 1e-6, 5);
    for (std::size_t k = 0; k < sq.size(); ++k)
      sq[k] = sp[k] * (1 + u[k]), mq[k] = mp[k];
  }
  const gausskl::DiagGaussians<T> p{gausskl::contiguous<T, 2>(mp.data(), {kRows, d}),
                                    gausskl::contiguous<T, 2>(sp.data(), {kRows, d}), param};
  const gausskl::DiagGaussians<T> q{gausskl::contiguous<T, 2>(mq.data(), {kRows, d}),
                                    gausskl::contiguous<T, 2>(sq.data(), {kRows, d}), param};
  const gausskl::DiagGaussians<T>* qp = c == Case::vae_logvar ? nullptr : &q;
  std::vector<double> out(kRows);
  if (target) hwy::SetSupportedTargetsForTest(target);
  for (auto _ : state) {
    if (target) {
      gausskl::cpu::rowwise_diag(p, qp, 0, kRows, out.data());
    } else {
      gausskl::cpu::rowwise_diag_ref(p, qp, 0, kRows, out.data());
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["per_element"] = benchmark::Counter(
      static_cast<double>(kRows * d),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetLabel(target ? gausskl::cpu::rowwise_diag_target() : "ref");
  hwy::SetSupportedTargetsForTest(0);
}

// Lower-triangular factors as bench_rowwise's BM_kl_full builds them: diagonal in [0.5, 2), below
// it uniform in [-0.3, 0.3).
template <class T>
std::vector<T> factors(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  const std::vector<T> u = random<T>(n * d * d, -0.3, 0.3, seed);
  const std::vector<T> diag = random<T>(n * d, 0.5, 2, seed + 1);
  std::vector<T> l(u.size(), T(0));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t r = 0; r < d; ++r)
      for (std::int64_t c = 0; c <= r; ++c)
        l[(i * d + r) * d + c] = c == r ? diag[i * d + r] : u[(i * d + r) * d + c];
  return l;
}

// The lower triangles of n factors row by row, the diagonal as log L_rr with log_diagonal.
template <class T>
std::vector<T> packed(const std::vector<T>& l, std::int64_t n, std::int64_t d, bool log_diagonal) {
  std::vector<T> out;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t r = 0; r < d; ++r)
      for (std::int64_t c = 0; c <= r; ++c) {
        const T x = l[(i * d + r) * d + c];
        out.push_back(c == r && log_diagonal ? std::log(x) : x);
      }
  return out;
}

enum class Form { scale_tril, packed, packed_log };

template <class T>
void BM_rowwise_full(benchmark::State& state, std::int64_t target, Form form) {
  const std::int64_t n = state.range(0), d = state.range(1);
  const std::vector<T> mp = random<T>(n * d, -2, 2, 1), mq = random<T>(n * d, -2, 2, 3);
  const std::vector<T> lp = factors<T>(n, d, 5), lq = factors<T>(n, d, 7);
  const bool log_diagonal = form == Form::packed_log;
  const std::vector<T> pp = packed(lp, n, d, log_diagonal), pq = packed(lq, n, d, log_diagonal);
  const auto view = [&](const std::vector<T>& mean, const std::vector<T>& tril,
                        const std::vector<T>& pack) -> gausskl::FullGaussians<T> {
    const auto m = gausskl::contiguous<T, 2>(mean.data(), {n, d});
    if (form == Form::scale_tril) {
      return {m, gausskl::contiguous<T, 3>(tril.data(), {n, d, d}), gausskl::FullParam::scale_tril};
    }
    return {m,
            {},
            gausskl::FullParam::packed_scale_tril,
            gausskl::contiguous<T, 2>(pack.data(), {n, d * (d + 1) / 2}),
            log_diagonal};
  };
  const gausskl::FullGaussians<T> p = view(mp, lp, pp), q = view(mq, lq, pq);
  const auto scratch =
      hwy::AllocateAligned<double>(static_cast<std::size_t>(gausskl::cpu::rowwise_full_scratch(d)));
  std::vector<double> out(static_cast<std::size_t>(n));
  hwy::SetSupportedTargetsForTest(target);
  for (auto _ : state) {
    gausskl::cpu::rowwise_full(p, q, 0, n, out.data(), scratch.get());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["per_pair"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate |
                                                     benchmark::Counter::kInvert);
  state.SetLabel(gausskl::cpu::rowwise_full_target());
  hwy::SetSupportedTargetsForTest(0);
}

void register_all() {
  std::vector<std::int64_t> targets = hwy::SupportedAndGeneratedTargets();
  targets.push_back(0);  // the scalar reference
  for (const std::int64_t target : targets) {
    const std::string tname = target ? hwy::TargetName(target) : "ref";
    for (const auto& [c, cname] :
         {std::pair{Case::stddev, "stddev"}, std::pair{Case::vae_logvar, "vae_logvar"},
          std::pair{Case::logvar, "logvar"}, std::pair{Case::near_duplicate, "near_duplicate"}}) {
      const std::string suffix = std::string("/") + cname + "/" + tname;
      for (auto* bm : {benchmark::RegisterBenchmark(("BM_rowwise_diag<float>" + suffix).c_str(),
                                                    BM_rowwise_diag<float>, target, c),
                       benchmark::RegisterBenchmark(("BM_rowwise_diag<double>" + suffix).c_str(),
                                                    BM_rowwise_diag<double>, target, c)}) {
        bm->ArgName("D")->Arg(32)->Arg(64)->Arg(256)->UseRealTime();
      }
    }
    if (!target) continue;
    for (const auto& [form, fname] :
         {std::pair{Form::scale_tril, ""}, std::pair{Form::packed, "packed/"},
          std::pair{Form::packed_log, "packed_log/"}}) {
      const std::string suffix = std::string("/") + fname + tname;
      for (auto* bm : {benchmark::RegisterBenchmark(("BM_rowwise_full<float>" + suffix).c_str(),
                                                    BM_rowwise_full<float>, target, form),
                       benchmark::RegisterBenchmark(("BM_rowwise_full<double>" + suffix).c_str(),
                                                    BM_rowwise_full<double>, target, form)}) {
        bm->ArgNames({"N", "D"})->Args({128, 32})->Args({4096, 32})->UseRealTime();
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
