// The SIMD GEMM microkernel of the pairwise backward (signature in diag_pairs_backward/ukr.hpp),
// compiled once per Highway target by diag_pairs_backward/ukr.cpp. Columns are the lane
// dimension: each step l loads NRV vectors of B and broadcasts the MR values of A, so a step is
// MR * NRV fused multiply-adds against NRV loads and MR broadcasts.

// Per-target include guard: toggled so that foreach_target.h re-includes this file per target.
#if defined(GAUSSKL_CPU_PAIRWISE_BACKWARD_UKR_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GAUSSKL_CPU_PAIRWISE_BACKWARD_UKR_INL_H_
#undef GAUSSKL_CPU_PAIRWISE_BACKWARD_UKR_INL_H_
#else
#define GAUSSKL_CPU_PAIRWISE_BACKWARD_UKR_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cpu/diag_pairs_backward/ukr.hpp"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The MR x (NRV * lanes) tile. Edge tiles (m < MR or n < NR) run the same code on a local copy
// of their part of c, so their entries are bitwise those of a full tile.
template <std::size_t MR, std::size_t NRV>
void UkrGemm(std::int64_t m, std::int64_t n, std::int64_t k, const double* HWY_RESTRICT a,
             const double* HWY_RESTRICT b, bool accumulate, double* HWY_RESTRICT c,
             std::int64_t ldc, const GemmTile& /*tile: MR and NR are compile-time here*/) noexcept {
  const hn::ScalableTag<double> d;
  using V = hn::Vec<decltype(d)>;
  constexpr std::size_t N = hn::MaxLanes(hn::ScalableTag<double>());
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
  V acc[MR][NRV];
  for (std::size_t r = 0; r < MR; ++r) {
    for (std::size_t x = 0; x < NRV; ++x)
      acc[r][x] = hn::Zero(d);
  }
  for (std::int64_t l = 0; l < k; ++l, a += MR, b += NR) {
    V bv[NRV];
    for (std::size_t x = 0; x < NRV; ++x)
      bv[x] = hn::LoadU(d, b + x * N);
    for (std::size_t r = 0; r < MR; ++r) {
      const V av = hn::Set(d, a[r]);
      for (std::size_t x = 0; x < NRV; ++x)
        acc[r][x] = hn::MulAdd(av, bv[x], acc[r][x]);
    }
  }
  for (std::size_t r = 0; r < MR; ++r) {
    double* row = out + static_cast<std::int64_t>(r) * ldo;
    for (std::size_t x = 0; x < NRV; ++x) {
      const V sum = accumulate ? hn::Add(hn::LoadU(d, row + x * N), acc[r][x]) : acc[r][x];
      hn::StoreU(sum, d, row + x * N);
    }
  }
  if (!full) {
    for (std::int64_t i = 0; i < m; ++i)
      std::copy(edge + i * NR, edge + i * NR + n, c + i * ldc);
  }
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // GAUSSKL_CPU_PAIRWISE_BACKWARD_UKR_INL_H_
