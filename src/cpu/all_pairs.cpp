#include "cpu/all_pairs.hpp"

#include "cpu/kl_pair.hpp"
#include "cpu/prepare.hpp"

namespace gausskl::cpu {

AllPairs::AllPairs(PreparedBatch q, std::optional<PreparedBatch> p, std::int64_t n, std::int64_t m)
    : q_(std::move(q)),
      p_(std::move(p)),
      n_(n),
      m_(m),
      scratch_size_(pair_scratch_size(q_.layout())) {}

template <class T>
Failure AllPairs::prepare(const Gaussians<T>& p, const Gaussians<T>* q, int threads,
                          std::optional<AllPairs>& out) {
  const bool p_tri = std::holds_alternative<FullGaussians<T>>(p.variant());
  const Gaussians<T>& qq = q ? *q : p;
  PreparedBatch q_batch(layout_for(qq, !p_tri), qq.n());
  if (auto f = prepare_range(qq, 0, qq.n(), q_batch, threads); f.index >= 0) {
    return {q ? "q" : "p", f};
  }
  std::optional<PreparedBatch> p_batch;
  if (q) {
    p_batch.emplace(layout_for(p, false), p.n());
    if (auto f = prepare_range(p, 0, p.n(), *p_batch, threads); f.index >= 0) return {"p", f};
  }
  out.emplace(AllPairs(std::move(q_batch), std::move(p_batch), p.n(), qq.n()));
  return {};
}

void AllPairs::row(std::int64_t i, double* out, double* scratch) const {
  const Prepared pi = p_ ? p_->get(i) : q_.get(i);
  for (std::int64_t j = 0; j < m_; ++j)
    out[j] = 0.5 * two_kl(pi, q_.get(j), scratch);
  if (!p_) out[i] = 0;  // KL(p_i || p_i) = 0 by definition, whatever round-off says
}

template Failure AllPairs::prepare<float>(const Gaussians<float>&, const Gaussians<float>*, int,
                                          std::optional<AllPairs>&);
template Failure AllPairs::prepare<double>(const Gaussians<double>&, const Gaussians<double>*, int,
                                           std::optional<AllPairs>&);

}  // namespace gausskl::cpu
