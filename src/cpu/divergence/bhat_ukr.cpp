// Highway runtime dispatch of the Bhattacharyya tile kernel (bhat_ukr.hpp): compiled once per
// target, the best one the CPU supports picked at run time; the scalar target runs the reference
// kernel. j is the lane dimension: each h loads a vector of nu and of v_q from the q micro-panel
// and broadcasts mu and v_p of each of the MR rows; per (i, j, h) a subtraction, an addition, three
// multiplications and a multiply-add.
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/divergence/bhat_ukr.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu/divergence/bhat_ukr.hpp"
#include "cpu/tunables.hpp"
#include "hwy/contrib/math/math-inl.h"

#ifndef GAUSSKL_CPU_BHAT_UKR_ONCE
#define GAUSSKL_CPU_BHAT_UKR_ONCE
namespace gausskl::cpu {

static_assert(kBhatRenormTerms == 8, "bhat_range_ok's bounds assume 8 terms per renormalization");
static_assert(kBhatChunkTerms % kBhatRenormTerms == 0);

namespace {
constexpr std::uint64_t kExponentMask = 0x7ff0000000000000ull;
constexpr std::uint64_t kOneBits = 0x3ff0000000000000ull;    // 1.0
constexpr std::uint64_t kTwiceBias = 0x7fe0000000000000ull;  // (2 * 1023) << 52
}  // namespace

void ukr_bhat_ref(std::int64_t m, std::int64_t n, std::int64_t k, const double* p, const double* q,
                  double* quad, double* log_mant, double* expo, std::int64_t ldc,
                  const BhatTile& tile) noexcept {
  const std::int64_t mr = tile.mr, nr = tile.nr;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double num = 0, prod = 1, sum = 0;
      std::int64_t exponents = 0, renorms = 0;
      for (std::int64_t h0 = 0; h0 < k; h0 += kBhatChunkTerms) {
        const std::int64_t h1 = std::min(k, h0 + kBhatChunkTerms);
        for (std::int64_t hb = h0; hb < h1; hb += kBhatRenormTerms) {
          for (std::int64_t h = hb; h < std::min(h1, hb + kBhatRenormTerms); ++h) {
            const double dl = q[h * 2 * nr + j] - p[h * 2 * mr + i];
            const double s = q[h * 2 * nr + nr + j] + p[h * 2 * mr + mr + i];
            num = std::fma(num, s, dl * dl * prod);
            prod *= s;
          }
          std::uint64_t bits;
          std::memcpy(&bits, &prod, 8);
          const std::uint64_t e = bits & kExponentMask, scale_bits = kTwiceBias - e;
          bits = (bits & ~kExponentMask) | kOneBits;
          std::memcpy(&prod, &bits, 8);
          double scale;
          std::memcpy(&scale, &scale_bits, 8);
          num *= scale;
          exponents += static_cast<std::int64_t>(e >> 52);
          ++renorms;
        }
        sum += num / prod;
        num = 0;
      }
      quad[i * ldc + j] = sum;
      log_mant[i * ldc + j] = std::log(prod);
      expo[i * ldc + j] = static_cast<double>(exponents - 1023 * renorms);
    }
  }
}

}  // namespace gausskl::cpu
#endif  // GAUSSKL_CPU_BHAT_UKR_ONCE

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// The MR x (lanes) tile, into local arrays, then its m x n part out.
template <std::size_t MR>
void UkrBhat(std::int64_t m, std::int64_t n, std::int64_t k, const double* HWY_RESTRICT p,
             const double* HWY_RESTRICT q, double* HWY_RESTRICT quad, double* HWY_RESTRICT log_mant,
             double* HWY_RESTRICT expo, std::int64_t ldc,
             const BhatTile& /*tile: MR and NR are compile-time here*/) noexcept {
  const hn::ScalableTag<double> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::Vec<decltype(d)>;
  using VU = hn::Vec<decltype(du)>;
  constexpr std::size_t NR = hn::MaxLanes(hn::ScalableTag<double>());
  const VU mask = hn::Set(du, kExponentMask), one = hn::Set(du, kOneBits),
           twice_bias = hn::Set(du, kTwiceBias);
  V num[MR], prod[MR], sum[MR];
  VU exponents[MR];
  for (std::size_t r = 0; r < MR; ++r) {
    num[r] = hn::Zero(d);
    prod[r] = hn::Set(d, 1.0);
    sum[r] = hn::Zero(d);
    exponents[r] = hn::Zero(du);
  }
  std::int64_t renorms = 0;
  for (std::int64_t h0 = 0; h0 < k; h0 += kBhatChunkTerms) {
    const std::int64_t h1 = std::min(k, h0 + kBhatChunkTerms);
    for (std::int64_t hb = h0; hb < h1; hb += kBhatRenormTerms) {
      const std::int64_t he = std::min(h1, hb + kBhatRenormTerms);
      for (std::int64_t h = hb; h < he; ++h) {
        const double* qh = q + h * 2 * static_cast<std::int64_t>(NR);
        const double* ph = p + h * 2 * static_cast<std::int64_t>(MR);
        const V nu = hn::LoadU(d, qh), vq = hn::LoadU(d, qh + NR);
        for (std::size_t r = 0; r < MR; ++r) {
          const V dl = hn::Sub(nu, hn::Set(d, ph[r]));
          const V s = hn::Add(vq, hn::Set(d, ph[MR + r]));
          num[r] = hn::MulAdd(num[r], s, hn::Mul(hn::Mul(dl, dl), prod[r]));
          prod[r] = hn::Mul(prod[r], s);
        }
      }
      // prod = 2^e m, m in [1, 2): prod := m, num := num 2^-e (both exact), e summed (biased).
      for (std::size_t r = 0; r < MR; ++r) {
        const VU bits = hn::BitCast(du, prod[r]);
        const VU e = hn::And(bits, mask);
        prod[r] = hn::BitCast(d, hn::Or(hn::AndNot(mask, bits), one));
        num[r] = hn::Mul(num[r], hn::BitCast(d, hn::Sub(twice_bias, e)));
        exponents[r] = hn::Add(exponents[r], hn::ShiftRight<52>(e));
      }
      ++renorms;
    }
    for (std::size_t r = 0; r < MR; ++r) {
      sum[r] = hn::Add(sum[r], hn::Div(num[r], prod[r]));
      num[r] = hn::Zero(d);
    }
  }
  const V bias = hn::Set(d, static_cast<double>(1023 * renorms));
  const bool full = m == static_cast<std::int64_t>(MR) && n == static_cast<std::int64_t>(NR);
  HWY_ALIGN double t_quad[MR * NR], t_log[MR * NR], t_expo[MR * NR];
  for (std::size_t r = 0; r < MR; ++r) {
    const V log_mant_r = hn::Log(d, prod[r]);
    const V expo_r = hn::Sub(hn::ConvertTo(d, hn::BitCast(di, exponents[r])), bias);
    if (full) {
      const std::int64_t at = static_cast<std::int64_t>(r) * ldc;
      hn::StoreU(sum[r], d, quad + at);
      hn::StoreU(log_mant_r, d, log_mant + at);
      hn::StoreU(expo_r, d, expo + at);
    } else {
      hn::Store(sum[r], d, t_quad + r * NR);
      hn::Store(log_mant_r, d, t_log + r * NR);
      hn::Store(expo_r, d, t_expo + r * NR);
    }
  }
  if (full) return;
  for (std::int64_t i = 0; i < m; ++i) {
    std::copy(t_quad + i * NR, t_quad + i * NR + n, quad + i * ldc);
    std::copy(t_log + i * NR, t_log + i * NR + n, log_mant + i * ldc);
    std::copy(t_expo + i * NR, t_expo + i * NR + n, expo + i * ldc);
  }
}

// x := -expm1(-x), x clamped to [-700, inf) (Expm1's range; such x are never certified values).
void HellingerOf(double* HWY_RESTRICT x, std::int64_t n) {
  const hn::ScalableTag<double> d;
  constexpr auto N = static_cast<std::int64_t>(hn::MaxLanes(hn::ScalableTag<double>()));
  const auto low = hn::Set(d, -700.0);
  const auto of = [&](hn::Vec<decltype(d)> v) {
    return hn::Neg(hn::Expm1(d, hn::Neg(hn::Max(v, low))));
  };
  std::int64_t i = 0;
  for (; i + N <= n; i += N)
    hn::StoreU(of(hn::LoadU(d, x + i)), d, x + i);
  // The last values through a vector too: every x[i] gets the same function's bits (q = p's
  // entries on both sides of the diagonal).
  if (i < n) {
    HWY_ALIGN double tail[N] = {};
    std::copy(x + i, x + n, tail);
    hn::Store(of(hn::Load(d, tail)), d, tail);
    std::copy(tail, tail + (n - i), x + i);
  }
}
#else
void HellingerOf(double* HWY_RESTRICT x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    x[i] = -std::expm1(-std::max(x[i], -700.0));
}
#endif  // HWY_TARGET != HWY_SCALAR

BhatKernel Kernel() {
#if HWY_TARGET == HWY_SCALAR
  return {{kBhatRefMr, kBhatRefNr}, &ukr_bhat_ref};
#else
#if HWY_TARGET <= HWY_AVX3
  constexpr std::size_t mr = kBhatMrAvx3;
#elif HWY_TARGET == HWY_AVX2
  constexpr std::size_t mr = kBhatMrAvx2;
#else
  constexpr std::size_t mr = kBhatMrSse4;
#endif
  constexpr auto nr = static_cast<std::int64_t>(hn::MaxLanes(hn::ScalableTag<double>()));
  return {{static_cast<std::int64_t>(mr), nr}, &UkrBhat<mr>};
#endif
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(Kernel);
HWY_EXPORT(HellingerOf);

BhatKernel bhat_kernel() noexcept {
  return HWY_DYNAMIC_DISPATCH(Kernel)();
}
void bhat_hellinger(double* x, std::int64_t n) noexcept {
  HWY_DYNAMIC_DISPATCH(HellingerOf)(x, n);
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
