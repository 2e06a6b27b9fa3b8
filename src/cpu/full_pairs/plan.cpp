#include "cpu/full_pairs/plan.hpp"

#include <algorithm>

#include "cpu/common/saturating.hpp"

namespace gausskl::cpu {

FullPairs::FullPairs(PreparedPairs pairs, double tolerance, int workers)
    : pairs_(std::move(pairs)),
      gemm_(pairs_.q(), pairs_.cols(), pairs_.p(), pairs_.rows(), tolerance, workers) {}

template <class T>
Failure FullPairs::prepare(const Gaussians<T>& p, const Gaussians<T>* q, double tolerance,
                           int workers, Jitter& jitter, std::optional<FullPairs>& out) {
  std::optional<PreparedPairs> pairs;
  if (const Failure f = PreparedPairs::prepare(p, q, workers, jitter, pairs); f.side) return f;
  out.emplace(FullPairs(std::move(*pairs), tolerance, workers));
  return {};
}

template <class T>
PairsBytes FullPairs::bytes(const Gaussians<T>& p, const Gaussians<T>* q, int workers) {
  PairsBytes b = PreparedPairs::bytes(p, q, workers);
  // The GEMM operands are kept; building them needs a centre and long-double scratch after
  // preparing's scratch is freed.
  const std::int64_t n = p.n(), m = q ? q->n() : n;
  b.kept = sat_add(b.kept, FullOperands::footprint(n, m, p.d()));
  b.work = std::max(b.work, FullOperands::build_scratch(p.d(), workers));
  return b;
}

void FullPairs::block(std::int64_t lo, std::int64_t hi, double* out, int workers) const {
  // The GEMM leaves NaN where an entry must be re-scored exactly.
  pairs_.block(lo, hi, out, workers,
               [this](std::int64_t i0, std::int64_t i1, std::int64_t j0, std::int64_t j1,
                      double* part, std::int64_t ldo) { gemm_.rows(i0, i1, j0, j1, part, ldo); });
}

template Failure FullPairs::prepare<float>(const Gaussians<float>&, const Gaussians<float>*, double,
                                           int, Jitter&, std::optional<FullPairs>&);
template Failure FullPairs::prepare<double>(const Gaussians<double>&, const Gaussians<double>*,
                                            double, int, Jitter&, std::optional<FullPairs>&);
template PairsBytes FullPairs::bytes<float>(const Gaussians<float>&, const Gaussians<float>*, int);
template PairsBytes FullPairs::bytes<double>(const Gaussians<double>&, const Gaussians<double>*,
                                             int);

}  // namespace gausskl::cpu
