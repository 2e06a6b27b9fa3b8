// All-pairs KL between diagonal batches, backward (cpu/backward.hpp): the operands in double,
// then one of two paths: a grad with one value at every pair (a sum or a mean of the matrix)
// has closed forms (pairwise_backward_uniform.hpp); any other runs the GEMM forms
// (pairwise_backward_gemm.hpp).
#include <algorithm>

#include "cpu/backward.hpp"
#include "cpu/pairwise_backward_gemm.hpp"
#include "cpu/pairwise_backward_operands.hpp"
#include "cpu/pairwise_backward_uniform.hpp"
#include "cpu/parallel.hpp"

namespace gausskl::cpu {

template <class T>
void pairwise_diag_backward(const DiagGaussians<T>& p, const DiagGaussians<T>* q, const T* grad,
                            const Gradients<T>& dp, const Gradients<T>& dq, int threads) {
  const std::int64_t n = p.mean.shape[0], m = q ? q->mean.shape[0] : n, d = p.mean.shape[1];
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
  const std::vector<double> centre = backward_centre(p, q);
  const DiagSide ps = diag_side(p, centre);
  DiagSide qs;
  if (q) qs = diag_side(*q, centre);
  const DiagSide* q_side = q ? &qs : nullptr;
  double g = 0;
  if (uniform_grad(grad, n, m, g)) {
    pairwise_backward_uniform(ps, q_side, g, grad, dp, dq);
    return;
  }
  pairwise_backward_gemm(ps, q_side, grad, dp, dq,
                         pairwise_backward_workers(n, m, d, resolve_threads(threads)));
}

template void pairwise_diag_backward<float>(const DiagGaussians<float>&,
                                            const DiagGaussians<float>*, const float*,
                                            const Gradients<float>&, const Gradients<float>&, int);
template void pairwise_diag_backward<double>(const DiagGaussians<double>&,
                                             const DiagGaussians<double>*, const double*,
                                             const Gradients<double>&, const Gradients<double>&,
                                             int);

}  // namespace gausskl::cpu
