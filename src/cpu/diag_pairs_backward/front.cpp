// All-pairs KL between diagonal batches, backward (cpu/backend.hpp): the operands in double,
// then one of two paths: a grad with one value at every pair (a sum or a mean of the matrix,
// given as that one value or found in the [N, M] grad) has closed forms
// (diag_pairs_backward/uniform.hpp); any other runs the GEMM forms (diag_pairs_backward/gemm.hpp).
#include <algorithm>
#include <vector>

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
  const std::vector<double> p_centre = mean_of_means(p);
  const std::vector<double> q_centre = q ? mean_of_means(*q) : std::vector<double>();
  const DiagGaussians<T>& qg = q ? *q : p;
  const double* qc = q ? q_centre.data() : p_centre.data();
  const CentredSides<T> sides{DiagRows<T>{p, qc}, DiagRows<T>{qg, qc},
                              DiagRows<T>{p, p_centre.data()}, DiagRows<T>{qg, p_centre.data()},
                              q == nullptr};
  double g = sum_grad;
  if (grad == nullptr || uniform_grad(grad, n, m, g))
    return pairwise_backward_uniform(sides, g, grad, dp, dq, config.uniform_workers);
  pairwise_backward_gemm(sides, grad, dp, dq, config.gemm_workers);
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
