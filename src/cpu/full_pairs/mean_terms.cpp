// Highway runtime dispatch of full_mean_terms (full_pairs/mean_terms.hpp): compiled once per
// target, the best one the CPU supports picked at run time. A group's 8 lanes are 8 / N vectors of
// N lanes, and every lane runs the same operations, so a row's value does not depend on the group
// it sits in.
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/full_pairs/mean_terms.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include <type_traits>

#include "cpu/full_pairs/mean_terms.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
constexpr int kLanes = static_cast<int>(kFullLanes);

// One column: y in blocks of KB rows of W held in registers; each block passes over h again
// (recomputing delta_h, bitwise the same), so nothing but registers is needed for any d.
template <int KB>
inline void column(const double* HWY_RESTRICT mu_t, std::int64_t d, const double* HWY_RESTRICT nu,
                   const double* HWY_RESTRICT w, double* HWY_RESTRICT quad,
                   double* HWY_RESTRICT dist2) {
  const hn::ScalableTag<double> dt;
  using V = hn::Vec<decltype(dt)>;
  constexpr int N = static_cast<int>(hn::MaxLanes(dt));
  static_assert(kLanes % N == 0, "a vector must divide the 8 lanes");
  constexpr int G = kLanes / N;
  V q[G], dd[G];
  for (int g = 0; g < G; ++g)
    q[g] = dd[g] = hn::Zero(dt);
  for (std::int64_t k0 = 0; k0 < d; k0 += KB) {
    const std::int64_t k1 = k0 + KB < d ? k0 + KB : d;
    V y[KB][G];
    for (int r = 0; r < KB; ++r)
      for (int g = 0; g < G; ++g)
        y[r][g] = hn::Zero(dt);
    const bool last = k1 == d;
    for (std::int64_t h = 0; h < k1; ++h) {
      const V n = hn::Set(dt, nu[h]);
      V delta[G];
      for (int g = 0; g < G; ++g)
        delta[g] = hn::Sub(hn::LoadU(dt, mu_t + h * kLanes + g * N), n);
      if (last) {
        for (int g = 0; g < G; ++g)
          dd[g] = hn::MulAdd(delta[g], delta[g], dd[g]);
      }
      // Rows k of this block with k >= h (W is lower triangular).
      const std::int64_t r0 = h > k0 ? h - k0 : 0;
      for (int r = 0; r < KB; ++r) {
        if (r < r0 || k0 + r >= k1) continue;
        const std::int64_t k = k0 + r;
        const V wk = hn::Set(dt, w[k * (k + 1) / 2 + h]);
        for (int g = 0; g < G; ++g)
          y[r][g] = hn::MulAdd(wk, delta[g], y[r][g]);
      }
    }
    for (int r = 0; r < KB && k0 + r < k1; ++r)
      for (int g = 0; g < G; ++g)
        q[g] = hn::MulAdd(y[r][g], y[r][g], q[g]);
  }
  for (int g = 0; g < G; ++g) {
    hn::StoreU(q[g], dt, quad + g * N);
    hn::StoreU(dd[g], dt, dist2 + g * N);
  }
}

}  // namespace

void FullMeanTerms(const double* mu_t, std::int64_t d, const double* nu, const double* w,
                   std::int64_t cols, double* quad, double* dist2) {
  // As many rows of W per block as 8-lane accumulators fit the register file beside the rest, or
  // d if fewer (the block changes no entry's order of operations, only the passes over h).
  constexpr int kMax = HWY_TARGET <= HWY_AVX3 ? 16 : 4;
  const std::int64_t tri = d * (d + 1) / 2;
  auto run = [&](auto kb) {
    for (std::int64_t c = 0; c < cols; ++c)
      column<decltype(kb)::value>(mu_t, d, nu + c * d, w + c * tri, quad + c * kLanes,
                                  dist2 + c * kLanes);
  };
  if (d <= 2) {
    run(std::integral_constant<int, 2>());
  } else if (d <= 4) {
    run(std::integral_constant<int, 4>());
  } else if (d <= 8 || kMax == 4) {
    run(std::integral_constant < int, kMax<8 ? kMax : 8>());
  } else {
    run(std::integral_constant<int, kMax>());
  }
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(FullMeanTerms);

void full_mean_terms(const double* mu_t, std::int64_t d, const double* nu, const double* w,
                     std::int64_t cols, double* quad, double* dist2) noexcept {
  HWY_DYNAMIC_DISPATCH(FullMeanTerms)(mu_t, d, nu, w, cols, quad, dist2);
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
