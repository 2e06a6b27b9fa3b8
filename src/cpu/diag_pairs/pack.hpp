// Packing for diag_quadratic: rows of p and columns of q copied into the micro-panels the
// microkernels read (ukr.hpp).
#pragma once

#include <cstdint>

#include "cpu/tunables.hpp"

namespace gausskl::cpu {

// Rows of p, in micro-panels of mr rows with a fixed row stride kDiagKC, so that the kernel
// finds mu and v of row r at h as compile-time offsets from one pointer (a plain copy of rows:
// a layout by h would be a transpose, which cost 10% of the run time). For row i = i0 + r (i0 a
// multiple of mr) and h < k <= kDiagKC,
//   dst[i0 * 2 * kDiagKC + r * kDiagKC + h]        = mu[i * ld + h]
//   dst[i0 * 2 * kDiagKC + (mr + r) * kDiagKC + h] = v[i * ld + h]
// Rows m .. ceil(m / mr) * mr - 1 are zero for h < k; h >= k is not written.
template <class T>
void pack_diag_p(const T* mu, const T* v, std::int64_t ld, std::int64_t m, std::int64_t k,
                 std::int64_t mr, T* dst) noexcept;

// Columns of q, in micro-panels of nr columns: for column j = j0 + c (j0 a multiple of nr),
//   dst[j0 * 2 * k + h * 2 * nr + c]      = nu[j * ld + h]
//   dst[j0 * 2 * k + h * 2 * nr + nr + c] = lam[j * ld + h]
// so that nu and lam of one h are each nr contiguous lanes. Columns n .. ceil(n / nr) * nr - 1
// are zero. Writes ceil(n / nr) * nr * 2 * k values.
template <class T>
void pack_diag_q(const T* nu, const T* lam, std::int64_t ld, std::int64_t n, std::int64_t k,
                 std::int64_t nr, T* dst) noexcept;

// Rows of q = p for the symmetric kernel (diag_pairs/ukr_sym.hpp), one panel of nr rows: for row
// c < rows and h < d,
//   dst[h * 3 * nr + c]          = mu[c * ld + h]
//   dst[h * 3 * nr + nr + c]     = v[c * ld + h]
//   dst[h * 3 * nr + 2 * nr + c] = lam[c * ld + h]
// so that the three values of one h are each nr contiguous lanes, and the kernel finds those of
// row c at fixed offsets c, nr + c, 2 nr + c. Rows rows .. nr - 1 are zero. Writes 3 nr d values.
// A Highway loop per target (diag_pairs/pack_sym.cpp): blocks of nr rows by nr h transposed in
// registers when nr is the target's vector length (a plain copy was 9% of a 100 x 100 x 256 call).
void pack_diag_sym(const double* mu, const double* v, const double* lam, std::int64_t ld,
                   std::int64_t rows, std::int64_t d, std::int64_t nr, double* dst) noexcept;

}  // namespace gausskl::cpu
