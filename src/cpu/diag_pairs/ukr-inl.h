// The SIMD microkernel of diag_quadratic (signature in ukr.hpp), compiled once per Highway
// target by ukr.cpp. j is the lane dimension: each h loads nr_vectors vectors of nu and of
// lam from the packed q micro-panel and broadcasts mu and v of each of the MR rows (at fixed
// offsets r * kDiagKC from one pointer), so every (i, j, h) costs one subtraction and two
// multiply-adds.

// Per-target include guard: toggled so that foreach_target.h re-includes this file per target.
#if defined(GAUSSKL_CPU_UKR_DIAG_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GAUSSKL_CPU_UKR_DIAG_INL_H_
#undef GAUSSKL_CPU_UKR_DIAG_INL_H_
#else
#define GAUSSKL_CPU_UKR_DIAG_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cpu/diag_pairs/ukr.hpp"
#include "cpu/tunables.hpp"
#include "hwy/highway.h"

// The scalar target (one lane, no UpperHalf) uses the reference kernel instead.
#if HWY_TARGET != HWY_SCALAR
HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// c[r * ldc + lane] (+)= acc[r][lane], widened to double when T = float.
template <class D, std::size_t MR, std::size_t NRV>
HWY_INLINE void FlushDiagTile(const hn::Vec<D> (&acc)[MR][NRV], bool add, double* HWY_RESTRICT c,
                              std::int64_t ldc) {
  constexpr std::size_t N = hn::MaxLanes(D());
  const hn::Repartition<double, D> dd;
  constexpr std::size_t ND = hn::MaxLanes(hn::Repartition<double, D>());
  for (std::size_t r = 0; r < MR; ++r) {
    double* row = c + static_cast<std::int64_t>(r) * ldc;
    for (std::size_t x = 0; x < NRV; ++x) {
      if constexpr (std::is_same_v<hn::TFromD<D>, double>) {
        const auto sum = add ? hn::Add(hn::LoadU(dd, row + x * N), acc[r][x]) : acc[r][x];
        hn::StoreU(sum, dd, row + x * N);
      } else {
        const hn::Half<D> dh;
        auto lo = hn::PromoteTo(dd, hn::LowerHalf(dh, acc[r][x]));
        auto hi = hn::PromoteTo(dd, hn::UpperHalf(dh, acc[r][x]));
        if (add) {
          lo = hn::Add(hn::LoadU(dd, row + x * N), lo);
          hi = hn::Add(hn::LoadU(dd, row + x * N + ND), hi);
        }
        hn::StoreU(lo, dd, row + x * N);
        hn::StoreU(hi, dd, row + x * N + ND);
      }
    }
  }
}

// The MR x (NRV * lanes) tile. Edge tiles (m < MR or n < NR) run the same code on a local copy
// of their part of c, so their entries are bitwise those of a full tile.
template <class T, std::size_t MR, std::size_t NRV>
void UkrDiag(std::int64_t m, std::int64_t n, std::int64_t k, const T* HWY_RESTRICT p,
             const T* HWY_RESTRICT q, bool accumulate, double* HWY_RESTRICT c, std::int64_t ldc,
             const DiagTile& /*tile: MR and NR are compile-time here*/) noexcept {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  constexpr std::size_t N = hn::MaxLanes(hn::ScalableTag<T>());
  constexpr std::int64_t NR = static_cast<std::int64_t>(NRV * N);
  const bool full = m == static_cast<std::int64_t>(MR) && n == NR;
  HWY_ALIGN double edge[MR * NR];
  double* out = c;
  std::int64_t ldo = ldc;
  if (!full) {
    out = edge;
    ldo = NR;
    if (accumulate) {
      std::fill(edge, edge + MR * NR, 0.0);  // lanes past n are added to, then dropped
      for (std::int64_t i = 0; i < m; ++i)
        std::copy(c + i * ldc, c + i * ldc + n, edge + i * NR);
    }
  }
  // Float sums at most kDiagFloatBlock terms before widening (the error bound of
  // diag_quadratic_error_bound); double sums the whole depth.
  const std::int64_t block = std::is_same_v<T, float> ? kDiagFloatBlock : k;
  bool add = accumulate;
  for (std::int64_t h0 = 0; h0 < k; h0 += block) {
    const std::int64_t h1 = std::min(k, h0 + block);
    V acc[MR][NRV];
    for (std::size_t r = 0; r < MR; ++r) {
      for (std::size_t x = 0; x < NRV; ++x)
        acc[r][x] = hn::Zero(d);
    }
    const T* ph = p + h0;
    const T* qh = q + h0 * 2 * NR;
    for (std::int64_t h = h0; h < h1; ++h, ++ph, qh += 2 * NR) {
      V nu[NRV], lam[NRV];
      for (std::size_t x = 0; x < NRV; ++x) {
        nu[x] = hn::LoadU(d, qh + x * N);
        lam[x] = hn::LoadU(d, qh + NR + x * N);
      }
      for (std::size_t r = 0; r < MR; ++r) {
        const V mu = hn::Set(d, ph[r * kDiagKC]);
        const V var = hn::Set(d, ph[(MR + r) * kDiagKC]);
        for (std::size_t x = 0; x < NRV; ++x) {
          const V s = hn::Sub(nu[x], mu);
          acc[r][x] = hn::MulAdd(hn::MulAdd(s, s, var), lam[x], acc[r][x]);
        }
      }
    }
    FlushDiagTile<decltype(d), MR, NRV>(acc, add, out, ldo);
    add = true;
  }
  if (!full) {
    for (std::int64_t i = 0; i < m; ++i)
      std::copy(edge + i * NR, edge + i * NR + n, c + i * ldc);
  }
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();
#endif  // HWY_TARGET != HWY_SCALAR

#endif  // GAUSSKL_CPU_UKR_DIAG_INL_H_
