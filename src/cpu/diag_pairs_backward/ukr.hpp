// The microkernel of the pairwise backward's products (diag_pairs_backward/gemm.hpp): a double
// GEMM tile, one fixed signature shared by the SIMD kernels (diag_pairs_backward/ukr-inl.h, one
// per Highway target) and the scalar reference (diag_pairs_backward/ukr_ref.cpp), which is the
// scalar target's kernel and the tests' tile oracle.
#pragma once

#include <cstdint>

namespace gausskl::cpu {

// The packing shape a kernel reads: micro-panels of mr rows of A and nr columns of B.
struct GemmTile {
  std::int64_t mr;
  std::int64_t nr;
};

// The m x n (m <= mr, n <= nr) tile
//   c[i * ldc + j] (+)= sum_{l < k} a[l * mr + i] * b[l * nr + j]
// from a packed A micro-panel (k steps of mr values) and B micro-panel (k steps of nr values),
// k >= 1; stores when accumulate is false, adds to c when it is true. Each entry is one
// multiply-add chain over l from 0 (then one addition into c), whatever its place in the tile
// and whatever m and n: an entry's value depends only on its row of A and column of B. Padding
// rows and columns of the panels are read but never written to c.
using GemmUkr = void (*)(std::int64_t m, std::int64_t n, std::int64_t k, const double* a,
                         const double* b, bool accumulate, double* c, std::int64_t ldc,
                         const GemmTile& tile) noexcept;

struct GemmKernel {
  GemmTile tile;
  GemmUkr ukr;
};

// The scalar reference microkernel: any tile shape, read from `tile`; std::fma per step, the
// rounding of the SIMD targets with FMA.
void ukr_gemm_ref(std::int64_t m, std::int64_t n, std::int64_t k, const double* a, const double* b,
                  bool accumulate, double* c, std::int64_t ldc, const GemmTile& tile) noexcept;

// The kernel of the SIMD target chosen at run time (Highway dynamic dispatch,
// diag_pairs_backward/ukr.cpp), and that target's name.
GemmKernel gemm_kernel() noexcept;
const char* gemm_kernel_target() noexcept;

}  // namespace gausskl::cpu
