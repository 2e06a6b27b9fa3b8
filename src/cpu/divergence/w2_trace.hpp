// wasserstein2 between full covariances by symmetric factorizations (OpenBLAS, in double):
// Sigma_1 = F F^T (Cholesky, or for a singular Sigma_1 F = U Lambda^1/2 from its eigenvectors),
// then the eigenvalues mu of the symmetric M = F^T Sigma_2 F, which is similar to
// Sigma_1 Sigma_2: W2^2 = |delta|^2 + tr Sigma_1 + tr Sigma_2 - 2 sum sqrt(mu). Eigenvalues zero
// up to rounding (below d eps max mu) contribute zero. Never throws.
#pragma once

#include <cstdint>

#include "cpu/divergence/dense_gaussian.hpp"
#include "cpu/pair/prepare.hpp"

namespace gausskl::cpu {

// A wasserstein2 pair's parts.
struct W2Terms {
  double mean = 0;        // |delta|^2
  double trace = 0;       // tr Sigma_1 + tr Sigma_2 - 2 sum sqrt(mu), >= 0
  double scale = 0;       // tr Sigma_1 + tr Sigma_2 (what the trace term cancelled against)
  std::int64_t zero = 0;  // eigenvalues of M treated as zero
  // Rough bounds on the trace term's rounding error: from the square roots of small
  // eigenvalues (ill-conditioning), and from the cancellation of the traces (near-duplicates).
  double root_error = 0, cancel_error = 0;
};

// Doubles of scratch w2_factor needs for order d.
inline std::int64_t w2_factor_scratch(std::int64_t d) {
  return 3 * d * d + 7 * d + 2;
}
// Doubles of scratch w2_trace needs.
inline std::int64_t w2_trace_scratch(std::int64_t d) {
  return 2 * d * d + 19 * d + 1;
}

// cov [d*d] (both triangles) into l [d*d]: the row-major lower Cholesky factor, or when cov is
// singular F (dense.hpp's DenseGaussian::singular; *singular set). A matrix whose smallest
// eigenvalue is below -d eps_input times the largest in magnitude: returns a failure with
// indefinite set (pivot the eigenvalue's rank from the smallest, 0).
FactorFailure w2_factor(const double* cov, std::int64_t d, double eps_input, double* l,
                        bool* singular, double* scratch, int threads);

// The parts of W2^2(p, q) (p's factor F, q's covariance); trace -1 if the eigenvalues did not
// converge.
W2Terms w2_trace(const DenseGaussian& p, const DenseGaussian& q, const double* delta,
                 double* scratch, int threads);

// The trace term again from the singular values of F_2^T F_1 (both sides' factors): twice the
// cost, but each within d eps of the largest, where small eigenvalues of M lose digits to their
// square roots (ill-conditioned pairs). -1 if the SVD did not converge.
double w2_trace_svd(const DenseGaussian& p, const DenseGaussian& q, double* scratch, int threads);

}  // namespace gausskl::cpu
