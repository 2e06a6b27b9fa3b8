#include "cpu/pair/kl.hpp"

#include <algorithm>
#include <cmath>

#include "cpu/common/stable.hpp"
#include "cpu/pair/linalg.hpp"
#include "cpu/pair/tri_squares.hpp"

namespace gausskl::cpu {
namespace {

// Below this fraction of the magnitude of its terms, a low-rank pair's 2 KL has lost more than
// 6 digits to cancellation (a near-duplicate): the difference form computes it instead.
constexpr double kNearDuplicate = 1e-6;

double squared_norm(const double* x, std::int64_t n) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i)
    s += x[i] * x[i];
  return s;
}

// x <- Bq^{-1} x.
void solve_base(const Prepared& q, double* x) {
  if (q.tri) {
    solve_lower(q.base, q.d, q.d, x);
  } else {
    for (std::int64_t i = 0; i < q.d; ++i)
      x[i] *= q.inv[i];
  }
}

// t = Q^T y for q's basis Q (k doubles).
void project(const Prepared& q, const double* y, double* t) {
  const std::int64_t k = q.k;
  std::fill(t, t + k, 0.0);
  for (std::int64_t i = 0; i < q.d; ++i) {
    if (y[i] == 0) continue;
    for (std::int64_t c = 0; c < k; ++c)
      t[c] += q.basis[i * k + c] * y[i];
  }
}

// |y|_q^2 = |y - Q t|^2 + |L^{-1} t|^2 with t = Q^T y; y is overwritten.
double whitened_norm(const Prepared& q, double* y, double* t) {
  if (q.k == 0) return squared_norm(y, q.d);
  const std::int64_t k = q.k;
  project(q, y, t);
  for (std::int64_t i = 0; i < q.d; ++i) {
    double qt = 0;
    for (std::int64_t c = 0; c < k; ++c)
      qt += q.basis[i * k + c] * t[c];
    y[i] -= qt;
  }
  const double outside = squared_norm(y, q.d);
  solve_lower(q.chol_c, k, k, t);
  return outside + squared_norm(t, k);
}

// |L^{-1} Q^T m|^2 - |Q^T m|^2 <= 0: what q's low rank takes off |m|^2.
double low_rank_shrink(const Prepared& q, const double* m, double* t) {
  project(q, m, t);
  const double in_basis = squared_norm(t, q.k);
  solve_lower(q.chol_c, q.k, q.k, t);
  return squared_norm(t, q.k) - in_basis;
}

// Low-rank pairs only: identical parameters mean KL = 0 exactly, which the low-rank terms
// reproduce only to round-off.
bool identical_low_rank(const Prepared& p, const Prepared& q) {
  const std::int64_t d = p.d;
  return p.r == q.r && std::equal(p.mean, p.mean + d, q.mean) &&
         std::equal(p.base, p.base + d, q.base) &&
         std::equal(p.factor, p.factor + d * p.r, q.factor);
}

}  // namespace

double two_kl(const Prepared& p, const Prepared& q, double* scratch) {
  const std::int64_t d = p.d;
  if (p.r > 0 && q.r > 0 && identical_low_rank(p, q)) return 0;
  double* col = scratch;    // [d]
  double* a = scratch + d;  // [d]
  double* t = a + d;        // [q.k]
  double* m = t + q.k;      // tri_squares_scratch(d) with a triangular q

  double sum = 0;     // non-negative terms
  double shrink = 0;  // q's low-rank terms on M, <= 0
  for (std::int64_t k = 0; k < d; ++k)
    sum += expm1_minus_x(2 * (p.log_diag[k] - q.log_diag[k]));

  // Off-diagonal of M = Bq^{-1} Bp, column by column; with a low-rank q (diagonal base) each
  // column of M also feeds the shrink term.
  if (p.tri && q.tri) {
    sum += tri_squares(q.base, p.base, d, m);
  } else if (p.tri) {  // q diagonal, maybe low rank
    for (std::int64_t k = 0; k < d; ++k) {
      std::fill(col, col + k, 0.0);
      for (std::int64_t i = k; i < d; ++i)
        col[i] = p.base[i * d + k] * q.inv[i];
      sum += squared_norm(col + k + 1, d - k - 1);
      if (q.k > 0) shrink += low_rank_shrink(q, col, t);
    }
  } else if (q.tri) {  // p diagonal: column k of M is Bp_kk times column k of Lq^{-1}
    for (std::int64_t k = 0; k < d; ++k)
      sum += p.base[k] * p.base[k] * q.inv_tail[k];
  } else if (q.k > 0) {  // both diagonal: M is diagonal, only the shrink term needs it
    std::fill(col, col + d, 0.0);
    for (std::int64_t k = 0; k < d; ++k) {
      col[k] = p.base[k] * q.inv[k];
      shrink += low_rank_shrink(q, col, t);
      col[k] = 0;
    }
  }

  // X = Bq^{-1} Up, column by column.
  for (std::int64_t s = 0; s < p.r; ++s) {
    for (std::int64_t i = 0; i < d; ++i)
      col[i] = p.factor[i * p.r + s];
    solve_base(q, col);
    sum += whitened_norm(q, col, t);
  }

  // Mean term.
  for (std::int64_t i = 0; i < d; ++i)
    a[i] = p.mean[i] - q.mean[i];
  solve_base(q, a);
  sum += whitened_norm(q, a, t);

  const double two_kl = sum + shrink + (q.logdet_c - p.logdet_c);
  if (p.r > 0 && q.r > 0 && !p.tri && !q.tri &&
      !(two_kl >= kNearDuplicate * (sum - shrink + std::abs(q.logdet_c) + std::abs(p.logdet_c)))) {
    const double from_difference = two_kl_low_rank_difference(p, q, scratch);
    if (from_difference >= 0) return two_kl_of_sum(from_difference);
  }
  // KL >= 0 always; a negative value can only be round-off in the low-rank terms above
  // (diagonal and full pairs add only non-negative terms), bounded by the tests against the
  // long-double reference.
  return two_kl_of_sum(two_kl);
}

}  // namespace gausskl::cpu
