// scatter_add by a blocked loop (no BLAS): the lower triangle in blocks of kMomentBlockRows x
// kMomentBlockCols that every row of the chunk updates before the next block, each row of a
// block an axpy along contiguous columns (which the compiler vectorizes).
#include <algorithm>

#include "cpu/common/parallel.hpp"
#include "cpu/moments/scatter.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {

void scatter_add(std::int64_t d, std::int64_t rows, const double* c, double* scatter, int workers) {
  const std::int64_t blocks = (d + kMomentBlockRows - 1) / kMomentBlockRows;
  // Block b of rows holds about b + 1 blocks' worth of entries: hand them out from the bottom
  // (the largest) in an interleaved order so that every worker's share is about equal.
  parallel_for(blocks, std::max(1, workers), [&](int, std::int64_t begin, std::int64_t end) {
    for (std::int64_t k = begin; k < end; ++k) {
      const std::int64_t b = (k % 2 == 0) ? blocks - 1 - k / 2 : k / 2;
      const std::int64_t i0 = b * kMomentBlockRows, i1 = std::min(d, i0 + kMomentBlockRows);
      for (std::int64_t j0 = 0; j0 < i1; j0 += kMomentBlockCols) {
        for (std::int64_t r = 0; r < rows; ++r) {
          const double* row = c + r * d;
          for (std::int64_t i = i0; i < i1; ++i) {
            const std::int64_t j1 = std::min({i + 1, j0 + kMomentBlockCols});
            const double ci = row[i];
            double* out = scatter + i * d;
            for (std::int64_t j = j0; j < j1; ++j)
              out[j] += ci * row[j];
          }
        }
      }
    }
  });
}

}  // namespace gausskl::cpu
