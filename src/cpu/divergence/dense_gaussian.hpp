// One distribution brought to a dense factor and covariance in double (dense.hpp prepares it;
// dense.cpp and w2_trace.cpp compute with it).
#pragma once

#include <cstdint>

namespace gausskl::cpu {

struct DenseGaussian {
  std::int64_t d = 0;
  const double* mean = nullptr;  // [d]
  const double* l = nullptr;     // [d*d] lower triangular, row-major (see singular)
  const double* cov = nullptr;   // [d*d] L L^T (or the covariance as given), both triangles
  double logdet = 0;             // log det Sigma, from the inputs' own logs where there are any
  bool full = false;             // from FullGaussians
  // wasserstein2 only: Sigma is singular and l holds F = U Lambda^1/2 (eigenvectors as columns,
  // those of eigenvalues zero up to rounding zeroed), F F^T = Sigma, not triangular.
  bool singular = false;
};

}  // namespace gausskl::cpu
