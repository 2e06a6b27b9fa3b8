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
  jacobi_eigen(s, d);
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
