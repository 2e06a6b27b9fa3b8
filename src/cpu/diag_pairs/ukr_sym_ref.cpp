// The scalar reference microkernels of q = p all-pairs (diag_pairs/ukr_sym.hpp): plain loops in the
// SIMD kernels' order of operations, the multiply-adds written as std::fma so that each is one
// rounding here too (and the file is compiled with -ffp-contract=off, so that nothing else is).
#include <cmath>

#include "cpu/diag_pairs/ukr_sym.hpp"

namespace gausskl::cpu {
namespace {

template <bool kBoth>
void sym_ref(std::int64_t k, const double* a, const double* b, bool accumulate, double* c,
             double* ct, const DiagSymTile& tile) noexcept {
  const std::int64_t mr = tile.mr, nr = tile.nr;
  for (std::int64_t r = 0; r < mr; ++r) {
    for (std::int64_t l = 0; l < nr; ++l) {
      double sum = 0, sum_t = 0;
      for (std::int64_t h = 0; h < k; ++h) {
        const double* ah = a + h * 3 * nr;
        const double* bh = b + h * 3 * nr;
        const double s = bh[l] - ah[r];
        sum = std::fma(std::fma(s, s, ah[nr + r]), bh[2 * nr + l], sum);
        if (kBoth) sum_t = std::fma(std::fma(s, s, bh[nr + l]), ah[2 * nr + r], sum_t);
      }
      c[r * nr + l] = accumulate ? c[r * nr + l] + sum : sum;
      if (kBoth) ct[r * nr + l] = accumulate ? ct[r * nr + l] + sum_t : sum_t;
    }
  }
}

}  // namespace

void ukr_diag_sym_ref(std::int64_t k, const double* a, const double* b, bool accumulate, double* c,
                      double* ct, const DiagSymTile& tile) noexcept {
  sym_ref<true>(k, a, b, accumulate, c, ct, tile);
}

void ukr_diag_sym_ref_one(std::int64_t k, const double* a, const double* b, bool accumulate,
                          double* c, double* ct, const DiagSymTile& tile) noexcept {
  sym_ref<false>(k, a, b, accumulate, c, ct, tile);
}

}  // namespace gausskl::cpu
