// The scalar reference GEMM microkernel: plain loops over the packed panels, in the order of the
// SIMD kernels (one fused multiply-add chain per entry).
#include <cmath>

#include "cpu/diag_pairs_backward/ukr.hpp"

namespace gausskl::cpu {

void ukr_gemm_ref(std::int64_t m, std::int64_t n, std::int64_t k, const double* a, const double* b,
                  bool accumulate, double* c, std::int64_t ldc, const GemmTile& tile) noexcept {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t l = 0; l < k; ++l)
        acc = std::fma(a[l * tile.mr + i], b[l * tile.nr + j], acc);
      c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc : acc;
    }
  }
}

}  // namespace gausskl::cpu
