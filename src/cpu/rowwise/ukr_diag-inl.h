// The SIMD row-wise diagonal KL kernel (rowwise/ukr_diag.hpp), compiled once per Highway target by
// rowwise/ukr_diag.cpp: double lanes over h, a row loop per pairing of parameterizations, the
// forms of f = e^r - 1 - r that cancel nothing near p = q, and a table exponential; bound by the
// count of vector operations, not memory. Derivations and accuracy: docs/kernels.md.

// Per-target include guard: toggled so that foreach_target.h re-includes this file per target.
#if defined(GAUSSKL_CPU_ROWWISE_DIAG_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GAUSSKL_CPU_ROWWISE_DIAG_INL_H_
#undef GAUSSKL_CPU_ROWWISE_DIAG_INL_H_
#else
#define GAUSSKL_CPU_ROWWISE_DIAG_INL_H_
#endif

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cpu/common/stable.hpp"
#include "cpu/rowwise/ukr_diag.hpp"
#include "cpu/tunables.hpp"
#include "gausskl/types.hpp"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace rowwise_diag_detail {

using DD = hn::ScalableTag<double>;
using VD = hn::Vec<DD>;
using DI = hn::RebindToSigned<DD>;
using VI = hn::Vec<DI>;

// e^r - 1 - r past kExpm1Max takes the scalar path (inf near 709.78, as libm's); r below kExpMin
// is clamped so that the table's 2^(k >> 4) stays normal (docs/kernels.md, "The range").
constexpr double kExpm1Max = 700;
constexpr double kExpMin = -708;
// ln 2 split so that k * kLn2Hi / 16 is exact for |k| < 2^20 (fdlibm's constants), and 1 / ln 2.
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kInvLn2 = 1.44269504088896338700e+00;
// Adding 1.5 * 2^52 rounds |y| < 2^51 to an integer, left in the low bits of the sum's pattern.
constexpr double kRoundMagic = 0x1.8p52;
// 2^(j / 16) for j = 0..15 (correctly rounded), as bit patterns less j << 48: adding k << 48 to
// entry k & 15 then adds k >> 4 to the exponent field (k << 48 = (k >> 4) << 52 + j << 48).
alignas(64) constexpr std::int64_t kExp2Sixteenths[16] = {
    0x3ff0000000000000, 0x3fefb5586cf9890f, 0x3fef72b83c7d517b, 0x3fef387a6e756238,
    0x3fef06fe0a31b715, 0x3feedea64c123422, 0x3feebfdad5362a27, 0x3feeab07dd485429,
    0x3feea09e667f3bcd, 0x3feea11473eb0187, 0x3feeace5422aa0db, 0x3feec49182a3f090,
    0x3feee89f995ad3ad, 0x3fef199bdd85529c, 0x3fef5818dcfba487, 0x3fefa4afa2a490da};
// P(x) = (e^x - 1 - x) / x^2 = 1/2 + x Q(x) on |x| <= ln2 / 32, Q of degree 3 fitted on Chebyshev
// nodes (mpmath.chebyfit, 200 bits): |P - exact| * x^2 < 6e-17, P(0) = 1/2 exactly.
constexpr double kExpPoly[4] = {0.16666666666120458, 0.041666666665983905, 0.0083334264462134894,
                                0.0013889005279856324};
// log(m) = f - s (f - R(s)) on m in [sqrt(2) / 2, sqrt(2)), f = m - 1, s = f / (m + 1):
// R(s) = sum_k kLogPoly[k] s^(2k + 2), hwy's LogImpl<double>::LogPoly (musl's log), ~1 ulp.
constexpr double kLogPoly[7] = {0.6666666666666735130, 0.3999999999940941908, 0.2857142874366239149,
                                0.2222219843214978396, 0.1818357216161805012, 0.1531383769920937332,
                                0.1479819860511658591};

template <class T>
HWY_INLINE VD LoadWide(DD d, const T* HWY_RESTRICT x) {
  if constexpr (std::is_same_v<T, float>) {
    return hn::PromoteTo(d, hn::LoadU(hn::Rebind<float, DD>(), x));
  } else {
    return hn::LoadU(d, x);
  }
}

// v narrowed to T, stored at dst (a whole vector).
template <class T>
HWY_INLINE void StoreWide(DD d, VD v, T* HWY_RESTRICT dst) {
  if constexpr (std::is_same_v<T, float>) {
    hn::StoreU(hn::DemoteTo(hn::Rebind<float, DD>(), v), hn::Rebind<float, DD>(), dst);
  } else {
    hn::StoreU(v, d, dst);
  }
}

// The first `count` (< lanes) values of x, the rest `neutral`.
template <class T>
HWY_INLINE VD LoadTail(DD d, const T* HWY_RESTRICT x, std::size_t count, double neutral) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  // Masked loads do not touch the memory of the masked-off lanes.
  const hn::Rebind<T, DD> dt;
  const auto loaded = hn::MaskedLoad(hn::FirstN(dt, count), dt, x);
  VD v;
  if constexpr (std::is_same_v<T, float>) {
    v = hn::PromoteTo(d, loaded);
  } else {
    v = loaded;
  }
  return hn::IfThenElse(hn::FirstN(d, count), v, hn::Set(d, neutral));
#else
  HWY_ALIGN double lanes[hn::MaxLanes(DD())];
  for (std::size_t k = 0; k < hn::Lanes(d); ++k)
    lanes[k] = k < count ? static_cast<double>(x[k]) : neutral;
  return hn::Load(d, lanes);
#endif
}

// kExp2Sixteenths[bits & 15] per lane.
HWY_INLINE VI Exp2Sixteenths(DI di, VI bits) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // One two-register permute, which reads the low 4 bits of each index (Highway 1.0 has no
  // two-table lookup).
  return VI{_mm512_permutex2var_epi64(hn::Load(di, kExp2Sixteenths).raw, bits.raw,
                                      hn::Load(di, kExp2Sixteenths + 8).raw)};
#else
  return hn::GatherIndex(di, kExp2Sixteenths, hn::And(bits, hn::Set(di, 15)));
#endif
}

// e^r = s e^x: s = 2^(k / 16), x = r - k ln2 / 16 with k = round(16 r / ln2); needs
// kExpMin <= r <= 709. kNegated: the split of -r, with y = -x in place of x (no negation of r; the
// values are those of the split of -r, exactly, since rounding is symmetric).
struct Split {
  VD s, x;
};
template <bool kNegated = false>
HWY_INLINE Split ExpSplit(DD d, VD r) {
  const DI di;
  const VD scale = hn::Set(d, 16 * kInvLn2), magic = hn::Set(d, kRoundMagic);
  const VD rounded = kNegated ? hn::NegMulAdd(r, scale, magic) : hn::MulAdd(r, scale, magic);
  const VD k = hn::Sub(rounded, magic);
  const VD hi = hn::Set(d, kLn2Hi / 16), lo = hn::Set(d, kLn2Lo / 16);
  const VD x = kNegated ? hn::MulAdd(k, lo, hn::MulAdd(k, hi, r))
                        : hn::NegMulAdd(k, lo, hn::NegMulAdd(k, hi, r));
  const VI bits = hn::BitCast(di, rounded);  // k + 2^51 in the low bits
  return {hn::BitCast(d, hn::Add(Exp2Sixteenths(di, bits), hn::ShiftLeft<48>(bits))), x};
}

// P(x) = 1/2 + x Q(x), (e^x - 1 - x) / x^2 on |x| <= ln2 / 32; kNegated: P(-x).
template <bool kNegated = false>
HWY_INLINE VD ExpPoly(DD d, VD x) {
  const auto c = [d](int i) {
    return hn::Set(d, kNegated && i % 2 == 1 ? -kExpPoly[i] : kExpPoly[i]);
  };
  VD q = hn::Set(d, kNegated ? -kExpPoly[3] : kExpPoly[3]);
  for (int i = 2; i >= 0; --i)
    q = hn::MulAdd(q, x, c(i));
  return kNegated ? hn::NegMulAdd(q, x, hn::Set(d, 0.5)) : hn::MulAdd(q, x, hn::Set(d, 0.5));
}

// e^r for |r| <= 709 (e^logvar of a validated logvar); kNegated: e^-r.
template <bool kNegated = false>
HWY_INLINE VD ExpOf(DD d, VD r) {
  const Split e = ExpSplit<kNegated>(d, r);
  const VD x2 = hn::Mul(e.x, e.x), p = ExpPoly<kNegated>(d, e.x);
  // s (1 + x + x^2 P(x)); negated, x = -y.
  const VD expm1 = kNegated ? hn::MulSub(x2, p, e.x) : hn::MulAdd(x2, p, e.x);
  return hn::MulAdd(e.s, expm1, e.s);
}

// e^rc - 1 - r with rc = r, or r clamped to kExpMin (then e^rc is invisible beside 1 + |r|);
// needs rc <= 709.
HWY_INLINE VD Expm1MinusXOf(DD d, VD rc, VD r) {
  const Split e = ExpSplit(d, rc);
  const VD one = hn::Set(d, 1.0);
  // s e^x - 1 - r = s x^2 P(x) + (s (1 + x) - (1 + r)); with k = 0, s = 1 and x = r exactly, so
  // the second part is exactly 0 and f = x^2 P(x), accurate relative to itself.
  const VD rest = hn::MulSub(e.s, hn::Add(e.x, one), hn::Add(r, one));
  return hn::MulAdd(e.s, hn::Mul(hn::Mul(e.x, e.x), ExpPoly(d, e.x)), rest);
}

// f(r) = e^r - 1 - r per lane, for any r of two validated log variances (|r| <= 1382).
HWY_INLINE VD Expm1MinusX(DD d, VD r) {
  if (HWY_UNLIKELY(!hn::AllFalse(d, hn::Gt(r, hn::Set(d, kExpm1Max))))) {
    HWY_ALIGN double lanes[hn::MaxLanes(DD())];
    hn::Store(r, d, lanes);
    for (std::size_t k = 0; k < hn::Lanes(d); ++k)
      lanes[k] = expm1_minus_x(lanes[k]);
    return hn::Load(d, lanes);
  }
  return Expm1MinusXOf(d, hn::Max(r, hn::Set(d, kExpMin)), r);
}

// The reduction of log1p(delta) = k ln2 + f - s (f - R(s)), from delta and u = 1 + delta, each
// rounded once from the exact value (u a positive normal double): u = 2^k m with m in
// [sqrt(2) / 2, sqrt(2)), Highway's Log reduction (hwy/contrib/math); f = m - 1, exact, and where
// k = 0 it is delta itself, without u's rounding; s = f / (f + 2).
struct Log1pParts {
  VD k, f, s, f_minus_r;  // f_minus_r: f - R(s)
};
HWY_INLINE Log1pParts ReduceLog1p(DD d, VD delta, VD u) {
  const DI di;
  const VI ubits = hn::BitCast(di, u);
  const VI shifted = hn::Add(ubits, hn::Set(di, 0x3ff0000000000000 - 0x3fe6a09e00000000));
  const VI exponent = hn::And(shifted, hn::Set(di, static_cast<std::int64_t>(0xfff0000000000000)));
  const VD m = hn::BitCast(d, hn::Add(hn::Sub(ubits, exponent), hn::Set(di, 0x3ff0000000000000)));
  const VD k = hn::Sub(hn::ConvertTo(d, hn::ShiftRight<52>(shifted)), hn::Set(d, 1023.0));
  const VD f = hn::IfThenElse(hn::Eq(k, hn::Zero(d)), delta, hn::Sub(m, hn::Set(d, 1.0)));
  const VD s = hn::Div(f, hn::Add(f, hn::Set(d, 2.0)));
  const VD z = hn::Mul(s, s);
  const VD w = hn::Mul(z, z);
  const auto c = [d](int i) { return hn::Set(d, kLogPoly[i]); };
  const VD even = hn::MulAdd(hn::MulAdd(hn::MulAdd(c(6), w, c(4)), w, c(2)), w, c(0));
  const VD odd = hn::MulAdd(hn::MulAdd(c(5), w, c(3)), w, c(1));
  return {k, f, s, hn::Sub(f, hn::MulAdd(even, z, hn::Mul(odd, w)))};
}

// (delta - f) - k ln2: the part of delta - log1p(delta) outside s (f - R); 0 where k = 0.
HWY_INLINE VD DeltaMinusReduced(DD d, const Log1pParts& r, VD delta) {
  const VD rest = hn::NegMulAdd(r.k, hn::Set(d, kLn2Hi), hn::Sub(delta, r.f));
  return hn::NegMulAdd(r.k, hn::Set(d, kLn2Lo), rest);
}

// delta - log1p(delta) >= 0 = (delta - f - k ln2) + s (f - R), for delta and u as ReduceLog1p's.
HWY_INLINE VD DeltaMinusLog1p(DD d, VD delta, VD u) {
  const Log1pParts r = ReduceLog1p(d, delta, u);
  return hn::MulAdd(r.s, r.f_minus_r, DeltaMinusReduced(d, r, delta));
}

// log variance from the parameter.
HWY_INLINE VD LogVar(DD d, DiagParam param, VD x) {
  switch (param) {
    case DiagParam::stddev: {
      const VD l = hn::Log(d, x);
      return hn::Add(l, l);
    }
    case DiagParam::var:
      return hn::Log(d, x);
    case DiagParam::logvar:
      return x;
    case DiagParam::precision:
      return hn::Neg(hn::Log(d, x));
  }
  return x;
}

// diff^2 / variance + f, the variance given by the parameter x.
HWY_INLINE VD AddMeanTerm(DD d, DiagParam param, VD diff, VD x, VD f) {
  switch (param) {
    case DiagParam::stddev: {
      const VD a = hn::Div(diff, x);
      return hn::MulAdd(a, a, f);
    }
    case DiagParam::var:
      return hn::Add(hn::Div(hn::Mul(diff, diff), x), f);
    case DiagParam::logvar:
      return hn::MulAdd(hn::Mul(diff, diff), ExpOf<true>(d, x), f);
    case DiagParam::precision:
      return hn::MulAdd(hn::Mul(diff, diff), x, f);
  }
  return f;
}

// A scale parameter whose variance is 1, to pad buffers with terms of exactly 0.
constexpr double Neutral(DiagParam param) {
  return param == DiagParam::logvar ? 0.0 : 1.0;
}

// The pairings, each a functor giving the 2 KL terms of a vector of h from the loaded parameters
// (q's mean and scale are not loaded, and are 0 and 1, when kTwoSided is false). kGuarded: the
// functor skips a check per vector and leaves in `guard` what RowsOf must check per group of rows
// instead; a group that fails it is computed again by Checked, whose terms are the same bits
// wherever the check passes.

// q = N(0, I), p logvar: the VAE term, one exponential.
struct StandardLogvar {
  static constexpr bool kTwoSided = false, kGuarded = false;
  using Checked = StandardLogvar;
  HWY_INLINE VD operator()(DD d, VD mean, VD logvar, VD, VD, VD&) const {
    return hn::MulAdd(mean, mean, Expm1MinusXOf(d, logvar, logvar));
  }
};

// p and q logvar: two exponentials. r = lv_p - lv_q can exceed kExpm1Max (|lv| <= 691 each),
// which Expm1MinusX checks per vector, at the cost of a compare and a branch (8% of the time of a
// 128 x 32 call): unchecked, the largest r goes to `guard` for a check per group of rows.
template <bool kChecked = false>
struct LogvarPair {
  static constexpr bool kTwoSided = true, kGuarded = !kChecked;
  using Checked = LogvarPair<true>;
  HWY_INLINE VD operator()(DD d, VD p_mean, VD p_lv, VD q_mean, VD q_lv, VD& guard) const {
    const VD diff = hn::Sub(p_mean, q_mean);
    const VD r = hn::Sub(p_lv, q_lv);
    VD f;
    if constexpr (kChecked) {
      f = Expm1MinusX(d, r);
    } else {
      guard = hn::Max(guard, r);
      f = Expm1MinusXOf(d, hn::Max(r, hn::Set(d, kExpMin)), r);
    }
    return hn::MulAdd(hn::Mul(diff, diff), ExpOf<true>(d, q_lv), f);
  }
};

// f from the ratio u of the parameters and delta = u - 1: rho = u^2 for stddev, else u.
template <DiagParam P>
HWY_INLINE VD RatioF(DD d, VD delta, VD u) {
  const VD h = DeltaMinusLog1p(d, delta, u);
  if constexpr (P == DiagParam::stddev) {
    return hn::MulAdd(delta, delta, hn::Add(h, h));
  } else {
    return h;
  }
}

// q = N(0, I), p stddev, var or precision: no exponential, and no division but R's.
template <DiagParam P>
struct StandardRatio {
  static constexpr bool kTwoSided = false, kGuarded = false;
  using Checked = StandardRatio;
  HWY_INLINE VD operator()(DD d, VD mean, VD scale, VD, VD, VD&) const {
    const VD one = hn::Set(d, 1.0);
    VD f;
    if constexpr (P == DiagParam::precision) {  // u = 1 / precision
      const VD u = hn::Div(one, scale);
      f = RatioF<P>(d, hn::Mul(hn::Sub(one, scale), u), u);
    } else {
      f = RatioF<P>(d, hn::Sub(scale, one), scale);
    }
    return hn::MulAdd(mean, mean, f);
  }
};

// The mixed form: each side's log variance from its own parameter.
struct Mixed {
  static constexpr bool kTwoSided = true, kGuarded = false;
  using Checked = Mixed;
  DiagParam pp, qp;
  HWY_INLINE VD operator()(DD d, VD p_mean, VD p_scale, VD q_mean, VD q_scale, VD&) const {
    const VD r = hn::Sub(LogVar(d, pp, p_scale), LogVar(d, qp, q_scale));
    return AddMeanTerm(d, qp, hn::Sub(p_mean, q_mean), q_scale, Expm1MinusX(d, r));
  }
};

// The lane sums of `lanes` row accumulators, row r's at acc + r * lanes, as one vector (lane r:
// row r's sum), each row's lanes added in one fixed order so that its bits do not depend on its
// group (docs/kernels.md).
template <DiagParam P, bool kCheckRange>
struct RatioPair {
  static constexpr bool kTwoSided = true, kGuarded = false;
  using Checked = RatioPair;
  HWY_INLINE VD operator()(DD d, VD p_mean, VD p_scale, VD q_mean, VD q_scale, VD& guard) const {
    constexpr bool kPrecision = P == DiagParam::precision;
    const VD num = kPrecision ? q_scale : p_scale, den = kPrecision ? p_scale : q_scale;
    const VD inv = hn::Div(hn::Set(d, 1.0), den);
    const VD u = hn::Mul(num, inv);
    const VD diff = hn::Sub(p_mean, q_mean);
    const auto normal =
        hn::And(hn::Ge(u, hn::Set(d, 0x1p-1022)), hn::Le(u, hn::Set(d, 0x1.fffffffffffffp+1023)));
    if (kCheckRange && HWY_UNLIKELY(!hn::AllTrue(d, normal))) {
      return Mixed{P, P}(d, p_mean, p_scale, q_mean, q_scale, guard);
    }
    // Equal parameters give delta = 0 exactly, so KL(p || p) is exactly 0.
    const VD f = RatioF<P>(d, hn::Mul(hn::Sub(num, den), inv), u);
    if constexpr (P == DiagParam::stddev) {
      const VD a = hn::Mul(diff, inv);
      return hn::MulAdd(a, a, f);
    } else {
      return hn::MulAdd(hn::Mul(diff, diff), kPrecision ? q_scale : inv, f);
    }
  }
};

// The four parameter arrays of one row, or of one chunk buffer.
template <class T>
struct RowPtrs {
  const T* p_mean;
  const T* p_scale;
  const T* q_mean;  // unused when q = N(0, I)
  const T* q_scale;
};

template <class T, class Terms>
HWY_INLINE VD TermsAt(DD d, const Terms& terms, const RowPtrs<T>& row, std::int64_t h, VD& guard) {
  const VD pm = LoadWide(d, row.p_mean + h), ps = LoadWide(d, row.p_scale + h);
  if constexpr (!Terms::kTwoSided) {
    return terms(d, pm, ps, pm, ps, guard);
  } else {
    return terms(d, pm, ps, LoadWide(d, row.q_mean + h), LoadWide(d, row.q_scale + h), guard);
  }
}

// The sums of the lanes of `lanes` row accumulators, row r's at acc + r * lanes, as one vector
// (lane r: row r's sum). Every row's lanes are added in one fixed order (on 8 lanes:
// ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7))), so a row's sum does not depend on the rows
// it is grouped with: 23 operations for 8 rows, where a horizontal sum per row takes 6 and a
// move out of the vector.
HWY_INLINE VD SumRows(DD d, const double* HWY_RESTRICT acc) {
  constexpr std::size_t kLanes = hn::MaxLanes(DD());
  const auto row = [&](std::size_t r) { return hn::Load(d, acc + r * kLanes); };
#if HWY_TARGET == HWY_SCALAR
  return row(0);
#else
  // Rows a and b: [a's halves added | b's halves added].
  const auto halves = [d](VD a, VD b) {
    return hn::Add(hn::ConcatLowerLower(d, b, a), hn::ConcatUpperUpper(d, b, a));
  };
  // Lanes 2j and 2j + 1 of a and of b added, per 128-bit block: [a's | b's].
  const auto pairs = [d](VD a, VD b) {
    return hn::Add(hn::InterleaveLower(d, a, b), hn::InterleaveUpper(d, a, b));
  };
  if constexpr (kLanes == 2) {
    return pairs(row(0), row(1));
  } else if constexpr (kLanes == 4) {
    return pairs(halves(row(0), row(2)), halves(row(1), row(3)));
  } else if constexpr (kLanes == 8) {
    const VD y1 = pairs(halves(row(0), row(4)), halves(row(1), row(5)));  // blocks 0, 1, 4, 5
    const VD y2 = pairs(halves(row(2), row(6)), halves(row(3), row(7)));  // blocks 2, 3, 6, 7
    return hn::OddEvenBlocks(hn::Add(y2, hn::SwapAdjacentBlocks(y2)),
                             hn::Add(y1, hn::SwapAdjacentBlocks(y1)));
  } else {
    HWY_ALIGN double sums[kLanes];
    for (std::size_t r = 0; r < kLanes; ++r)
      sums[r] = hn::GetLane(hn::SumOfLanes(d, row(r)));
    return hn::Load(d, sums);
  }
#endif
}

template <class T, class Terms>
void RowsOf(const Terms& terms, DiagParam pp, DiagParam qp, const DiagGaussians<T>& p,
            const DiagGaussians<T>* q, std::int64_t lo, std::int64_t hi,
            double* HWY_RESTRICT out) noexcept {
  const DD d;
  constexpr std::int64_t kLanes = hn::MaxLanes(DD());
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dims = p.mean.shape[1];
  constexpr bool kTwoSided = Terms::kTwoSided;
  // Row steps of the four arrays (0 for a side with one row, broadcast), column strides.
  const std::array<const T*, 4> base{p.mean.data, p.scale.data, kTwoSided ? q->mean.data : nullptr,
                                     kTwoSided ? q->scale.data : nullptr};
  std::array<std::int64_t, 4> step{p.mean.strides[0], p.scale.strides[0], 0, 0},
      stride{p.mean.strides[1], p.scale.strides[1], 0, 0};
  if (p.mean.shape[0] == 1) step[0] = step[1] = 0;
  if constexpr (kTwoSided) {
    const bool once = q->mean.shape[0] == 1;
    step[2] = once ? 0 : q->mean.strides[0], step[3] = once ? 0 : q->scale.strides[0];
    stride[2] = q->mean.strides[1], stride[3] = q->scale.strides[1];
  }
  const bool contiguous =
      stride[0] == 1 && stride[1] == 1 && (!kTwoSided || (stride[2] == 1 && stride[3] == 1));
  const double pad_p = Neutral(pp), pad_q = Neutral(qp);
  const std::int64_t whole = dims / lanes * lanes;

  const auto row_at = [&](std::int64_t i) {
    return RowPtrs<T>{base[0] + i * step[0], base[1] + i * step[1],
                      kTwoSided ? base[2] + i * step[2] : nullptr,
                      kTwoSided ? base[3] + i * step[3] : nullptr};
  };
  // The terms of a contiguous row's last partial vector.
  const auto tail_terms = [&](const auto& fn, const RowPtrs<T>& row, VD& guard) {
    const auto count = static_cast<std::size_t>(dims - whole);
    const VD pm = LoadTail(d, row.p_mean + whole, count, 0.0);
    const VD ps = LoadTail(d, row.p_scale + whole, count, pad_p);
    if constexpr (kTwoSided) {
      return fn(d, pm, ps, LoadTail(d, row.q_mean + whole, count, 0.0),
                LoadTail(d, row.q_scale + whole, count, pad_q), guard);
    } else {
      return fn(d, pm, ps, pm, ps, guard);
    }
  };
  HWY_ALIGN T buf[4][kRowwiseDiagStridedChunk];
  const RowPtrs<T> chunk{buf[0], buf[1], buf[2], buf[3]};
  // The accumulator of row i: its terms summed per lane in h order.
  const auto row_terms = [&](const auto& fn, std::int64_t i, VD& guard) {
    const RowPtrs<T> row = row_at(i);
    VD acc = hn::Zero(d);
    if (contiguous) {
      for (std::int64_t h = 0; h < whole; h += lanes)
        acc = hn::Add(acc, TermsAt(d, fn, row, h, guard));
      return whole < dims ? hn::Add(acc, tail_terms(fn, row, guard)) : acc;
    }
    // Strided: chunks gathered into the buffers, padded to whole vectors.
    const T* src[4] = {row.p_mean, row.p_scale, row.q_mean, row.q_scale};
    const T pad[4] = {T(0), static_cast<T>(pad_p), T(0), static_cast<T>(pad_q)};
    for (std::int64_t h0 = 0; h0 < dims; h0 += kRowwiseDiagStridedChunk) {
      const std::int64_t count = std::min(kRowwiseDiagStridedChunk, dims - h0);
      const std::int64_t padded = (count + lanes - 1) / lanes * lanes;
      for (int a = 0; a < (kTwoSided ? 4 : 2); ++a) {
        for (std::int64_t k = 0; k < count; ++k)
          buf[a][k] = src[a][(h0 + k) * stride[a]];
        std::fill(buf[a] + count, buf[a] + padded, pad[a]);
      }
      for (std::int64_t h = 0; h < padded; h += lanes)
        acc = hn::Add(acc, TermsAt(d, fn, chunk, h, guard));
    }
    return acc;
  };
  // Short contiguous rows go in pairs, i and i + lanes / 2 side by side (the same sums as one at a
  // time): twice the independent work between two lane sums (kRowwiseDiagPairMaxD).
  const std::int64_t half_group = lanes / 2;
  const bool pairs = contiguous && half_group > 0 && dims <= kRowwiseDiagPairMaxD;

  // Rows in groups of `lanes`, a short group padded with zero accumulators.
  HWY_ALIGN double acc[kLanes * kLanes];
  HWY_ALIGN double sums[kLanes];
  for (std::int64_t i0 = lo; i0 < hi; i0 += lanes) {
    const std::int64_t rows = std::min(lanes, hi - i0);
    VD guard = hn::Set(d, kExpMin);
    if (pairs && rows == lanes) {
      for (std::int64_t r = 0; r < half_group; ++r) {
        const RowPtrs<T> a = row_at(i0 + r), b = row_at(i0 + r + half_group);
        VD acc_a = hn::Zero(d), acc_b = hn::Zero(d);
        for (std::int64_t h = 0; h < whole; h += lanes) {
          acc_a = hn::Add(acc_a, TermsAt(d, terms, a, h, guard));
          acc_b = hn::Add(acc_b, TermsAt(d, terms, b, h, guard));
        }
        if (whole < dims) {
          acc_a = hn::Add(acc_a, tail_terms(terms, a, guard));
          acc_b = hn::Add(acc_b, tail_terms(terms, b, guard));
        }
        hn::Store(acc_a, d, acc + r * lanes);
        hn::Store(acc_b, d, acc + (r + half_group) * lanes);
      }
    } else {
      for (std::int64_t r = 0; r < lanes; ++r)
        hn::Store(r < rows ? row_terms(terms, i0 + r, guard) : hn::Zero(d), d, acc + r * lanes);
    }
    if constexpr (Terms::kGuarded) {
      if (HWY_UNLIKELY(!hn::AllFalse(d, hn::Gt(guard, hn::Set(d, kExpm1Max))))) {
        const typename Terms::Checked checked;
        for (std::int64_t r = 0; r < rows; ++r)
          hn::Store(row_terms(checked, i0 + r, guard), d, acc + r * lanes);
      }
    }
    // Every term is >= 0 up to round-off; the clamp only guards the sign of KL.
    const VD half = hn::Mul(hn::Max(SumRows(d, acc), hn::Zero(d)), hn::Set(d, 0.5));
    if (rows == lanes) {
      hn::StoreU(half, d, out + (i0 - lo));
    } else {
      hn::Store(half, d, sums);
      std::copy(sums, sums + rows, out + (i0 - lo));
    }
  }
}

template <class T>
void Rows(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo, std::int64_t hi,
          double* HWY_RESTRICT out) noexcept {
  constexpr bool kDouble = std::is_same_v<T, double>;
  const DiagParam pp = p.param;
  if (q == nullptr) {
    switch (pp) {
      case DiagParam::logvar:
        return RowsOf(StandardLogvar{}, pp, pp, p, q, lo, hi, out);
      case DiagParam::stddev:
        return RowsOf(StandardRatio<DiagParam::stddev>{}, pp, pp, p, q, lo, hi, out);
      case DiagParam::var:
        return RowsOf(StandardRatio<DiagParam::var>{}, pp, pp, p, q, lo, hi, out);
      case DiagParam::precision:
        return RowsOf(StandardRatio<DiagParam::precision>{}, pp, pp, p, q, lo, hi, out);
    }
    return;
  }
  const DiagParam qp = q->param;
  if (pp == qp) {
    switch (pp) {
      case DiagParam::logvar:
        return RowsOf(LogvarPair<>{}, pp, qp, p, q, lo, hi, out);
      case DiagParam::stddev:
        return RowsOf(RatioPair<DiagParam::stddev, kDouble>{}, pp, qp, p, q, lo, hi, out);
      case DiagParam::var:
        return RowsOf(RatioPair<DiagParam::var, kDouble>{}, pp, qp, p, q, lo, hi, out);
      case DiagParam::precision:
        return RowsOf(RatioPair<DiagParam::precision, kDouble>{}, pp, qp, p, q, lo, hi, out);
    }
  }
  RowsOf(Mixed{pp, qp}, pp, qp, p, q, lo, hi, out);
}

}  // namespace rowwise_diag_detail

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // GAUSSKL_CPU_ROWWISE_DIAG_INL_H_
