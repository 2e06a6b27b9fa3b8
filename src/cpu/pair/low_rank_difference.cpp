#include "cpu/pair/low_rank_difference.hpp"

#include <cmath>

#include "cpu/pair/linalg.hpp"

namespace gausskl::cpu {
namespace {

// l - log(1 + l) >= 0, relative to its own size near 0 (where it is l^2 / 2): the series to
// l^11 for |l| < 1e-2 (the next term is below 2^-53 of l^2 / 2 there).
double minus_log1p_plus_x(double l) {
  if (std::abs(l) < 1e-2) {
    double sum = 0;
    for (int k = 11; k >= 2; --k)
      sum = sum * l + ((k % 2 == 0) ? 1.0 : -1.0) / k;
    return sum * l * l;
  }
  return l - std::log1p(l);
}

// The eigenvalues of the symmetric a [d*d] (both triangles stored) onto its diagonal, by
// cyclic Jacobi rotations until the off-diagonal is below 2^-60 of the whole.
void jacobi_eigenvalues(double* a, std::int64_t d) noexcept {
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
        for (std::int64_t k = 0; k < d; ++k) {  // rows p, q
          const double apk = a[p * d + k], aqk = a[q * d + k];
          a[p * d + k] = c * apk - s * aqk;
          a[q * d + k] = s * apk + c * aqk;
        }
      }
    }
  }
}

}  // namespace

double two_kl_low_rank_difference(const Prepared& p, const Prepared& q, double* scratch) noexcept {
  const std::int64_t d = p.d, rp = p.r, rq = q.r;
  double* l = scratch;     // [d*d] Sq, then its Cholesky factor
  double* s = l + d * d;   // [d*d] Delta, then S
  double* xt = s + d * d;  // [d*d] X^T, X = L^{-1} Delta
  double* y = xt + d * d;  // [d]
  const auto up = [&](std::int64_t i, std::int64_t c) {
    return c < rp ? p.factor[i * rp + c] : 0.0;
  };
  const auto uq = [&](std::int64_t i, std::int64_t c) {
    return c < rq ? q.factor[i * rq + c] : 0.0;
  };
  const std::int64_t r = rp > rq ? rp : rq;
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) {
      double sq = 0, delta = 0;
      for (std::int64_t c = 0; c < r; ++c) {
        const double ei = up(i, c) - uq(i, c), ej = up(j, c) - uq(j, c);
        const double ai = up(i, c) + uq(i, c), aj = up(j, c) + uq(j, c);
        sq += uq(i, c) * uq(j, c);
        delta += 0.5 * (ai * ej + ei * aj);
      }
      if (i == j) {  // the diagonals as given: B^2 from sqrt would err by 1e-16 of each
        sq += q.var[i];
        delta += p.var[i] - q.var[i];
      }
      l[i * d + j] = sq;
      s[i * d + j] = s[j * d + i] = delta;
    }
  }
  double pivot = 0;
  if (cholesky_lower(l, d, &pivot) >= 0) return -1;
  // X = L^{-1} Delta column by column, kept transposed; then S = L^{-1} X^T (= X L^{-T}).
  for (std::int64_t j = 0; j < d; ++j) {
    for (std::int64_t i = 0; i < d; ++i)
      y[i] = s[i * d + j];
    solve_lower(l, d, d, y);
    for (std::int64_t i = 0; i < d; ++i)
      xt[j * d + i] = y[i];
  }
  for (std::int64_t j = 0; j < d; ++j) {
    for (std::int64_t i = 0; i < d; ++i)
      y[i] = xt[i * d + j];
    solve_lower(l, d, d, y);
    for (std::int64_t i = 0; i < d; ++i)
      s[i * d + j] = y[i];
  }
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j < i; ++j)
      s[i * d + j] = s[j * d + i] = 0.5 * (s[i * d + j] + s[j * d + i]);
  }
  jacobi_eigenvalues(s, d);
  double sum = 0;
  for (std::int64_t k = 0; k < d; ++k)
    sum += minus_log1p_plus_x(s[k * d + k]);
  for (std::int64_t i = 0; i < d; ++i)
    y[i] = p.mean[i] - q.mean[i];
  solve_lower(l, d, d, y);
  for (std::int64_t i = 0; i < d; ++i)
    sum += y[i] * y[i];
  return sum;
}

}  // namespace gausskl::cpu
