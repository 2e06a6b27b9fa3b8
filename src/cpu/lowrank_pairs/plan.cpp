#include "cpu/lowrank_pairs/plan.hpp"

namespace gausskl::cpu {

template <class T>
Failure LowRankPairs::prepare(const Gaussians<T>& p, const Gaussians<T>* q, int workers,
                              Jitter& jitter, std::optional<LowRankPairs>& out) {
  std::optional<PreparedPairs> pairs;
  if (const Failure f = PreparedPairs::prepare(p, q, workers, jitter, pairs); f.side) return f;
  out.emplace(LowRankPairs(std::move(*pairs)));
  return {};
}

template Failure LowRankPairs::prepare<float>(const Gaussians<float>&, const Gaussians<float>*, int,
                                              Jitter&, std::optional<LowRankPairs>&);
template Failure LowRankPairs::prepare<double>(const Gaussians<double>&, const Gaussians<double>*,
                                               int, Jitter&, std::optional<LowRankPairs>&);

}  // namespace gausskl::cpu
