#include "cpu/divergence/jacobi.hpp"

#include <cmath>
#include <utility>

namespace gausskl::cpu {
namespace {

// Four chains of partial sums: independent adds the CPU can overlap, in one fixed order.
void column_products(const double* x, const double* z, std::int64_t d, double& xx, double& zz,
                     double& xz) noexcept {
  double a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0}, g[4] = {0, 0, 0, 0};
  std::int64_t k = 0;
  for (; k + 4 <= d; k += 4) {
    for (int l = 0; l < 4; ++l) {
      a[l] += x[k + l] * x[k + l];
      b[l] += z[k + l] * z[k + l];
      g[l] += x[k + l] * z[k + l];
    }
  }
  for (; k < d; ++k) {
    a[0] += x[k] * x[k];
    b[0] += z[k] * z[k];
    g[0] += x[k] * z[k];
  }
  xx = (a[0] + a[1]) + (a[2] + a[3]);
  zz = (b[0] + b[1]) + (b[2] + b[3]);
  xz = (g[0] + g[1]) + (g[2] + g[3]);
}

void rotate(double* x, double* z, std::int64_t d, double cs, double sn) noexcept {
  for (std::int64_t k = 0; k < d; ++k) {
    const double xk = x[k], zk = z[k];
    x[k] = cs * xk - sn * zk;
    z[k] = sn * xk + cs * zk;
  }
}

}  // namespace

void polar_factor(double* c, double* y, double* u, std::int64_t d) noexcept {
  // Rotations of pairs of columns of c until they are orthogonal: c y = x s, y orthogonal, the
  // columns of x s orthogonal with norms s; then u = x y^T. The columns are kept as rows (c
  // transposed in place, y^T): every loop below runs over contiguous memory (at d = 64 the
  // strided columns cost 3x).
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = i + 1; j < d; ++j)
      std::swap(c[i * d + j], c[j * d + i]);
  }
  for (std::int64_t i = 0; i < d * d; ++i)
    y[i] = 0;
  for (std::int64_t i = 0; i < d; ++i)
    y[i * d + i] = 1;
  for (int sweep = 0; sweep < 64; ++sweep) {
    bool rotated = false;
    for (std::int64_t p = 0; p < d; ++p) {
      for (std::int64_t q = p + 1; q < d; ++q) {
        double a = 0, b = 0, g = 0;
        column_products(c + p * d, c + q * d, d, a, b, g);
        if (!(std::abs(g) > 0x1p-53 * std::sqrt(a) * std::sqrt(b))) continue;
        rotated = true;
        const double zeta = (b - a) / (2 * g);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::abs(zeta) + std::hypot(zeta, 1.0));
        const double cs = 1 / std::sqrt(t * t + 1), sn = t * cs;
        rotate(c + p * d, c + q * d, d, cs, sn);
        rotate(y + p * d, y + q * d, d, cs, sn);
      }
    }
    if (!rotated) break;
  }
  // Normalize the columns of c to x (a zero column, c singular, contributes nothing: u is then
  // one of the maximizers restricted to the range), then u = x y^T = sum_k x_k y_k^T.
  for (std::int64_t k = 0; k < d; ++k) {
    double* x = c + k * d;
    double s = 0;
    for (std::int64_t i = 0; i < d; ++i)
      s += x[i] * x[i];
    s = std::sqrt(s);
    const double inv = s > 0 ? 1 / s : 0.0;
    for (std::int64_t i = 0; i < d; ++i)
      x[i] *= inv;
  }
  for (std::int64_t i = 0; i < d * d; ++i)
    u[i] = 0;
  for (std::int64_t k = 0; k < d; ++k) {
    const double* x = c + k * d;
    const double* yk = y + k * d;
    for (std::int64_t i = 0; i < d; ++i) {
      double* row = u + i * d;
      const double xi = x[i];
      for (std::int64_t j = 0; j < d; ++j)
        row[j] += xi * yk[j];
    }
  }
}

}  // namespace gausskl::cpu
