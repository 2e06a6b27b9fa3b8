#include "cpu/pair/linalg.hpp"

#include <cmath>

namespace gausskl::cpu {

void jacobi_eigen(double* a, std::int64_t d, double* v) noexcept {
  if (v) {
    for (std::int64_t i = 0; i < d * d; ++i)
      v[i] = 0;
    for (std::int64_t i = 0; i < d; ++i)
      v[i * d + i] = 1;
  }
  for (int sweep = 0; sweep < 64; ++sweep) {
    double off = 0, all = 0;
    for (std::int64_t i = 0; i < d; ++i) {
      for (std::int64_t j = 0; j < d; ++j) {
        const double x = a[i * d + j] * a[i * d + j];
        all += x;
        if (i != j) off += x;
      }
    }
    if (!(off > 0x1p-120 * all)) return;
    for (std::int64_t p = 0; p < d; ++p) {
      for (std::int64_t q = p + 1; q < d; ++q) {
        const double apq = a[p * d + q];
        if (apq == 0) continue;
        const double theta = (a[q * d + q] - a[p * d + p]) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::hypot(theta, 1.0));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (std::int64_t k = 0; k < d; ++k) {  // columns p, q
          const double akp = a[k * d + p], akq = a[k * d + q];
          a[k * d + p] = c * akp - s * akq;
          a[k * d + q] = s * akp + c * akq;
        }
        if (v) {
          for (std::int64_t k = 0; k < d; ++k) {
            const double vkp = v[k * d + p], vkq = v[k * d + q];
            v[k * d + p] = c * vkp - s * vkq;
            v[k * d + q] = s * vkp + c * vkq;
          }
        }
        for (std::int64_t k = 0; k < d; ++k) {  // rows p, q
          const double apk = a[p * d + k], aqk = a[q * d + k];
          a[p * d + k] = c * apk - s * aqk;
          a[q * d + k] = s * apk + c * aqk;
        }
      }
    }
  }
}

}  // namespace gausskl::cpu
