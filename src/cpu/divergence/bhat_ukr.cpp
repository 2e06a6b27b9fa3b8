// Highway runtime dispatch of the Bhattacharyya tile kernel (bhat_ukr.hpp): compiled once per
// target, the best one the CPU supports picked at run time; the scalar target runs the reference
// kernel. j is the lane dimension: each h loads a vector of nu and of v_q from the q micro-panel
// and broadcasts mu and v_p of each of the MR rows; per (i, j, h) a subtraction, an addition, three
// multiplications and a multiply-add; per entry a division per chunk, one Log, the bound and the
// rule (and hellinger's Expm1) on whole vectors.
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
#include <limits>

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
constexpr double kLog2 = 0.69314718055994530942;
constexpr double kUnit = 0x1p-53;
}  // namespace

namespace {

// The value of one entry from its sums (the reference kernel's; the SIMD kernels have the same
// operations per lane): the certified value, or NaN.
double certified(double quad, double log_mant, double expo, double p_log_mant, double p_log2,
                 double q_log_mant, double q_log2, const BhatParams& params) {
  if (params.renyi) {
    const double wp = params.p_weight, wq = params.q_weight;
    const double x = log_mant - (wp * p_log_mant + wq * q_log_mant);
    const double y = kLog2 * (expo - (wp * p_log2 + wq * q_log2));
    const double l = x + y;
    const double value = params.quad_scale * quad + params.log_scale * l;
    const double bound =
        params.quad_bound * quad + params.log_bound +
        params.weight_error * (std::abs(wp * p_log2) + std::abs(wq * q_log2) + std::abs(expo)) +
        kUnit * (2 * params.log_scale * (std::abs(y) + std::abs(l)) + 2 * std::abs(value));
    if (!(bound <= params.tolerance * (std::abs(value) + 1) && bound <= 0.01 * value &&
          bound < HUGE_VAL))
      return std::numeric_limits<double>::quiet_NaN();
    return value;
  }
  const double x = log_mant - 0.5 * (p_log_mant + q_log_mant);
  const double y = kLog2 * (expo - params.dims - 0.5 * (p_log2 + q_log2));
  const double l = x + y;
  double value = 0.25 * quad + 0.5 * l;
  const double bound = params.quad_bound * quad + params.log_bound +
                       kUnit * (std::abs(y) + std::abs(l) + 2 * std::abs(value));
  // A finite bound too: N overflows for far means or wide variances (B of 1e16 and more, e.g.
  // variances 1e30 and means 1e50 apart), and then inf <= inf.
  if (!(bound <= params.tolerance * (std::abs(value) + 1) && bound <= 0.01 * value &&
        bound < HUGE_VAL))
    return std::numeric_limits<double>::quiet_NaN();
  if (params.hellinger) value = -std::expm1(-value);
  return value;
}

}  // namespace

BhatParams bhat_params(std::int64_t d, double tolerance, bool hellinger) {
  BhatParams params;
  const double dd = static_cast<double>(d), chunk = static_cast<double>(kBhatChunkTerms);
  params.dims = dd;
  // quad against sum_h a_h / s_h of the exact inputs, per term (first order): a =
  // fl(fl(mu - nu)^2) 3u; v_p, v_q within 2u each (diag_row_terms) and s their rounded sum, 3u; the
  // chunk's fraction: a P once, N's update twice (a multiply and an add without FMA), P's product
  // once per term of the chunk (P's earlier roundings cancel in N / P), the division once; the
  // chunks' sum once per chunk. The 1.01 covers the higher orders. Renormalizations scale by powers
  // of 2, exactly. B has quad / 4.
  const double chain = 1.01 * kUnit * (3 * std::min(chunk, dd) + 8 + std::ceil(dd / chunk));
  params.quad_bound = 0.25 * chain / (1 - chain);
  // The log part L = 1/2 sum_h [log s_h - 1/2 log v_ph - 1/2 log v_qh - log 2], per term: v_p and
  // v_q within 2u move it by at most 1/4 (2u + 2u) (its derivative in log v_p is
  // v_p / (2 s) - 1/4); s's rounding 1/2 u; the kernel's product of s 1/2 u, the two rows'
  // products 1/4 u each. Per entry: the logarithms of the mantissas (Highway's Log within 4 ulp,
  // libm's within 1, of values < 0.7: 1/2 4u + 1/4 2u) and the roundings of the mantissas' sums
  // (values < 1.4, < 2u): 16u with room. N's underflows, at most 2^-82 each in quad's units
  // (partial products >= 2^-896: 2^-179 with gradual underflow, 2^-126 flushed to zero), 3 per
  // term. The kernels add log 2's rounding and the exponents' term's (u |y| in L), x + y's (1/2 u
  // |l|) and the final sum's, from their sizes.
  params.log_bound = 1.01 * kUnit * (2.5 * dd + 16) + 0.75 * dd * 0x1p-82;
  // hellinger: H of B within 4 ulp (8u H) and, by the mean value theorem, e^-xi |B_hat - B| with
  // xi >= 0.99 B_hat (the 1% rule), where e^-xi (B + 1) <= 1.0001: certifying B to
  // 0.999 tolerance - 8u leaves H within tolerance (H + 1).
  params.hellinger = hellinger;
  params.tolerance = hellinger ? 0.999 * tolerance - 8 * kUnit : tolerance;
  return params;
}

BhatParams renyi_params(std::int64_t d, double tolerance, double alpha) {
  BhatParams params;
  const double dd = static_cast<double>(d), chunk = static_cast<double>(kBhatChunkTerms);
  const double beta = 1 - alpha;
  params.dims = dd;
  params.renyi = true;
  params.quad_scale = 0.5 * alpha;
  params.log_scale = 0.5 / beta;
  params.p_weight = beta;
  params.q_weight = alpha;
  // quad as bhattacharyya's, with the two weighted variances' roundings (2u per term).
  const double chain = 1.01 * kUnit * (3 * std::min(chunk, dd) + 10 + std::ceil(dd / chunk));
  params.quad_bound = params.quad_scale * chain / (1 - chain);
  // L = log prod m - beta log prod v_p - alpha log prod v_q, per term: v_p and v_q within 2u move
  // it by at most (beta + alpha) 2u (its derivatives in log v_p and log v_q are within beta and
  // alpha); the weights' products and their sum 2u; the kernel's product u, the rows' products
  // (beta + alpha) u: 5u. Per entry: the mantissas' logarithms and weighted sums, 32u with room;
  // N's underflows as bhattacharyya's. D has L / (2 beta).
  params.log_bound = params.log_scale * (1.01 * kUnit * (5 * dd + 32) + 1.5 * dd * 0x1p-82);
  // The exponents' weighted sum rounds at most twice, relative to its largest part.
  params.weight_error = params.log_scale * kLog2 * 3 * kUnit;
  params.tolerance = tolerance;
  return params;
}

void bhat_log_product(const double* v, std::int64_t d, double* log_mant, double* log2) {
  double m = 1;
  std::int64_t e = 0;
  for (std::int64_t h = 0; h < d; ++h) {
    int ex = 0;
    m = std::frexp(m * v[h], &ex);  // [1/2, 1)
    e += ex;
  }
  if (d > 0) m *= 2, e -= 1;
  *log_mant = std::log(m);
  *log2 = static_cast<double>(e);
}

void ukr_bhat_ref(std::int64_t m, std::int64_t n, std::int64_t k, const BhatRows& p,
                  const BhatRows& q, const BhatParams& params, double* out, std::int64_t ldc,
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
            const double dl = q.packed[h * 2 * nr + j] - p.packed[h * 2 * mr + i];
            const double s = q.packed[h * 2 * nr + nr + j] + p.packed[h * 2 * mr + mr + i];
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
      out[i * ldc + j] =
          certified(sum, std::log(prod), static_cast<double>(exponents - 1023 * renorms),
                    p.log_mant[i], p.log2[i], q.log_mant[j], q.log2[j], params);
    }
  }
}

}  // namespace gausskl::cpu
#endif  // GAUSSKL_CPU_BHAT_UKR_ONCE

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// The MR x (lanes) tile, straight to out when whole, else through a local tile.
template <std::size_t MR>
void UkrBhat(std::int64_t m, std::int64_t n, std::int64_t k, const BhatRows& p, const BhatRows& q,
             const BhatParams& params, double* HWY_RESTRICT out, std::int64_t ldc,
             const BhatTile& /*tile: MR and NR are compile-time here*/) noexcept {
  const hn::ScalableTag<double> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::Vec<decltype(d)>;
  using VU = hn::Vec<decltype(du)>;
  constexpr std::size_t NR = hn::MaxLanes(hn::ScalableTag<double>());
  const VU mask = hn::Set(du, kExponentMask), one_bits = hn::Set(du, kOneBits),
           twice_bias = hn::Set(du, kTwiceBias);
  V num[MR], prod[MR], sum[MR];
  VU exponents[MR];
  for (std::size_t r = 0; r < MR; ++r) {
    num[r] = hn::Zero(d);
    prod[r] = hn::Set(d, 1.0);
    sum[r] = hn::Zero(d);
    exponents[r] = hn::Zero(du);
  }
  const double* HWY_RESTRICT pp = p.packed;
  const double* HWY_RESTRICT qp = q.packed;
  std::int64_t renorms = 0;
  for (std::int64_t h0 = 0; h0 < k; h0 += kBhatChunkTerms) {
    const std::int64_t h1 = std::min(k, h0 + kBhatChunkTerms);
    for (std::int64_t hb = h0; hb < h1; hb += kBhatRenormTerms) {
      const std::int64_t he = std::min(h1, hb + kBhatRenormTerms);
      for (std::int64_t h = hb; h < he; ++h) {
        const double* qh = qp + h * 2 * static_cast<std::int64_t>(NR);
        const double* ph = pp + h * 2 * static_cast<std::int64_t>(MR);
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
        prod[r] = hn::BitCast(d, hn::Or(hn::AndNot(mask, bits), one_bits));
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
  // certified() per lane.
  const V bias = hn::Set(d, static_cast<double>(1023 * renorms));
  const V half = hn::Set(d, 0.5), quarter = hn::Set(d, 0.25), two = hn::Set(d, 2.0),
          one = hn::Set(d, 1.0), hundredth = hn::Set(d, 0.01), log2 = hn::Set(d, kLog2),
          unit = hn::Set(d, kUnit), dims = hn::Set(d, params.dims),
          quad_bound = hn::Set(d, params.quad_bound), log_bound = hn::Set(d, params.log_bound),
          tolerance = hn::Set(d, params.tolerance), low = hn::Set(d, -700.0),
          nan = hn::Set(d, std::numeric_limits<double>::quiet_NaN()), inf = hn::Set(d, HUGE_VAL);
  const V q_log_mant = hn::LoadU(d, q.log_mant), q_log2 = hn::LoadU(d, q.log2);
  const bool full = m == static_cast<std::int64_t>(MR) && n == static_cast<std::int64_t>(NR);
  HWY_ALIGN double local[MR * NR];
  for (std::size_t r = 0; r < MR && params.renyi; ++r) {
    const V quad = sum[r];
    const V wp = hn::Set(d, params.p_weight), wq = hn::Set(d, params.q_weight);
    const V x = hn::Sub(hn::Log(d, prod[r]),
                        hn::MulAdd(wp, hn::Set(d, p.log_mant[r]), hn::Mul(wq, q_log_mant)));
    const V expo = hn::Sub(hn::ConvertTo(d, hn::BitCast(di, exponents[r])), bias);
    const V pe = hn::Mul(wp, hn::Set(d, p.log2[r])), qe = hn::Mul(wq, q_log2);
    const V y = hn::Mul(log2, hn::Sub(expo, hn::Add(pe, qe)));
    const V l = hn::Add(x, y);
    const V value =
        hn::MulAdd(hn::Set(d, params.quad_scale), quad, hn::Mul(hn::Set(d, params.log_scale), l));
    const V scaled_unit = hn::Set(d, 2 * params.log_scale * kUnit);
    const V bound =
        hn::Add(hn::Add(hn::MulAdd(quad_bound, quad, log_bound),
                        hn::Mul(hn::Set(d, params.weight_error),
                                hn::Add(hn::Add(hn::Abs(pe), hn::Abs(qe)), hn::Abs(expo)))),
                hn::Add(hn::Mul(scaled_unit, hn::Add(hn::Abs(y), hn::Abs(l))),
                        hn::Mul(hn::Mul(two, unit), hn::Abs(value))));
    const auto ok = hn::And(hn::And(hn::Le(bound, hn::Mul(tolerance, hn::Add(hn::Abs(value), one))),
                                    hn::Le(bound, hn::Mul(hundredth, value))),
                            hn::Lt(bound, inf));
    const V kept = hn::IfThenElse(ok, value, nan);
    if (full) {
      hn::StoreU(kept, d, out + static_cast<std::int64_t>(r) * ldc);
    } else {
      hn::Store(kept, d, local + r * NR);
    }
  }
  for (std::size_t r = 0; r < MR && !params.renyi; ++r) {
    const V quad = sum[r];
    const V x =
        hn::Sub(hn::Log(d, prod[r]), hn::Mul(half, hn::Add(hn::Set(d, p.log_mant[r]), q_log_mant)));
    const V expo = hn::Sub(hn::ConvertTo(d, hn::BitCast(di, exponents[r])), bias);
    const V y = hn::Mul(
        log2, hn::Sub(hn::Sub(expo, dims), hn::Mul(half, hn::Add(hn::Set(d, p.log2[r]), q_log2))));
    const V l = hn::Add(x, y);
    V value = hn::Add(hn::Mul(quarter, quad), hn::Mul(half, l));
    const V bound = hn::Add(
        hn::Add(hn::Mul(quad_bound, quad), log_bound),
        hn::Mul(unit, hn::Add(hn::Add(hn::Abs(y), hn::Abs(l)), hn::Mul(two, hn::Abs(value)))));
    const auto ok = hn::And(hn::And(hn::Le(bound, hn::Mul(tolerance, hn::Add(hn::Abs(value), one))),
                                    hn::Le(bound, hn::Mul(hundredth, value))),
                            hn::Lt(bound, inf));
    if (params.hellinger) value = hn::Neg(hn::Expm1(d, hn::Neg(hn::Max(value, low))));
    value = hn::IfThenElse(ok, value, nan);
    if (full) {
      hn::StoreU(value, d, out + static_cast<std::int64_t>(r) * ldc);
    } else {
      hn::Store(value, d, local + r * NR);
    }
  }
  if (full) return;
  for (std::int64_t i = 0; i < m; ++i)
    std::copy(local + i * NR, local + i * NR + n, out + i * ldc);
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

BhatKernel bhat_kernel() noexcept {
  return HWY_DYNAMIC_DISPATCH(Kernel)();
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
