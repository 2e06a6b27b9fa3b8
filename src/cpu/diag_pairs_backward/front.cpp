// All-pairs KL between diagonal batches, backward (cpu/backend.hpp): the operands in double,
// then one of two paths: a grad with one value at every pair (a sum or a mean of the matrix,
// given as that one value or found in the [N, M] grad) has closed forms
// (diag_pairs_backward/uniform.hpp); any other runs the GEMM forms (diag_pairs_backward/gemm.hpp).
#include <algorithm>

#include "cpu/backend.hpp"
#include "cpu/diag_pairs_backward/gemm.hpp"
#include "cpu/diag_pairs_backward/operands.hpp"
#include "cpu/diag_pairs_backward/uniform.hpp"

namespace gausskl::cpu {

template <class T>
void pairwise_diag_backward(const DiagGaussians<T>& p, const DiagGaussians<T>* q, const T* grad,
                            double sum_grad, const Gradients<T>& dp, const Gradients<T>& dq,
                            const PairsBackwardConfig& config) {
  const std::int64_t n = p.mean.shape[0], m = q ? q->mean.shape[0] : n;
  const bool want_p = !dp.mean.empty() || !dp.scale.empty();
  const bool want_q = q && (!dq.mean.empty() || !dq.scale.empty());
  if (!want_p && !want_q) return;
  if (n == 0 || m == 0) {  // no pairs: L does not depend on the other side
    for (const Gradients<T>* g : {&dp, &dq}) {
      std::fill(g->mean.begin(), g->mean.end(), T(0));
      std::fill(g->scale.begin(), g->scale.end(), T(0));
    }
    return;
  }
  double g = sum_grad;
  if (grad == nullptr || uniform_grad(grad, n, m, g)) {
    // Centred at p's mean: the closed forms' sums of squares need it (uniform.hpp).
    const std::vector<double> centre =
        backward_centre(p, static_cast<const DiagGaussians<T>*>(nullptr));
    const DiagRows<T> ps{p, centre.data()};
    if (!q)
      return pairwise_backward_uniform<T>(ps, nullptr, g, grad, dp, dq, config.uniform_workers);
    const DiagRows<T> qs{*q, centre.data()};
    return pairwise_backward_uniform(ps, &qs, g, grad, dp, dq, config.uniform_workers);
  }
  const std::vector<double> centre = backward_centre(p, q);
  const DiagRows<T> ps{p, centre.data()};
  const int workers = config.gemm_workers;
  if (!q) return pairwise_backward_gemm<T>(ps, nullptr, grad, dp, dq, workers);
  const DiagRows<T> qs{*q, centre.data()};
  pairwise_backward_gemm(ps, &qs, grad, dp, dq, workers);
}

template void pairwise_diag_backward<float>(const DiagGaussians<float>&,
                                            const DiagGaussians<float>*, const float*, double,
                                            const Gradients<float>&, const Gradients<float>&,
                                            const PairsBackwardConfig&);
template void pairwise_diag_backward<double>(const DiagGaussians<double>&,
                                             const DiagGaussians<double>*, const double*, double,
                                             const Gradients<double>&, const Gradients<double>&,
                                             const PairsBackwardConfig&);

}  // namespace gausskl::cpu
