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

}  // namespace gausskl::cpu
