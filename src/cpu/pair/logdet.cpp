// log det Sigma of each distribution, from its prepared form (pair/layout.hpp):
// Sigma = B B^T + U U^T = B (I + V V^T) B^T, so log det Sigma = 2 sum_k log B_kk + log|I + V^T V|,
// with log B_kk taken from the input parameter directly (exact for std, var, logvar, precision).
#include <vector>

#include "cpu/backend.hpp"

namespace gausskl::cpu {

template <class T>
FactorFailure logdets(const Gaussians<T>& g, double* out, const Factoring& factoring) {
  const Layout layout = layout_for(g, false);
  std::vector<double> slot(static_cast<std::size_t>(layout.size)),
      scratch(static_cast<std::size_t>(prepare_scratch_size(layout)));
  for (std::int64_t n = 0; n < g.n(); ++n) {
    const FactorFailure failed = prepare_one(g, n, layout, slot.data(), scratch.data(), factoring);
    if (failed.index >= 0) return failed;
    const Prepared p = layout.view(slot.data());
    double sum = 0;
    for (std::int64_t k = 0; k < layout.d; ++k)
      sum += p.log_diag[k];
    out[n] = 2 * sum + p.logdet_c;
  }
  return {};
}

template FactorFailure logdets<float>(const Gaussians<float>&, double*, const Factoring&);
template FactorFailure logdets<double>(const Gaussians<double>&, double*, const Factoring&);

}  // namespace gausskl::cpu
