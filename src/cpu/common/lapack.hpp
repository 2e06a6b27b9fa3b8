// The few BLAS and LAPACK routines the backend calls, from scipy-openblas64
// (cmake/openblas.cmake): 64-bit integers, column-major, symbols prefixed scipy_ and suffixed
// 64_. A row-major symmetric matrix is its own column-major transpose, so its lower triangle
// (row-major) is LAPACK's upper ('U').
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {
// BLAS (OpenBLAS's C kernels).
void scipy_dsyrk_64_(const char* uplo, const char* trans, const std::int64_t* n,
                     const std::int64_t* k, const double* alpha, const double* a,
                     const std::int64_t* lda, const double* beta, double* c,
                     const std::int64_t* ldc, std::size_t, std::size_t);
void scipy_dtrmm_64_(const char* side, const char* uplo, const char* transa, const char* diag,
                     const std::int64_t* m, const std::int64_t* n, const double* alpha,
                     const double* a, const std::int64_t* lda, double* b, const std::int64_t* ldb,
                     std::size_t, std::size_t, std::size_t, std::size_t);
void scipy_dgemm_64_(const char* transa, const char* transb, const std::int64_t* m,
                     const std::int64_t* n, const std::int64_t* k, const double* alpha,
                     const double* a, const std::int64_t* lda, const double* b,
                     const std::int64_t* ldb, const double* beta, double* c,
                     const std::int64_t* ldc, std::size_t, std::size_t);
// LAPACK (Fortran: the hidden string lengths last).
void scipy_dpotrf_64_(const char* uplo, const std::int64_t* n, double* a, const std::int64_t* lda,
                      std::int64_t* info, std::size_t);
void scipy_dsyevd_64_(const char* jobz, const char* uplo, const std::int64_t* n, double* a,
                      const std::int64_t* lda, double* w, double* work, const std::int64_t* lwork,
                      std::int64_t* iwork, const std::int64_t* liwork, std::int64_t* info,
                      std::size_t, std::size_t);
// OpenBLAS's thread count (one for the process: this build exports no per-thread setting).
void scipy_openblas_set_num_threads64_(int num_threads);
int scipy_openblas_get_num_threads64_(void);
}

namespace gausskl::cpu::lapack {

using Int = std::int64_t;

// C = alpha A A^T + beta C (trans 'N', A n x k) or alpha A^T A + beta C (trans 'T', A k x n),
// column-major, the uplo triangle of C.
inline void dsyrk(char uplo, char trans, Int n, Int k, double alpha, const double* a, Int lda,
                  double beta, double* c, Int ldc) noexcept {
  scipy_dsyrk_64_(&uplo, &trans, &n, &k, &alpha, a, &lda, &beta, c, &ldc, 1, 1);
}

// B = alpha op(A) B (side 'L') or alpha B op(A) (side 'R'), A triangular, column-major.
inline void dtrmm(char side, char uplo, char transa, char diag, Int m, Int n, double alpha,
                  const double* a, Int lda, double* b, Int ldb) noexcept {
  scipy_dtrmm_64_(&side, &uplo, &transa, &diag, &m, &n, &alpha, a, &lda, b, &ldb, 1, 1, 1, 1);
}

inline void dgemm(char transa, char transb, Int m, Int n, Int k, double alpha, const double* a,
                  Int lda, const double* b, Int ldb, double beta, double* c, Int ldc) noexcept {
  scipy_dgemm_64_(&transa, &transb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
}

// Cholesky in place (uplo triangle); returns LAPACK's info (0, or the order of the failing
// leading minor).
inline Int dpotrf(char uplo, Int n, double* a, Int lda) noexcept {
  Int info = 0;
  scipy_dpotrf_64_(&uplo, &n, a, &lda, &info, 1);
  return info;
}

// Doubles and integers of workspace dsyevd needs for order n (jobz 'N' or 'V').
inline void dsyevd_workspace(char jobz, Int n, Int* lwork, Int* liwork) noexcept {
  const bool vectors = jobz == 'V';
  *lwork = n <= 1 ? 1 : vectors ? 1 + 6 * n + 2 * n * n : 2 * n + 1;
  *liwork = n <= 1 || !vectors ? 1 : 3 + 5 * n;
}

// Eigenvalues (ascending) into w, and with jobz 'V' eigenvectors over a; returns info.
inline Int dsyevd(char jobz, char uplo, Int n, double* a, Int lda, double* w, double* work,
                  Int lwork, Int* iwork, Int liwork) noexcept {
  Int info = 0;
  scipy_dsyevd_64_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, &info, 1, 1);
  return info;
}

// OpenBLAS's threads for the calls that follow. One count for the process, so each call of the
// library sets the count it wants (its threads for one large pair, 1 inside its own workers); a
// count differing only between concurrent calls changes their speed, never their values.
inline void set_threads(int n) noexcept {
  if (scipy_openblas_get_num_threads64_() != n) scipy_openblas_set_num_threads64_(n);
}

}  // namespace gausskl::cpu::lapack
