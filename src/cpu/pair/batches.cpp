#include "cpu/pair/batches.hpp"

#include <algorithm>

#include "cpu/common/saturating.hpp"
#include "cpu/pair/kl.hpp"
#include "cpu/pair/prepare.hpp"

namespace gausskl::cpu {
PreparedPairs::PreparedPairs(PreparedBatch q, std::optional<PreparedBatch> p, std::int64_t n,
                             std::int64_t m)
    : q_(std::move(q)),
      p_(std::move(p)),
      n_(n),
      m_(m),
      scratch_size_(pair_scratch_size(q_.layout())) {}

template <class T>
Failure PreparedPairs::prepare(const Gaussians<T>& p, const Gaussians<T>* q, int workers,
                               Jitter& jitter, std::optional<PreparedPairs>& out) {
  const Gaussians<T>& qq = q ? *q : p;
  PreparedBatch q_batch(q_layout_for(p, qq), qq.n());
  if (auto f = prepare_range(qq, 0, qq.n(), q_batch, workers, q ? jitter.of_q() : jitter.of_p());
      f.index >= 0) {
    return {q ? "q" : "p", f};
  }
  std::optional<PreparedBatch> p_batch;
  if (q) {
    p_batch.emplace(layout_for(p, false), p.n());
    if (auto f = prepare_range(p, 0, p.n(), *p_batch, workers, jitter.of_p()); f.index >= 0)
      return {"p", f};
  }
  out.emplace(PreparedPairs(std::move(q_batch), std::move(p_batch), p.n(), qq.n()));
  return {};
}

template <class T>
PairsBytes PreparedPairs::bytes(const Gaussians<T>& p, const Gaussians<T>* q, int workers) {
  const Gaussians<T>& qq = q ? *q : p;
  const Layout q_layout = q_layout_for(p, qq), p_layout = layout_for(p, false);
  PairsBytes b;
  b.kept =
      sat_mul(8, sat_add(sat_mul(q_layout.size, qq.n()), q ? sat_mul(p_layout.size, p.n()) : 0));
  // Preparing's scratch is freed before the blocks' is allocated: the larger of the two.
  b.pair_scratch = pair_scratch_size(q_layout);
  b.work = sat_mul(sat_mul(8, workers), std::max({prepare_scratch_size(q_layout),
                                                  prepare_scratch_size(p_layout), b.pair_scratch}));
  return b;
}

double PreparedPairs::exact(std::int64_t i, std::int64_t j, double* scratch) const {
  if (!p_ && i == j) return 0;  // KL(p_i || p_i) = 0 by definition, whatever round-off says
  const Prepared pi = p_ ? p_->get(i) : q_.get(i);
  return 0.5 * two_kl(pi, q_.get(j), scratch);
}

template Failure PreparedPairs::prepare<float>(const Gaussians<float>&, const Gaussians<float>*,
                                               int, Jitter&, std::optional<PreparedPairs>&);
template Failure PreparedPairs::prepare<double>(const Gaussians<double>&, const Gaussians<double>*,
                                                int, Jitter&, std::optional<PreparedPairs>&);
template PairsBytes PreparedPairs::bytes<float>(const Gaussians<float>&, const Gaussians<float>*,
                                                int);
template PairsBytes PreparedPairs::bytes<double>(const Gaussians<double>&, const Gaussians<double>*,
                                                 int);

}  // namespace gausskl::cpu
