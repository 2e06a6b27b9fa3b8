#include "cpu/divergence/w2_trace.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/common/lapack.hpp"

namespace gausskl::cpu {

FactorFailure w2_factor(const double* cov, std::int64_t d, double eps_input, double* l,
                        bool* singular, double* scratch, int threads) {
  lapack::set_threads(threads);
  *singular = false;
  // Row-major lower is column-major upper: LAPACK's 'U' on the same array.
  std::copy(cov, cov + d * d, l);
  if (lapack::dpotrf('U', d, l, d) == 0) {
    // A pivot zero up to rounding (a singular matrix whose last pivots came out as rounding
    // noise) would add the square roots of noise: such a matrix goes by its eigenvalues.
    double top = 0, low = HUGE_VAL;
    for (std::int64_t k = 0; k < d; ++k) {
      top = std::max(top, cov[k * d + k]);
      low = std::min(low, l[k * d + k] * l[k * d + k]);
    }
    // (The noise of a Schur complement grows with d: d^2 eps.)
    const double dd = static_cast<double>(d);
    if (low > dd * dd * 0x1p-52 * top) {
      for (std::int64_t i = 0; i < d; ++i)
        std::fill(l + i * d + i + 1, l + (i + 1) * d, 0.0);
      return {};
    }
  }
  // Not positive definite, or nearly: its eigenvalues decide between singular and indefinite.
  double* a = scratch;    // [d*d] eigenvectors, column-major (row k of the array: vector k)
  double* w = a + d * d;  // [d]
  double* work = w + d;
  lapack::Int lwork = 0, liwork = 0;
  lapack::dsyevd_workspace('V', d, &lwork, &liwork);
  std::vector<lapack::Int> iwork(static_cast<std::size_t>(liwork));
  std::copy(cov, cov + d * d, a);
  FactorFailure fail;
  if (lapack::dsyevd('V', 'U', d, a, d, w, work, lwork, iwork.data(), liwork) != 0) {
    fail.indefinite = true;  // no convergence: reported as the matrix's smallest diagonal
    fail.value = *std::min_element(w, w + d);
    return fail;
  }
  const double largest = std::max(std::abs(w[0]), std::abs(w[d - 1]));
  // Negative beyond the input's own rounding: indefinite. Zero: up to the rounding of this
  // computation (the inputs are exact as given).
  const double tol = static_cast<double>(d) * 0x1p-52 * largest;
  if (w[0] < -static_cast<double>(d) * std::max(eps_input, 0x1p-52) * largest) {
    fail.indefinite = true;
    fail.value = w[0];
    fail.largest = w[d - 1];
    return fail;
  }
  *singular = true;
  for (std::int64_t k = 0; k < d; ++k) {
    const double root = w[k] > tol ? std::sqrt(w[k]) : 0.0;
    for (std::int64_t i = 0; i < d; ++i)
      l[i * d + k] = a[k * d + i] * root;
  }
  return {};
}

W2Terms w2_trace(const DenseGaussian& p, const DenseGaussian& q, const double* delta,
                 double* scratch, int threads) {
  lapack::set_threads(threads);
  const std::int64_t d = p.d;
  double* m = scratch;      // [d*d]
  double* tmp = m + d * d;  // [d*d]
  double* w = tmp + d * d;  // [d]
  double* work = w + d;     // [2d + 1]
  W2Terms t;
  for (std::int64_t i = 0; i < d; ++i) {
    t.mean += delta[i] * delta[i];
    t.scale += p.cov[i * d + i] + q.cov[i * d + i];
  }
  // Column-major, the row-major arrays are transposes: G = F^T (upper triangular unless
  // singular), Sigma_2 itself. M = F^T Sigma_2 F = G Sigma_2 G^T.
  std::copy(q.cov, q.cov + d * d, m);
  if (p.singular) {
    lapack::dgemm('N', 'N', d, d, d, 1.0, p.l, d, m, d, 0.0, tmp, d);
    lapack::dgemm('N', 'T', d, d, d, 1.0, tmp, d, p.l, d, 0.0, m, d);
  } else {
    lapack::dtrmm('R', 'U', 'T', 'N', d, d, 1.0, p.l, d, m, d);
    lapack::dtrmm('L', 'U', 'N', 'N', d, d, 1.0, p.l, d, m, d);
  }
  lapack::Int lwork = 0, liwork = 0;
  lapack::dsyevd_workspace('N', d, &lwork, &liwork);
  lapack::Int iwork[1] = {0};
  if (lapack::dsyevd('N', 'L', d, m, d, w, work, lwork, iwork, liwork) != 0) {
    t.trace = -1;  // no convergence (never seen): the caller takes the polar form
    return t;
  }
  // Eigenvalues at most tol = d eps max mu are zero. Each is within about
  // err = sqrt(d) eps max mu (a backward-stable solver, errors adding like a random walk), so
  // sqrt(mu) within err / (2 sqrt(mu)), or sqrt(err) for those that small.
  const double top = std::max(w[d - 1], 0.0);
  const double tol = static_cast<double>(d) * 0x1p-52 * top;
  const double err = std::sqrt(static_cast<double>(d)) * 0x1p-52 * top;
  double roots = 0, error = 0;
  // Ascending: the small roots first.
  for (std::int64_t k = 0; k < d; ++k) {
    if (w[k] > tol) {
      const double root = std::sqrt(w[k]);
      roots += root;
      error += std::min(std::sqrt(err), err / (2 * root));
    } else {
      ++t.zero;
      error += std::sqrt(err);
    }
  }
  t.trace = std::max(t.scale - 2 * roots, 0.0);
  t.root_error = 2 * error;
  t.cancel_error = std::sqrt(static_cast<double>(d)) * 0x1p-52 * t.scale;
  return t;
}

double w2_trace_svd(const DenseGaussian& p, const DenseGaussian& q, double* scratch, int threads) {
  lapack::set_threads(threads);
  const std::int64_t d = p.d;
  double* c = scratch;            // [d*d]
  double* s = c + d * d;          // [d]
  double* work = s + d;           // [10d]
  double* iwork = work + 10 * d;  // [8d] integers, only LAPACK reads and writes them
  // Column-major G = F^T of each side: C^T = F_1^T F_2 = G_1 G_2^T, the singular values of
  // F_2^T F_1 (the square roots of the eigenvalues of F_1^T Sigma_2 F_1).
  if (p.singular || q.singular) {
    lapack::dgemm('N', 'T', d, d, d, 1.0, p.l, d, q.l, d, 0.0, c, d);
  } else {
    std::copy(p.l, p.l + d * d, c);
    lapack::dtrmm('R', 'U', 'T', 'N', d, d, 1.0, q.l, d, c, d);
  }
  if (lapack::dgesdd_values(d, c, s, work, 10 * d, reinterpret_cast<lapack::Int*>(iwork)) != 0) {
    return -1;
  }
  double scale = 0, roots = 0;
  for (std::int64_t i = 0; i < d; ++i)
    scale += p.cov[i * d + i] + q.cov[i * d + i];
  const double tol = static_cast<double>(d) * 0x1p-52 * s[0];
  for (std::int64_t k = d - 1; k >= 0; --k) {  // descending: the small ones first
    if (s[k] > tol) roots += s[k];
  }
  return std::max(scale - 2 * roots, 0.0);
}

}  // namespace gausskl::cpu
