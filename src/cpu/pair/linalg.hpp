// Small dense routines on row-major double matrices (d x d, leading dimension d).
// Written out rather than called from LAPACK: they run on one distribution at a time,
// where call overhead and the [N] loop around them dominate, and they must never throw.
#pragma once

#include <cmath>
#include <cstdint>

namespace gausskl::cpu {

// In-place Cholesky of the lower triangle of a (a = L L^T); the upper triangle is not read
// and is set to 0. Returns -1, or the first pivot k whose value a_kk - sum_j L_kj^2 is not
// positive (stored in *pivot_value); a is then partly overwritten.
inline std::int64_t cholesky_lower(double* a, std::int64_t d, double* pivot_value) {
  for (std::int64_t k = 0; k < d; ++k) {
    double* row_k = a + k * d;
    double diag = row_k[k];
    for (std::int64_t j = 0; j < k; ++j)
      diag -= row_k[j] * row_k[j];
    if (!(diag > 0)) {
      *pivot_value = diag;
      return k;
    }
    const double l_kk = std::sqrt(diag);
    row_k[k] = l_kk;
    for (std::int64_t j = k + 1; j < d; ++j)
      row_k[j] = 0;
    for (std::int64_t i = k + 1; i < d; ++i) {
      double* row_i = a + i * d;
      double s = row_i[k];
      for (std::int64_t j = 0; j < k; ++j)
        s -= row_i[j] * row_k[j];
      row_i[k] = s / l_kk;
    }
  }
  return -1;
}

// x <- L^{-1} x (forward substitution), L lower triangular with leading dimension ld.
inline void solve_lower(const double* l, std::int64_t ld, std::int64_t d, double* x) {
  for (std::int64_t i = 0; i < d; ++i) {
    const double* row = l + i * ld;
    double s = x[i];
    for (std::int64_t j = 0; j < i; ++j)
      s -= row[j] * x[j];
    x[i] = s / row[i];
  }
}

// x <- L^{-T} x (back substitution with the transpose).
inline void solve_lower_transposed(const double* l, std::int64_t ld, std::int64_t d, double* x) {
  for (std::int64_t i = d - 1; i >= 0; --i) {
    double s = x[i];
    for (std::int64_t j = i + 1; j < d; ++j)
      s -= l[j * ld + i] * x[j];
    x[i] = s / l[i * ld + i];
  }
}

// inv <- L^{-1}, lower triangular (upper triangle set to 0).
inline void invert_lower(const double* l, std::int64_t d, double* inv) {
  for (std::int64_t i = 0; i < d * d; ++i)
    inv[i] = 0;
  for (std::int64_t k = 0; k < d; ++k) {
    // Column k of L^{-1}: solve L x = e_k; x_i = 0 for i < k.
    inv[k * d + k] = 1.0 / l[k * d + k];
    for (std::int64_t i = k + 1; i < d; ++i) {
      double s = 0;
      for (std::int64_t j = k; j < i; ++j)
        s -= l[i * d + j] * inv[j * d + k];
      inv[i * d + k] = s / l[i * d + i];
    }
  }
}

// The eigenvalues of the symmetric a [d*d] (both triangles stored) onto its diagonal by cyclic
// Jacobi rotations, until the off-diagonal is below 2^-60 of the whole (or 64 sweeps); with v
// [d*d], the eigenvectors too, as its columns (a = v diag v^T).
void jacobi_eigen(double* a, std::int64_t d, double* v = nullptr) noexcept;

}  // namespace gausskl::cpu

namespace gausskl::cpu {

// Householder QR of a (m x n, row-major), in place: R in the upper triangle (trapezoid when
// m < n), the reflectors' tails below it, their scales in tau[min(m, n)] (LAPACK's dgeqrf
// convention: H = I - tau v v^T with v_0 = 1). Backward stable, unlike forming a^T a.
inline void householder_qr(double* a, std::int64_t m, std::int64_t n, double* tau) {
  const std::int64_t k = m < n ? m : n;
  for (std::int64_t j = 0; j < k; ++j) {
    double norm2 = 0;
    for (std::int64_t i = j + 1; i < m; ++i)
      norm2 += a[i * n + j] * a[i * n + j];
    const double alpha = a[j * n + j];
    if (norm2 == 0) {
      tau[j] = 0;
      continue;
    }
    const double beta = -std::copysign(std::sqrt(alpha * alpha + norm2), alpha);
    tau[j] = (beta - alpha) / beta;
    const double scale = 1 / (alpha - beta);
    for (std::int64_t i = j + 1; i < m; ++i)
      a[i * n + j] *= scale;
    a[j * n + j] = beta;
    for (std::int64_t c = j + 1; c < n; ++c) {
      double s = a[j * n + c];
      for (std::int64_t i = j + 1; i < m; ++i)
        s += a[i * n + j] * a[i * n + c];
      s *= tau[j];
      a[j * n + c] -= s;
      for (std::int64_t i = j + 1; i < m; ++i)
        a[i * n + c] -= s * a[i * n + j];
    }
  }
}

// The first k = min(m, n) columns of Q (m x k, row-major) from householder_qr's result.
inline void householder_q(const double* a, std::int64_t m, std::int64_t n, const double* tau,
                          double* q) {
  const std::int64_t k = m < n ? m : n;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t c = 0; c < k; ++c)
      q[i * k + c] = i == c ? 1.0 : 0.0;
  }
  // Q = H_0 H_1 ... H_{k-1} [I; 0], applied from the last reflector; H_j touches rows >= j,
  // where columns < j of the partial product are still zero.
  for (std::int64_t j = k - 1; j >= 0; --j) {
    for (std::int64_t c = j; c < k; ++c) {
      double s = q[j * k + c];
      for (std::int64_t i = j + 1; i < m; ++i)
        s += a[i * n + j] * q[i * k + c];
      s *= tau[j];
      q[j * k + c] -= s;
      for (std::int64_t i = j + 1; i < m; ++i)
        q[i * k + c] -= s * a[i * n + j];
    }
  }
}

}  // namespace gausskl::cpu
