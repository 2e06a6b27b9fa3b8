// scatter_add as one BLAS rank-k update (dsyrk). The row-major lower triangle is the column-major
// upper one, and the row-major [rows, d] chunk is the column-major d x rows matrix A, so the
// scatter gains A A^T: dsyrk('U', 'N').
#include "cpu/moments/scatter.hpp"

#include "cpu/common/lapack.hpp"

namespace gausskl::cpu {

void scatter_add(std::int64_t d, std::int64_t rows, const double* c, double* scatter, int workers) {
  lapack::set_threads(workers);
  lapack::dsyrk('U', 'N', d, rows, 1.0, c, d, 1.0, scatter, d);
}

}  // namespace gausskl::cpu
