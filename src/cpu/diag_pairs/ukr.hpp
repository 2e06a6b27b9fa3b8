// The microkernel interface of diag_quadratic (diag_pairs/bound.hpp): one fixed signature shared
// by the SIMD kernels (ukr-inl.h, one per Highway target) and the scalar reference kernel
// (ukr_ref.cpp), which is both the scalar target's kernel and the tile oracle of the tests.
#pragma once

#include <cstdint>

namespace gausskl::cpu {

// The packing shape a kernel reads (diag_pairs/pack.hpp): micro-panels of mr rows of p, nr columns
// of q.
struct DiagTile {
  std::int64_t mr;
  std::int64_t nr;
};

// Computes the m x n (m <= mr, n <= nr) tile
//   c[i * ldc + j] (+)= sum_{h < k} ((p_mu(h, i) - q_nu(h, j))^2 + p_v(h, i)) q_lam(h, j)
// from a packed p micro-panel and q micro-panel of depth 1 <= k <= kDiagKC (diag_pairs/pack.hpp),
// storing when accumulate is false and adding to c when it is true. T = float sums blocks of at
// most kDiagFloatBlock h in float and adds each block into c in double; T = double sums all k in
// double. Padding rows and columns of the panels are read but never written to c. The order of
// operations for an entry does not depend on its position in the tile, nor on m and n.
template <class T>
using DiagUkr = void (*)(std::int64_t m, std::int64_t n, std::int64_t k, const T* p, const T* q,
                         bool accumulate, double* c, std::int64_t ldc,
                         const DiagTile& tile) noexcept;

template <class T>
struct DiagKernel {
  DiagTile tile;
  DiagUkr<T> ukr;
};

// The scalar reference microkernel: any tile shape, read from `tile`.
template <class T>
void ukr_diag_ref(std::int64_t m, std::int64_t n, std::int64_t k, const T* p, const T* q,
                  bool accumulate, double* c, std::int64_t ldc, const DiagTile& tile) noexcept;

// The kernel of the SIMD target chosen at run time (Highway dynamic dispatch, ukr.cpp),
// and that target's name.
template <class T>
DiagKernel<T> diag_kernel() noexcept;
const char* diag_kernel_target() noexcept;

}  // namespace gausskl::cpu
