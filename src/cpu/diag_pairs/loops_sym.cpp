#include "cpu/diag_pairs/loops_sym.hpp"

#include <algorithm>

#include "cpu/tunables.hpp"

namespace gausskl::cpu {

void diag_sym_tile(const DiagSymKernel& kernel, const double* panels, std::int64_t d,
                   std::int64_t i0, std::int64_t j0, double* c, double* ct) noexcept {
  const std::int64_t nr = kernel.tile.nr;
  // Row i0 sits at offset i0 % nr of its panel; each h of a panel takes 3 nr values.
  const double* a = panels + i0 / nr * nr * 3 * d + i0 % nr;
  const double* b = panels + j0 * 3 * d;
  const DiagSymUkr ukr = ct ? kernel.both : kernel.one;
  for (std::int64_t pc = 0; pc < d; pc += kDiagKC) {
    ukr(std::min(kDiagKC, d - pc), a + pc * 3 * nr, b + pc * 3 * nr, pc > 0, c, ct, kernel.tile);
  }
}

void diag_sym_quadratic(const DiagSymKernel& kernel, const double* panels, std::int64_t n,
                        std::int64_t d, double* q, std::int64_t ldq, bool one_sided) noexcept {
  const std::int64_t mr = kernel.tile.mr, nr = kernel.tile.nr;
  if (d <= 0) {
    for (std::int64_t i = 0; i < n; ++i)
      std::fill(q + i * ldq, q + i * ldq + n, 0.0);
    return;
  }
  double c[kDiagSymMaxTile], ct[kDiagSymMaxTile];
  for (std::int64_t i0 = 0; i0 < n; i0 += mr) {
    for (std::int64_t j0 = one_sided ? 0 : i0 / nr * nr; j0 < n; j0 += nr) {
      diag_sym_tile(kernel, panels, d, i0, j0, c, one_sided ? nullptr : ct);
      for (std::int64_t r = 0; r < mr && i0 + r < n; ++r) {
        for (std::int64_t l = 0; l < nr && j0 + l < n; ++l) {
          q[(i0 + r) * ldq + j0 + l] = c[r * nr + l];
          if (!one_sided) q[(j0 + l) * ldq + i0 + r] = ct[r * nr + l];
        }
      }
    }
  }
}

}  // namespace gausskl::cpu
