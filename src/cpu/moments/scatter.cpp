// scatter_add by BLAS: the row-major lower triangle is the column-major upper one, and the
// row-major [rows, d] chunk is the column-major d x rows matrix A, so the scatter gains A A^T.
// In panels of kMomentPanel rows of the scatter: the rectangle left of the diagonal block is one
// dgemm, the diagonal block one dsyrk, which OpenBLAS runs well below its dgemm's rate.
#include "cpu/moments/scatter.hpp"

#include <algorithm>

#include "cpu/common/lapack.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {

void scatter_add(std::int64_t d, std::int64_t rows, const double* c, double* scatter, int workers) {
  lapack::set_threads(workers);
  for (std::int64_t i0 = 0; i0 < d; i0 += kMomentPanel) {
    const std::int64_t n = std::min(kMomentPanel, d - i0);
    double* panel = scatter + i0 * d;  // rows i0 .. i0 + n of the scatter
    // Entries (i, j), i in the panel, j < i0: column-major, the i0 x n block at panel.
    if (i0 > 0) lapack::dgemm('N', 'T', i0, n, rows, 1.0, c, d, c + i0, d, 1.0, panel, d);
    lapack::dsyrk('U', 'N', n, rows, 1.0, c + i0, d, 1.0, panel + i0, d);
  }
}

}  // namespace gausskl::cpu
