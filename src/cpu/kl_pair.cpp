#include "cpu/kl_pair.hpp"

#include <algorithm>

#include "cpu/linalg.hpp"
#include "cpu/stable.hpp"

namespace gausskl::cpu {
namespace {

double squared_norm(const double* x, std::int64_t n) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i)
    s += x[i] * x[i];
  return s;
}

// |Lc^{-1} V^T x|^2 for q's low-rank terms; g is r doubles of scratch.
double correction(const Prepared& q, const double* x, double* g) {
  const std::int64_t d = q.d, r = q.r;
  std::fill(g, g + r, 0.0);
  for (std::int64_t i = 0; i < d; ++i) {
    if (x[i] == 0) continue;
    for (std::int64_t c = 0; c < r; ++c)
      g[c] += q.v[i * r + c] * x[i];
  }
  solve_lower(q.chol_c, r, r, g);
  return squared_norm(g, r);
}

// Low-rank pairs only: identical parameters mean KL = 0 exactly, which the Woodbury terms
// would reproduce only to round-off (they cancel |V|_F^2-sized quantities).
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
  double* g = a + d;        // [q.r]
  double* z = g + q.r;      // [q.r]

  double sum = 0;   // the non-negative terms
  double corr = 0;  // the low-rank correction of q, subtracted
  for (std::int64_t k = 0; k < d; ++k)
    sum += expm1_minus_x(2 * (p.log_diag[k] - q.log_diag[k]));

  // Off-diagonal of M = Bq^{-1} Bp, column by column; with a low-rank q, each column of M
  // also feeds the correction.
  if (p.tri && q.tri) {
    for (std::int64_t k = 0; k < d; ++k) {
      // Column k of M solves Lq m = Lp[:, k]; its entries above k are 0.
      for (std::int64_t i = k; i < d; ++i)
        col[i] = p.base[i * d + k];
      solve_lower(q.base + k * d + k, d, d - k, col + k);
      sum += squared_norm(col + k + 1, d - k - 1);
    }
  } else if (p.tri) {  // q diagonal (maybe low rank)
    for (std::int64_t k = 0; k < d; ++k) {
      std::fill(col, col + k, 0.0);
      for (std::int64_t i = k; i < d; ++i)
        col[i] = p.base[i * d + k] * q.inv[i];
      sum += squared_norm(col + k + 1, d - k - 1);
      if (q.r > 0) corr += correction(q, col, g);
    }
  } else if (q.tri) {  // p diagonal: column k of M is Bp_kk times column k of Lq^{-1}
    for (std::int64_t k = 0; k < d; ++k)
      sum += p.base[k] * p.base[k] * q.inv_tail[k];
  } else if (q.r > 0) {  // both diagonal: M is diagonal, only the correction needs it
    for (std::int64_t k = 0; k < d; ++k) {
      const double m_kk = p.base[k] * q.inv[k];
      for (std::int64_t c = 0; c < q.r; ++c)
        g[c] = q.v[k * q.r + c] * m_kk;
      solve_lower(q.chol_c, q.r, q.r, g);
      corr += squared_norm(g, q.r);
    }
  }

  // X = Bq^{-1} Up, column by column.
  for (std::int64_t s = 0; s < p.r; ++s) {
    for (std::int64_t i = 0; i < d; ++i)
      col[i] = p.factor[i * p.r + s];
    if (q.tri) {
      solve_lower(q.base, d, d, col);
    } else {
      for (std::int64_t i = 0; i < d; ++i)
        col[i] *= q.inv[i];
    }
    sum += squared_norm(col, d);
    if (q.r > 0) corr += correction(q, col, g);
  }

  // Mean term.
  for (std::int64_t i = 0; i < d; ++i)
    a[i] = p.mean[i] - q.mean[i];
  if (q.tri) {
    solve_lower(q.base, d, d, a);
  } else {
    for (std::int64_t i = 0; i < d; ++i)
      a[i] *= q.inv[i];
  }
  if (q.r > 0) {
    const std::int64_t r = q.r;
    std::fill(z, z + r, 0.0);
    for (std::int64_t i = 0; i < d; ++i) {
      for (std::int64_t c = 0; c < r; ++c)
        z[c] += q.v[i * r + c] * a[i];
    }
    solve_lower(q.chol_c, r, r, z);
    solve_lower_transposed(q.chol_c, r, r, z);
    sum += squared_norm(z, r);
    for (std::int64_t i = 0; i < d; ++i) {
      double vz = 0;
      for (std::int64_t c = 0; c < r; ++c)
        vz += q.v[i * r + c] * z[c];
      a[i] -= vz;
    }
  }
  sum += squared_norm(a, d);

  const double two_kl = sum - corr + (q.logdet_c - p.logdet_c);
  // KL >= 0 always; a negative value can only be round-off in the low-rank terms above
  // (the diagonal and full terms are sums of non-negative numbers), bounded by the tests
  // against the long-double reference.
  return std::max(two_kl, 0.0);
}

}  // namespace gausskl::cpu
