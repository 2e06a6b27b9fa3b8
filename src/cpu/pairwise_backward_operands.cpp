#include "cpu/pairwise_backward_operands.hpp"

#include <cmath>

namespace gausskl::cpu {

template <class T>
std::vector<double> backward_centre(const DiagGaussians<T>& p, const DiagGaussians<T>* q) {
  const std::int64_t d = p.mean.shape[1];
  std::vector<double> centre(static_cast<std::size_t>(d), 0.0);
  const auto add_mean = [&](const View<T, 2>& mean, double weight) {
    const std::int64_t n = mean.shape[0];
    if (n == 0) return;
    std::vector<double> sum(static_cast<std::size_t>(d), 0.0);
    for (std::int64_t i = 0; i < n; ++i) {
      const T* row = mean.data + i * mean.strides[0];
      for (std::int64_t h = 0; h < d; ++h)
        sum[h] += static_cast<double>(row[h * mean.strides[1]]);
    }
    for (std::int64_t h = 0; h < d; ++h)
      centre[h] += weight * sum[h] / static_cast<double>(n);
  };
  add_mean(p.mean, q ? 0.5 : 1.0);
  if (q) add_mean(q->mean, 0.5);
  return centre;
}

template <class T>
DiagSide diag_side(const DiagGaussians<T>& g, const std::vector<double>& centre) {
  DiagSide s;
  s.n = g.mean.shape[0];
  s.d = g.mean.shape[1];
  const auto size = static_cast<std::size_t>(s.n * s.d);
  s.mean.resize(size);
  s.var.resize(size);
  s.lam.resize(size);
  s.dvar.resize(size);
  for (std::int64_t i = 0; i < s.n; ++i) {
    const T* mean = g.mean.data + i * g.mean.strides[0];
    const T* scale = g.scale.data + i * g.scale.strides[0];
    const std::int64_t ms = g.mean.strides[1], ss = g.scale.strides[1];
    double* mu = s.mean.data() + i * s.d;
    double* v = s.var.data() + i * s.d;
    double* lam = s.lam.data() + i * s.d;
    double* dv = s.dvar.data() + i * s.d;
    for (std::int64_t h = 0; h < s.d; ++h) {
      mu[h] = static_cast<double>(mean[h * ms]) - centre[h];
      const double x = static_cast<double>(scale[h * ss]);
      switch (g.param) {
        case DiagParam::stddev:  // v = x^2
          v[h] = x * x;
          lam[h] = 1.0 / v[h];
          dv[h] = 2.0 * x;
          break;
        case DiagParam::var:
          v[h] = x;
          lam[h] = 1.0 / x;
          dv[h] = 1.0;
          break;
        case DiagParam::logvar:  // v = e^x
          v[h] = std::exp(x);
          lam[h] = std::exp(-x);
          dv[h] = v[h];
          break;
        case DiagParam::precision:  // v = 1 / x, dv/dx = -v^2
          v[h] = 1.0 / x;
          lam[h] = x;
          dv[h] = -v[h] * v[h];
          break;
      }
    }
  }
  return s;
}

template <class T>
void store_gradients(const DiagSide& side, std::int64_t i, std::int64_t h0, std::int64_t count,
                     const double* gmu, const double* gvar, const Gradients<T>& out) noexcept {
  const std::int64_t at = i * side.d + h0;
  if (!out.mean.empty()) {
    T* dst = out.mean.data() + at;
    for (std::int64_t h = 0; h < count; ++h)
      dst[h] = static_cast<T>(gmu[h]);
  }
  if (!out.scale.empty()) {
    T* dst = out.scale.data() + at;
    const double* dv = side.dvar.data() + at;
    for (std::int64_t h = 0; h < count; ++h)
      dst[h] = static_cast<T>(gvar[h] * dv[h]);
  }
}

#define GAUSSKL_INSTANTIATE(T)                                                                    \
  template std::vector<double> backward_centre(const DiagGaussians<T>&, const DiagGaussians<T>*); \
  template DiagSide diag_side(const DiagGaussians<T>&, const std::vector<double>&);               \
  template void store_gradients(const DiagSide&, std::int64_t, std::int64_t, std::int64_t,        \
                                const double*, const double*, const Gradients<T>&) noexcept;
GAUSSKL_INSTANTIATE(float)
GAUSSKL_INSTANTIATE(double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
