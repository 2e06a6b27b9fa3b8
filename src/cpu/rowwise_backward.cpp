#include <algorithm>

#include "cpu/backward.hpp"

namespace gausskl::cpu {

// Placeholder until the gradient kernels land: zeros.
template <class T>
void kl_rowwise_backward(const Gaussians<T>&, const Gaussians<T>*, std::int64_t, const T*,
                         const Gradients<T>& dp, const Gradients<T>& dq, int) {
  for (const Gradients<T>* g : {&dp, &dq}) {
    std::fill(g->mean.begin(), g->mean.end(), T(0));
    std::fill(g->scale.begin(), g->scale.end(), T(0));
  }
}

template void kl_rowwise_backward<float>(const Gaussians<float>&, const Gaussians<float>*,
                                         std::int64_t, const float*, const Gradients<float>&,
                                         const Gradients<float>&, int);
template void kl_rowwise_backward<double>(const Gaussians<double>&, const Gaussians<double>*,
                                          std::int64_t, const double*, const Gradients<double>&,
                                          const Gradients<double>&, int);

}  // namespace gausskl::cpu
