#include "cpu/divergence/jacobi.hpp"

#include <cmath>

namespace gausskl::cpu {

void polar_factor(double* c, double* y, double* u, std::int64_t d) noexcept {
  // Rotations of pairs of columns of c until they are orthogonal: c y = x s, y orthogonal, the
  // columns of x s orthogonal with norms s; then u = x y^T.
  for (std::int64_t i = 0; i < d * d; ++i)
    y[i] = 0;
  for (std::int64_t i = 0; i < d; ++i)
    y[i * d + i] = 1;
  for (int sweep = 0; sweep < 64; ++sweep) {
    bool rotated = false;
    for (std::int64_t p = 0; p < d; ++p) {
      for (std::int64_t q = p + 1; q < d; ++q) {
        double a = 0, b = 0, g = 0;
        for (std::int64_t k = 0; k < d; ++k) {
          const double cp = c[k * d + p], cq = c[k * d + q];
          a += cp * cp;
          b += cq * cq;
          g += cp * cq;
        }
        if (!(std::abs(g) > 0x1p-53 * std::sqrt(a) * std::sqrt(b))) continue;
        rotated = true;
        const double zeta = (b - a) / (2 * g);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::abs(zeta) + std::hypot(zeta, 1.0));
        const double cs = 1 / std::sqrt(t * t + 1), sn = t * cs;
        for (std::int64_t k = 0; k < d; ++k) {
          const double cp = c[k * d + p], cq = c[k * d + q];
          c[k * d + p] = cs * cp - sn * cq;
          c[k * d + q] = sn * cp + cs * cq;
          const double yp = y[k * d + p], yq = y[k * d + q];
          y[k * d + p] = cs * yp - sn * yq;
          y[k * d + q] = sn * yp + cs * yq;
        }
      }
    }
    if (!rotated) break;
  }
  // Normalize the columns of c to x (a zero column, c singular, contributes nothing: u is then
  // one of the maximizers restricted to the range), then u = x y^T.
  for (std::int64_t k = 0; k < d; ++k) {
    double s = 0;
    for (std::int64_t i = 0; i < d; ++i)
      s += c[i * d + k] * c[i * d + k];
    s = std::sqrt(s);
    const double inv = s > 0 ? 1 / s : 0.0;
    for (std::int64_t i = 0; i < d; ++i)
      c[i * d + k] *= inv;
  }
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j < d; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < d; ++k)
        s += c[i * d + k] * y[j * d + k];
      u[i * d + j] = s;
    }
  }
}

}  // namespace gausskl::cpu
