// The microkernel of all-pairs KL with q = p (diag_pairs/loops_sym.hpp): a tile of rows a_r and
// columns b_l gives both Q(a_r, b_l) and Q(b_l, a_r) from one s = mu_b - mu_a per pair and h: one
// subtraction and four multiply-adds for two entries, against a subtraction and two multiply-adds
// per entry in diag_quadratic's kernel (ukr.hpp), with the same roundings as that kernel, so that
// q = p and q given as a copy of p give every entry the same bits.
//
// One fixed signature for the SIMD kernels (diag_pairs/ukr_sym-inl.h, one per Highway target) and
// the scalar reference kernel (diag_pairs/ukr_sym_ref.cpp), which is the scalar target's kernel and
// the tile oracle of the tests.
#pragma once

#include <cstdint>

namespace gausskl::cpu {

// Rows of the a side (mr, a divisor of nr) and of a panel (nr, the b side's lanes).
struct DiagSymTile {
  std::int64_t mr;
  std::int64_t nr;
};

// With panels as pack_diag_sym writes them (diag_pairs/pack.hpp: per h, nr means, nr variances and
// nr precisions), a pointing at row r0 of a panel (r0 + mr <= nr) and b at a panel, both at the
// same h0, for r < mr, l < nr and 1 <= k <= kDiagKC:
//   c[r * nr + l]  (+)= sum_{h < k} ((mu_b(h, l) - mu_a(h, r))^2 + v_a(h, r)) lam_b(h, l)
//   ct[r * nr + l] (+)= sum_{h < k} ((mu_b(h, l) - mu_a(h, r))^2 + v_b(h, l)) lam_a(h, r)
// that is Q(a_r, b_l) and Q(b_l, a_r), storing when accumulate is false and adding when true.
// Each term is s * s + v in one multiply-add, times lam and added in another (each two roundings
// on targets without FMA), summed from 0 in h order, the sum added to c, as diag_quadratic's
// kernel does: since fl(x - y) is -fl(y - x), an entry Q(i, j) gets bitwise the same value from c
// and from ct, from any tile that holds it, and from the one-sided kernel. The files of these
// kernels are compiled with -ffp-contract=off, so that the compiler fuses nothing else.
using DiagSymUkr = void (*)(std::int64_t k, const double* a, const double* b, bool accumulate,
                            double* c, double* ct, const DiagSymTile& tile) noexcept;

// The most values a tile of any target holds (mr * nr): the drivers' tiles live on the stack.
inline constexpr std::int64_t kDiagSymMaxTile = 256;

struct DiagSymKernel {
  DiagSymTile tile;
  DiagSymUkr both;  // c and ct
  DiagSymUkr one;   // c only (ct is not read or written): the same c at about 2/3 the cost
};

// The scalar reference kernels: any tile shape, read from `tile`.
void ukr_diag_sym_ref(std::int64_t k, const double* a, const double* b, bool accumulate, double* c,
                      double* ct, const DiagSymTile& tile) noexcept;
void ukr_diag_sym_ref_one(std::int64_t k, const double* a, const double* b, bool accumulate,
                          double* c, double* ct, const DiagSymTile& tile) noexcept;

// The kernels of the SIMD target chosen at run time (Highway dynamic dispatch,
// diag_pairs/ukr_sym.cpp).
DiagSymKernel diag_sym_kernel() noexcept;

}  // namespace gausskl::cpu
