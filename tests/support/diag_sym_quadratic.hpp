// A reference loop nest of the q = p kernel (src/cpu/diag_pairs/ukr_sym.hpp) over all of Q, for
// the tests and the kernel benchmark: the library's driver (DiagPairs::sym_block) hands tiles to
// workers and finishes them at once, which leaves no Q to compare.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/diag_pairs/loops_sym.hpp"
#include "cpu/diag_pairs/ukr_sym.hpp"

namespace gausskl::test {

// All of Q (n x n, q[i * ldq + j]) from panels of n rows, with `both` on the tiles whose rows do
// not come after their columns and nothing else. With `one_sided`, every tile by `one` instead
// (bitwise the same Q).
inline void diag_sym_quadratic(const cpu::DiagSymKernel& kernel, const double* panels,
                               std::int64_t n, std::int64_t d, double* q, std::int64_t ldq,
                               bool one_sided) noexcept {
  const std::int64_t mr = kernel.tile.mr, nr = kernel.tile.nr;
  if (d <= 0) {
    for (std::int64_t i = 0; i < n; ++i)
      std::fill(q + i * ldq, q + i * ldq + n, 0.0);
    return;
  }
  double c[cpu::kDiagSymMaxTile], ct[cpu::kDiagSymMaxTile];
  for (std::int64_t i0 = 0; i0 < n; i0 += mr) {
    for (std::int64_t j0 = one_sided ? 0 : i0 / nr * nr; j0 < n; j0 += nr) {
      cpu::diag_sym_tile(kernel, panels, d, i0, j0, c, one_sided ? nullptr : ct);
      for (std::int64_t r = 0; r < mr && i0 + r < n; ++r) {
        for (std::int64_t l = 0; l < nr && j0 + l < n; ++l) {
          q[(i0 + r) * ldq + j0 + l] = c[r * nr + l];
          if (!one_sided) q[(j0 + l) * ldq + i0 + r] = ct[r * nr + l];
        }
      }
    }
  }
}

}  // namespace gausskl::test
