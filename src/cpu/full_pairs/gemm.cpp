// Highway runtime dispatch of full_gemm: this file is compiled once per target (AVX3, AVX2,
// SSE4, ..., scalar) and the best one the CPU supports is picked at run time. The body is plain
// C++ on 8-lane arrays, written in the summation order full_pairs/gemm.hpp promises; each target's
// compiler flags let it vectorize those arrays (one AVX-512 vector, two AVX2, four SSE).
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/full_pairs/gemm.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include "cpu/full_pairs/gemm.hpp"
#include "cpu/tunables.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace {

constexpr int kLanes = static_cast<int>(kFullLanes);

namespace hn = hwy::HWY_NAMESPACE;

// The fixed tree of full_pairs/gemm.hpp: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
inline double reduce_lanes(const double* l) {
  return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

// An MR x NR tile of C: rows a[r * kp], columns b[c * kp]. The 8 lanes of an entry's partial
// sums are kLanes / N vectors of N lanes (lane l in vector l / N), so every target sums in the
// same order; MulAdd is fused where the target has FMA, a product and a sum otherwise.
template <int MR, int NR>
inline void tile(const double* HWY_RESTRICT a, const double* HWY_RESTRICT b, std::int64_t kp,
                 double* HWY_RESTRICT c, std::int64_t ldc) {
  const hn::ScalableTag<double> dt;
  using V = hn::Vec<decltype(dt)>;
  constexpr int N = static_cast<int>(hn::MaxLanes(dt));
  static_assert(kLanes % N == 0, "a vector must divide the 8 lanes");
  constexpr int G = kLanes / N;  // vectors per group of 8 lanes
  double total[MR][NR] = {};
  HWY_ALIGN double lanes[kLanes];
  for (std::int64_t k0 = 0; k0 < kp; k0 += kFullKB) {
    const std::int64_t k1 = k0 + kFullKB < kp ? k0 + kFullKB : kp;
    V acc[MR][NR][G];
    for (int r = 0; r < MR; ++r)
      for (int s = 0; s < NR; ++s)
        for (int g = 0; g < G; ++g)
          acc[r][s][g] = hn::Zero(dt);
    for (std::int64_t k = k0; k < k1; k += kLanes) {
      for (int g = 0; g < G; ++g) {
        V bv[NR];
        for (int s = 0; s < NR; ++s)
          bv[s] = hn::LoadU(dt, b + s * kp + k + g * N);
        for (int r = 0; r < MR; ++r) {
          const V av = hn::LoadU(dt, a + r * kp + k + g * N);
          for (int s = 0; s < NR; ++s)
            acc[r][s][g] = hn::MulAdd(av, bv[s], acc[r][s][g]);
        }
      }
    }
    for (int r = 0; r < MR; ++r) {
      for (int s = 0; s < NR; ++s) {
        for (int g = 0; g < G; ++g)
          hn::Store(acc[r][s][g], dt, lanes + g * N);
        total[r][s] += reduce_lanes(lanes);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int s = 0; s < NR; ++s)
      c[r * ldc + s] = total[r][s];
  }
}

// Tile shape per target: MR x NR x (8 / N) accumulator vectors must fit the register file.
#if HWY_TARGET <= HWY_AVX3
constexpr int kMr = static_cast<int>(kFullMr), kNr = static_cast<int>(kFullNr);
#else
constexpr int kMr = 2, kNr = 2;
#endif

// Rows [i, i + MR) against every column: full NR tiles, then the remaining columns one by one.
template <int MR>
inline void row_panel(const double* a, const double* b, std::int64_t m, std::int64_t kp, double* c,
                      std::int64_t ldc) {
  constexpr int NR = kNr;
  std::int64_t j = 0;
  for (; j + NR <= m; j += NR)
    tile<MR, NR>(a, b + j * kp, kp, c + j, ldc);
  for (; j < m; ++j)
    tile<MR, 1>(a, b + j * kp, kp, c + j, ldc);
}

}  // namespace

void FullGemm(const double* a, std::int64_t n, const double* b, std::int64_t m, std::int64_t kp,
              double* c, std::int64_t ldc) {
  constexpr int MR = kMr;
  // Columns in panels that stay in L2 while every row tile of the block passes over them.
  for (std::int64_t j0 = 0; j0 < m; j0 += kFullNc) {
    const std::int64_t nc = m - j0 < kFullNc ? m - j0 : kFullNc;
    std::int64_t i = 0;
    for (; i + MR <= n; i += MR)
      row_panel<MR>(a + i * kp, b + j0 * kp, nc, kp, c + i * ldc + j0, ldc);
    for (; i < n; ++i)
      row_panel<1>(a + i * kp, b + j0 * kp, nc, kp, c + i * ldc + j0, ldc);
  }
}

const char* FullGemmTargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(FullGemm);
HWY_EXPORT(FullGemmTargetName);

void full_gemm(const double* a, std::int64_t n, const double* b, std::int64_t m, std::int64_t kp,
               double* c, std::int64_t ldc) noexcept {
  HWY_DYNAMIC_DISPATCH(FullGemm)(a, n, b, m, kp, c, ldc);
}

const char* full_gemm_target() noexcept {
  return HWY_DYNAMIC_DISPATCH(FullGemmTargetName)();
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
