// The row-wise diagonal kernel (src/cpu/rowwise_diag.hpp) alone, single-threaded, without the
// validation kl() does first: on every SIMD target this CPU supports, and the scalar reference
// (libm, the path kl() took before the kernel). N = 4096 rows; per_element is the time per
// (i, h). Cases: stddev || stddev (data as bench_rowwise's BM_kl_diag), logvar || N(0, I) (the
// VAE term), and near-duplicates (stddev q = p (1 + 1e-6 u): every |r| is small).
// Run with --benchmark_repetitions=5 and read the min rows (the machine is shared).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_data.hpp"
#include "cpu/rowwise_diag.hpp"
#include "hwy/targets.h"

namespace {

using gausskl::DiagParam;
using gausskl::bench::random;

constexpr std::int64_t kRows = 4096;

enum class Case { stddev, vae_logvar, near_duplicate };

template <class T>
void BM_rowwise_diag(benchmark::State& state, std::int64_t target, Case c) {
  const std::int64_t d = state.range(0);
  std::vector<T> mp = random<T>(kRows * d, -2, 2, 1), sp = random<T>(kRows * d, 0.5, 2, 2);
  std::vector<T> mq = random<T>(kRows * d, -2, 2, 3), sq = random<T>(kRows * d, 0.5, 2, 4);
  DiagParam param = DiagParam::stddev;
  if (c == Case::vae_logvar) {
    sp = random<T>(kRows * d, -3, 1, 2);
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

void register_all() {
  std::vector<std::int64_t> targets = hwy::SupportedAndGeneratedTargets();
  targets.push_back(0);  // the scalar reference
  for (const std::int64_t target : targets) {
    const std::string tname = target ? hwy::TargetName(target) : "ref";
    for (const auto& [c, cname] :
         {std::pair{Case::stddev, "stddev"}, std::pair{Case::vae_logvar, "vae_logvar"},
          std::pair{Case::near_duplicate, "near_duplicate"}}) {
      const std::string suffix = std::string("/") + cname + "/" + tname;
      for (auto* bm : {benchmark::RegisterBenchmark(("BM_rowwise_diag<float>" + suffix).c_str(),
                                                    BM_rowwise_diag<float>, target, c),
                       benchmark::RegisterBenchmark(("BM_rowwise_diag<double>" + suffix).c_str(),
                                                    BM_rowwise_diag<double>, target, c)}) {
        bm->ArgName("D")->Arg(256)->UseRealTime();
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
