// The scalar reference microkernel: plain loops over the packed panels, the same blocking of the
// sum as the SIMD kernels (ukr.hpp) so that it meets the same error bound.
#include <algorithm>
#include <type_traits>

#include "cpu/diag_pairs/ukr.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {

template <class T>
void ukr_diag_ref(std::int64_t m, std::int64_t n, std::int64_t k, const T* p, const T* q,
                  bool accumulate, double* c, std::int64_t ldc, const DiagTile& tile) noexcept {
  const std::int64_t block = std::is_same_v<T, float> ? kDiagFloatBlock : k;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = accumulate ? c[i * ldc + j] : 0.0;
      for (std::int64_t h0 = 0; h0 < k; h0 += block) {
        T acc = 0;
        for (std::int64_t h = h0; h < std::min(k, h0 + block); ++h) {
          const T* qh = q + h * tile.nr * 2;
          const T s = p[i * kDiagKC + h] - qh[j];
          const T a = s * s + p[(tile.mr + i) * kDiagKC + h];
          acc += a * qh[tile.nr + j];
        }
        sum += static_cast<double>(acc);
      }
      c[i * ldc + j] = sum;
    }
  }
}

template void ukr_diag_ref(std::int64_t, std::int64_t, std::int64_t, const float*, const float*,
                           bool, double*, std::int64_t, const DiagTile&) noexcept;
template void ukr_diag_ref(std::int64_t, std::int64_t, std::int64_t, const double*, const double*,
                           bool, double*, std::int64_t, const DiagTile&) noexcept;

}  // namespace gausskl::cpu
