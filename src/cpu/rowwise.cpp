// rowwise (backend.hpp): KL by its kernels (rowwise/), every other kind by divergence/.
#include "cpu/backend.hpp"

namespace gausskl::cpu {
namespace {

DivergenceConfig divergence_config(const RowwiseConfig& config) {
  return {config.kind, config.alpha, config.workers, config.blas_threads};
}

}  // namespace

template <class T, class U>
Failure rowwise(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n, U* out,
                const RowwiseConfig& config, Jitter& jitter) {
  if (config.kind == Divergence::kl) return kl_rowwise(p, q, n, out, config, jitter);
  return divergence_rowwise(p, *q, n, out, divergence_config(config), jitter);
}

template <class T>
std::int64_t rowwise_footprint(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n,
                               const RowwiseConfig& config) {
  if (config.kind == Divergence::kl) return kl_rowwise_footprint(p, q, n, config);
  return divergence_rowwise_footprint(p, *q, n, divergence_config(config));
}

#define GAUSSKL_INSTANTIATE(T, U)                                                            \
  template Failure rowwise<T, U>(const Gaussians<T>&, const Gaussians<T>*, std::int64_t, U*, \
                                 const RowwiseConfig&, Jitter&);
GAUSSKL_INSTANTIATE(float, float)
GAUSSKL_INSTANTIATE(float, double)
GAUSSKL_INSTANTIATE(double, double)
GAUSSKL_INSTANTIATE(double, float)
#undef GAUSSKL_INSTANTIATE
template std::int64_t rowwise_footprint<float>(const Gaussians<float>&, const Gaussians<float>*,
                                               std::int64_t, const RowwiseConfig&);
template std::int64_t rowwise_footprint<double>(const Gaussians<double>&, const Gaussians<double>*,
                                                std::int64_t, const RowwiseConfig&);

}  // namespace gausskl::cpu
