// The SIMD row-wise diagonal KL kernel (rowwise_diag.hpp), compiled once per Highway target by
// rowwise_diag.cpp.
//
// Design: h is the lane dimension and every lane is a double (float input is widened on load, as
// everywhere in the library). Per vector of h:
//   r    = log v - log w              one Log of the scale ratio when both sides are stddev, both
//                                     var or both precision; else each side's log variance from
//                                     its parameter: 2 Log(s), Log(v), logvar itself, -Log(prec)
//   term = (mu - nu)^2 lam + f(r)     lam = 1 / w: via one division, Exp(-logvar), or precision
//   f(r) = e^r - 1 - r                Expm1MinusX below: one branch-free reduction + polynomial
//                                     for every lane, relative accuracy near r = 0, exactly 0 at 0
// and one vector accumulator per row, summed across lanes at the end of the row. Rows are read
// in place: a contiguous row (unit column strides) is loaded directly and only its last, partial
// vector goes through a small buffer; a strided row is gathered chunk by chunk into the same
// buffer. Buffers are padded with a neutral Gaussian (mean 0, variance 1) whose terms are exactly
// 0, so every h lands in the same lane either way and strided input gives the same bits.
//
// Why this shape (AVX3, N = 4096, D = 256, one thread, bench/bench_rowwise_kernel.cpp): the
// divisions (one explicit, one inside each Log) bound the stddev || stddev case, so it takes one
// Log of a ratio (1 + 1 divisions, 3.3 ns per element) rather than a Log per side (3, 5.6 ns);
// the scalar form's series / expm1 split at |r| = 0.1 needs both in any vector whose lanes
// straddle the cut, and branching on the mask mispredicts on random data, so f is one
// polynomial of the reduced argument for all lanes (stddev 5.6 -> 3.3 ns together with the ratio;
// the VAE case, logvar || N(0, I), 1.6 -> 1.1 ns). The scalar libm path took 35 and 14 ns.
//
// Accuracy (double lanes): Highway's Log is within 4 ulp and Exp within 1 ulp
// (hwy/contrib/math/math-inl.h); f is within a few ulp relative for |r| < 0.35 and ~30 ulp
// beyond (Expm1MinusX). Measured against the long-double reference (tests/cpu/
// rowwise_diag_test.cpp): max |got - ref| / (|ref| + 1) ~ 4e-15 for float and double input.

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
#include <iterator>
#include <type_traits>

#include "cpu/rowwise_diag.hpp"
#include "cpu/stable.hpp"
#include "gausskl/types.hpp"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace rowwise_diag_detail {

using DD = hn::ScalableTag<double>;
using VD = hn::Vec<DD>;

// h per chunk of a strided row: a multiple of every target's lane count, and small enough that
// the four chunk buffers (8 KiB of double) stay on the stack and in L1.
constexpr std::int64_t kChunk = 256;

// Highway's Exp is exact in its exponent arithmetic up to here; e^1000 is already inf, so
// Exp(-logvar) is clamped to it (validation bounds |logvar| by ~691 anyway).
constexpr double kExpMax = 1000;
// e^r - 1 - r: past kExpm1Max a vector takes the scalar path (the term overflows to inf near
// r = 709.78, as libm's); below kExpm1Min e^r is 0 in double, and r is clamped there before the
// range reduction so that 2^q stays within the two-factor scaling below.
constexpr double kExpm1Max = 700;
constexpr double kExpm1Min = -800;
// ln 2 split so that q * kLn2Hi is exact for |q| < 2^20 (fdlibm's constants), and 1 / ln 2.
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kInvLn2 = 1.44269504088896338700e+00;

template <class T>
HWY_INLINE VD LoadWide(DD d, const T* HWY_RESTRICT x) {
  if constexpr (std::is_same_v<T, float>) {
    return hn::PromoteTo(d, hn::LoadU(hn::Rebind<float, DD>(), x));
  } else {
    return hn::LoadU(d, x);
  }
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

// diff^2 / variance, the variance given by the parameter x.
HWY_INLINE VD MeanTerm(DD d, DiagParam param, VD diff, VD x) {
  switch (param) {
    case DiagParam::stddev: {
      const VD a = hn::Div(diff, x);
      return hn::Mul(a, a);
    }
    case DiagParam::var:
      return hn::Div(hn::Mul(diff, diff), x);
    case DiagParam::logvar:
      return hn::Mul(hn::Mul(diff, diff), hn::Exp(d, hn::Min(hn::Neg(x), hn::Set(d, kExpMax))));
    case DiagParam::precision:
      return hn::Mul(hn::Mul(diff, diff), x);
  }
  return diff;
}

// 2^e for integer lanes -1022 <= e <= 1023.
HWY_INLINE VD Pow2(DD d, hn::Vec<hn::Rebind<std::int32_t, DD>> e) {
  const hn::Rebind<std::int32_t, DD> di32;
  const hn::Rebind<std::int64_t, DD> di64;
  return hn::BitCast(d, hn::ShiftLeft<52>(hn::PromoteTo(di64, hn::Add(e, hn::Set(di32, 1023)))));
}

// f(r) = e^r - 1 - r per lane, without branches on r. With q = round(r / ln 2) and
// x = r - q ln 2 (|x| <= ln(2) / 2; x = r exactly when q = 0):
//   g(x) = e^x - 1 - x = x^2 P(x),  P(x) = sum_k x^k / (k + 2)!  (Taylor to 1/13!: the first
//          term dropped, 2 x^12 / 15! < 2^-57 relative at |x| = ln(2) / 2)
//   f(r) = g(r) when q = 0 (|r| < 0.35): relative accuracy of a few ulp however small r is, no
//          cancellation (near-duplicates, and exactly 0 at r = 0);
//   f(r) = 2^q (1 + x + g(x)) - 1 - r otherwise, where f >= 0.05 and the cancellation against
//          e^r and 1 + |r| costs at most ~30 ulp relative (stable.hpp's scalar form, which cuts
//          at |r| = 0.1, loses up to 20).
// One polynomial for every lane: the scalar series / expm1 split of stable.hpp would need both
// in a vector whose lanes straddle the cut, and a branch on it mispredicts on random data.
HWY_INLINE VD Expm1MinusX(DD d, VD r) {
  if (HWY_UNLIKELY(!hn::AllFalse(d, hn::Gt(r, hn::Set(d, kExpm1Max))))) {
    HWY_ALIGN double lanes[hn::MaxLanes(DD())];
    hn::Store(r, d, lanes);
    for (std::size_t k = 0; k < hn::Lanes(d); ++k)
      lanes[k] = expm1_minus_x(lanes[k]);
    return hn::Load(d, lanes);
  }
  const VD rc = hn::Max(r, hn::Set(d, kExpm1Min));
  const VD qf = hn::Round(hn::Mul(rc, hn::Set(d, kInvLn2)));
  VD x = hn::NegMulAdd(qf, hn::Set(d, kLn2Hi), rc);
  x = hn::NegMulAdd(qf, hn::Set(d, kLn2Lo), x);
  // 1/13!, 1/12!, ..., 1/2!.
  constexpr double kInvFact[] = {1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0,
                                 1.0 / 3628800.0,    1.0 / 362880.0,    1.0 / 40320.0,
                                 1.0 / 5040.0,       1.0 / 720.0,       1.0 / 120.0,
                                 1.0 / 24.0,         1.0 / 6.0,         1.0 / 2.0};
  VD poly = hn::Set(d, kInvFact[0]);
  for (std::size_t k = 1; k < std::size(kInvFact); ++k)
    poly = hn::MulAdd(poly, x, hn::Set(d, kInvFact[k]));
  const VD g = hn::Mul(hn::Mul(poly, x), x);
  // 2^q as two factors: q >= -1155 after the clamp, below the smallest single exponent.
  const auto q = hn::DemoteTo(hn::Rebind<std::int32_t, DD>(), qf);
  const auto q_half = hn::ShiftRight<1>(q);
  const VD scale = hn::Mul(Pow2(d, q_half), Pow2(d, hn::Sub(q, q_half)));
  const VD reduced = hn::Sub(hn::Sub(scale, hn::Set(d, 1.0)), r);
  const VD f = hn::MulAdd(scale, hn::Add(x, g), reduced);
  return hn::IfThenElse(hn::Eq(qf, hn::Zero(d)), g, f);
}

// The four parameter arrays of one row, or of one chunk buffer.
template <class T>
struct RowPtrs {
  const T* p_mean;
  const T* p_scale;
  const T* q_mean;  // unused when q = N(0, I)
  const T* q_scale;
};

// How the log variances of a row pair are computed.
enum class Pairing {
  standard,  // q = N(0, I): r = lv(p), lam = 1
  ratio,     // p and q both stddev, both var or both precision: r = k Log(ratio), one Log
  mixed,     // anything else (logvar on either side): r = lv(p) - lv(q)
};

inline Pairing PairingOf(DiagParam pp, bool standard_q, DiagParam qp) {
  if (standard_q) return Pairing::standard;
  return pp == qp && pp != DiagParam::logvar ? Pairing::ratio : Pairing::mixed;
}

// The general form of the terms: each side's log variance from its own parameter.
HWY_INLINE VD MixedTerms(DD d, DiagParam pp, DiagParam qp, VD p_scale, VD q_scale, VD diff) {
  const VD r = hn::Sub(LogVar(d, pp, p_scale), LogVar(d, qp, q_scale));
  return hn::Add(MeanTerm(d, qp, diff, q_scale), Expm1MinusX(d, r));
}

// The 2 KL terms of h .. h + lanes - 1.
//
// Pairing::ratio takes one division and one Log where the mixed form takes a division and two
// Logs (each with a division inside, the costliest instruction here), and its r is more accurate
// too: r = k log(s_p / s_q) rounds the ratio once instead of cancelling two logs. For double
// input the ratio of two var or precision parameters can leave the normal range (variances span
// 1e-300 .. 1e300); such a vector is computed in the mixed form instead.
template <class T>
HWY_INLINE VD Terms(DD d, Pairing pairing, DiagParam pp, DiagParam qp, const RowPtrs<T>& row,
                    std::int64_t h) {
  const VD p_scale = LoadWide(d, row.p_scale + h);
  VD diff = LoadWide(d, row.p_mean + h);
  if (pairing == Pairing::standard) {
    return hn::MulAdd(diff, diff, Expm1MinusX(d, LogVar(d, pp, p_scale)));
  }
  const VD q_scale = LoadWide(d, row.q_scale + h);
  diff = hn::Sub(diff, LoadWide(d, row.q_mean + h));
  if (pairing == Pairing::mixed) return MixedTerms(d, pp, qp, p_scale, q_scale, diff);
  // ratio = variance ratio's square root (stddev) or itself (var, precision), inv its divisor's
  // inverse.
  const bool precision = pp == DiagParam::precision;
  const VD inv = hn::Div(hn::Set(d, 1.0), precision ? p_scale : q_scale);
  const VD ratio = hn::Mul(precision ? q_scale : p_scale, inv);
  if (!std::is_same_v<T, float> &&
      HWY_UNLIKELY(!hn::AllTrue(d, hn::And(hn::Ge(ratio, hn::Set(d, 0x1p-1022)),
                                           hn::Le(ratio, hn::Set(d, 0x1.fffffffffffffp+1023)))))) {
    return MixedTerms(d, pp, qp, p_scale, q_scale, diff);
  }
  // inv is rounded, so ratio is 1 only to round-off when the scales are equal: force r = 0
  // there, which keeps KL(p || p) exactly 0.
  VD r = hn::IfThenZeroElse(hn::Eq(p_scale, q_scale), hn::Log(d, ratio));
  VD mean_term;
  switch (pp) {
    case DiagParam::stddev: {
      r = hn::Add(r, r);
      const VD a = hn::Mul(diff, inv);
      mean_term = hn::Mul(a, a);
      break;
    }
    case DiagParam::var:
      mean_term = hn::Mul(hn::Mul(diff, diff), inv);
      break;
    default:  // precision
      mean_term = hn::Mul(hn::Mul(diff, diff), q_scale);
      break;
  }
  return hn::Add(mean_term, Expm1MinusX(d, r));
}

// A scale parameter whose variance is 1, to pad buffers with terms of exactly 0.
template <class T>
constexpr T Neutral(DiagParam param) {
  return param == DiagParam::logvar ? T(0) : T(1);
}

template <class T>
void Rows(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo, std::int64_t hi,
          double* HWY_RESTRICT out) noexcept {
  const DD d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dims = p.mean.shape[1];
  const bool standard_q = q == nullptr;
  const DiagParam pp = p.param, qp = standard_q ? DiagParam::logvar : q->param;
  const Pairing pairing = PairingOf(pp, standard_q, qp);
  const bool p_once = p.mean.shape[0] == 1, q_once = standard_q || q->mean.shape[0] == 1;
  const bool contiguous = p.mean.strides[1] == 1 && p.scale.strides[1] == 1 &&
                          (standard_q || (q->mean.strides[1] == 1 && q->scale.strides[1] == 1));

  HWY_ALIGN T buf[4][kChunk];
  const RowPtrs<T> chunk{buf[0], buf[1], buf[2], buf[3]};
  // Copies h0 .. h0 + count - 1 of the row into the buffers, padded to whole vectors.
  const auto gather = [&](const RowPtrs<T>& row, const std::array<std::int64_t, 4>& stride,
                          std::int64_t h0, std::int64_t count) {
    const std::int64_t padded = (count + lanes - 1) / lanes * lanes;
    const T* src[4] = {row.p_mean, row.p_scale, row.q_mean, row.q_scale};
    const T pad[4] = {T(0), Neutral<T>(pp), T(0), Neutral<T>(qp)};
    for (int a = 0; a < (standard_q ? 2 : 4); ++a) {
      for (std::int64_t k = 0; k < count; ++k)
        buf[a][k] = src[a][(h0 + k) * stride[a]];
      std::fill(buf[a] + count, buf[a] + padded, pad[a]);
    }
    return padded;
  };

  for (std::int64_t i = lo; i < hi; ++i) {
    const std::int64_t ip = p_once ? 0 : i, iq = q_once ? 0 : i;
    RowPtrs<T> row{p.mean.data + ip * p.mean.strides[0], p.scale.data + ip * p.scale.strides[0],
                   nullptr, nullptr};
    std::array<std::int64_t, 4> stride{p.mean.strides[1], p.scale.strides[1], 0, 0};
    if (!standard_q) {
      row.q_mean = q->mean.data + iq * q->mean.strides[0];
      row.q_scale = q->scale.data + iq * q->scale.strides[0];
      stride[2] = q->mean.strides[1];
      stride[3] = q->scale.strides[1];
    }
    VD acc = hn::Zero(d);
    if (contiguous) {
      std::int64_t h = 0;
      for (; h + lanes <= dims; h += lanes)
        acc = hn::Add(acc, Terms(d, pairing, pp, qp, row, h));
      if (h < dims) {
        gather(row, stride, h, dims - h);
        acc = hn::Add(acc, Terms(d, pairing, pp, qp, chunk, 0));
      }
    } else {
      for (std::int64_t h0 = 0; h0 < dims; h0 += kChunk) {
        const std::int64_t padded = gather(row, stride, h0, std::min(kChunk, dims - h0));
        for (std::int64_t h = 0; h < padded; h += lanes)
          acc = hn::Add(acc, Terms(d, pairing, pp, qp, chunk, h));
      }
    }
    // Every term is >= 0 up to round-off; the clamp only guards the sign of KL.
    const double two_kl = hn::GetLane(hn::SumOfLanes(d, acc));
    out[i] = 0.5 * std::max(two_kl, 0.0);
  }
}

}  // namespace rowwise_diag_detail

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // GAUSSKL_CPU_ROWWISE_DIAG_INL_H_
