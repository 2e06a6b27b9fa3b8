#include "cpu/diag_pairs_backward/operands.hpp"

#include <cmath>
#include <type_traits>

namespace gausskl::cpu {

template <class T>
void DiagRows<T>::read(std::int64_t i, std::int64_t h0, std::int64_t count, double* mean,
                       double* var, double* lam, double* dvar) const noexcept {
  if (mean) {
    const T* src = g.mean.data + i * g.mean.strides[0] + h0 * g.mean.strides[1];
    const std::int64_t stride = g.mean.strides[1];
    if (stride == 1) {  // the usual layout: a loop that vectorizes
      for (std::int64_t h = 0; h < count; ++h)
        mean[h] = static_cast<double>(src[h]) - centre[h0 + h];
    } else {
      for (std::int64_t h = 0; h < count; ++h)
        mean[h] = static_cast<double>(src[h * stride]) - centre[h0 + h];
    }
  }
  if (!var && !lam && !dvar) return;
  const T* src = g.scale.data + i * g.scale.strides[0] + h0 * g.scale.strides[1];
  const std::int64_t stride = g.scale.strides[1];
  // One loop per parameterization, so that each vectorizes.
  const auto each = [&](auto&& values) {
    const auto run = [&](auto step) {
      for (std::int64_t h = 0; h < count; ++h) {
        const auto [v, l, dv] = values(static_cast<double>(src[h * step]));
        if (var) var[h] = v;
        if (lam) lam[h] = l;
        if (dvar) dvar[h] = dv;
      }
    };
    if (stride == 1) {
      run(std::integral_constant<std::int64_t, 1>());
    } else {
      run(stride);
    }
  };
  struct Values {
    double v, l, dv;
  };
  switch (g.param) {
    case DiagParam::stddev:  // v = x^2
      each([](double x) { return Values{x * x, 1.0 / (x * x), 2.0 * x}; });
      break;
    case DiagParam::var:
      each([](double x) { return Values{x, 1.0 / x, 1.0}; });
      break;
    case DiagParam::logvar:  // v = e^x
      each([](double x) {
        const double v = std::exp(x);
        return Values{v, 1.0 / v, v};
      });
      break;
    case DiagParam::precision:  // v = 1 / x, dv/dx = -v^2
      each([](double x) { return Values{1.0 / x, x, -1.0 / (x * x)}; });
      break;
  }
}

template <class T>
std::vector<double> mean_of_means(const DiagGaussians<T>& g) {
  const std::int64_t n = g.mean.shape[0], d = g.mean.shape[1];
  std::vector<double> centre(static_cast<std::size_t>(d), 0.0);
  if (n == 0) return centre;
  for (std::int64_t i = 0; i < n; ++i) {
    const T* row = g.mean.data + i * g.mean.strides[0];
    for (std::int64_t h = 0; h < d; ++h)
      centre[h] += static_cast<double>(row[h * g.mean.strides[1]]);
  }
  for (std::int64_t h = 0; h < d; ++h)
    centre[h] /= static_cast<double>(n);
  return centre;
}

template <class T>
void store_gradients(const Gradients<T>& out, std::int64_t d, std::int64_t i, std::int64_t h0,
                     std::int64_t count, const double* gmu, const double* gvar,
                     const double* dvar) noexcept {
  const std::int64_t at = i * d + h0;
  if (!out.mean.empty()) {
    T* dst = out.mean.data() + at;
    for (std::int64_t h = 0; h < count; ++h)
      dst[h] = static_cast<T>(gmu[h]);
  }
  if (!out.scale.empty()) {
    T* dst = out.scale.data() + at;
    for (std::int64_t h = 0; h < count; ++h)
      dst[h] = static_cast<T>(gvar[h] * dvar[h]);
  }
}

template struct DiagRows<float>;
template struct DiagRows<double>;
#define GAUSSKL_INSTANTIATE(T)                                                                 \
  template std::vector<double> mean_of_means(const DiagGaussians<T>&);                         \
  template void store_gradients(const Gradients<T>&, std::int64_t, std::int64_t, std::int64_t, \
                                std::int64_t, const double*, const double*,                    \
                                const double*) noexcept;
GAUSSKL_INSTANTIATE(float)
GAUSSKL_INSTANTIATE(double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
