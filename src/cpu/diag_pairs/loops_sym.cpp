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

}  // namespace gausskl::cpu
