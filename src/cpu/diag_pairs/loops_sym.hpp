// The tiles of q = p all-pairs KL over panels of every row (pack_diag_sym): the symmetric kernel
// (diag_pairs/ukr_sym.hpp) over the whole depth, in blocks of kDiagKC h, so that its sums are those
// of diag_quadratic (diag_pairs/bound.hpp) and meet the same bound,
// diag_quadratic_error_bound<double>: each term takes four roundings (subtract, square, add v, and
// the multiply-add's), within the five that bound allows.
#pragma once

#include <cstdint>

#include "cpu/diag_pairs/ukr_sym.hpp"

namespace gausskl::cpu {

// Values in the panels of n rows of depth d with panels of nr rows; panel P starts at
// P * 3 * nr * d.
inline std::int64_t diag_sym_panels_size(std::int64_t n, std::int64_t d, std::int64_t nr) {
  return (n + nr - 1) / nr * nr * 3 * d;
}

// The tile of rows i0 .. i0 + mr - 1 (i0 a multiple of mr) and columns j0 .. j0 + nr - 1 (j0 a
// multiple of nr), padding rows included, over depth d >= 1:
//   c[r * nr + l] = Q(i0 + r, j0 + l), and when ct is not null ct[r * nr + l] = Q(j0 + l, i0 + r)
// (the kernel's `both`; else its `one`). Each entry's value depends only on its two rows.
void diag_sym_tile(const DiagSymKernel& kernel, const double* panels, std::int64_t d,
                   std::int64_t i0, std::int64_t j0, double* c, double* ct) noexcept;

}  // namespace gausskl::cpu
