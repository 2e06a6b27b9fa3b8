#include <algorithm>

#include "cpu/backward.hpp"

namespace gausskl::cpu {

// Placeholder until the gradient kernels land: zeros.
template <class T>
void pairwise_diag_backward(const DiagGaussians<T>&, const DiagGaussians<T>*, const T*,
                            const Gradients<T>& dp, const Gradients<T>& dq, int) {
  for (const Gradients<T>* g : {&dp, &dq}) {
    std::fill(g->mean.begin(), g->mean.end(), T(0));
    std::fill(g->scale.begin(), g->scale.end(), T(0));
  }
}

template void pairwise_diag_backward<float>(const DiagGaussians<float>&,
                                            const DiagGaussians<float>*, const float*,
                                            const Gradients<float>&, const Gradients<float>&, int);
template void pairwise_diag_backward<double>(const DiagGaussians<double>&,
                                             const DiagGaussians<double>*, const double*,
                                             const Gradients<double>&, const Gradients<double>&,
                                             int);

}  // namespace gausskl::cpu
