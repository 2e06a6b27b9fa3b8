// The SIMD kernel of rowwise/ukr_diag_backward.hpp, compiled once per Highway target by
// rowwise/ukr_diag_backward.cpp.
//
// h is the lane dimension and every lane is a double (float input is widened on load, float
// gradients narrowed on store). Per vector of h: lam and E from the parameters as the pairing
// allows (rowwise/ukr_diag_backward.hpp), then each wanted gradient times the row's weight grad[i],
// stored to its row or added to its sum. The formulas need a reciprocal only for std and var q
// (lam), precision p (v), and each side's phi'(x) = k / x when that side's scale gradient is
// wanted (divisions bound the std and var cases). No logarithms: the forward's r = log v - log w
// appears only as e^r - 1 = E. Contiguous rows are loaded and stored in place; a strided row, or
// the last partial vector of a row, goes through a small buffer padded with a neutral Gaussian
// (mean 0, variance 1), whose gradients are exactly 0.

// Per-target include guard: toggled so that foreach_target.h re-includes this file per target.
#if defined(GAUSSKL_CPU_ROWWISE_DIAG_BACKWARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GAUSSKL_CPU_ROWWISE_DIAG_BACKWARD_INL_H_
#undef GAUSSKL_CPU_ROWWISE_DIAG_BACKWARD_INL_H_
#else
#define GAUSSKL_CPU_ROWWISE_DIAG_BACKWARD_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cpu/rowwise/grad_sink.hpp"
#include "cpu/rowwise/ukr_diag-inl.h"
#include "cpu/rowwise/ukr_diag_backward.hpp"
#include "gausskl/types.hpp"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace rowwise_diag_backward_detail {

using DD = hn::ScalableTag<double>;
using VD = hn::Vec<DD>;
using rowwise_diag_detail::LoadWide;

// e^x - 1 per lane from the forward kernel's table exponential (rowwise/ukr_diag-inl.h), e^x =
// s e^y: s (e^y - 1) + (s - 1), exact at 0 (s = 1, y = x) and relative to itself near it; libm
// past x = 700 (inf from 709.78, as the exact value). A third cheaper than a degree-13 Taylor
// polynomial (VAE backward, 4096 x 256: 1.45 -> 1.06 ms on one thread).
HWY_INLINE VD Expm1(DD d, VD x) {
  namespace fwd = rowwise_diag_detail;
  if (HWY_UNLIKELY(!hn::AllFalse(d, hn::Gt(x, hn::Set(d, fwd::kExpm1Max))))) {
    HWY_ALIGN double lanes[hn::MaxLanes(DD())];
    hn::Store(x, d, lanes);
    for (std::size_t k = 0; k < hn::Lanes(d); ++k)
      lanes[k] = std::expm1(lanes[k]);
    return hn::Load(d, lanes);
  }
  const fwd::Split e = fwd::ExpSplit(d, hn::Max(x, hn::Set(d, fwd::kExpMin)));
  const VD em1 = hn::MulAdd(hn::Mul(e.x, e.x), fwd::ExpPoly(d, e.x), e.x);
  return hn::MulAdd(e.s, em1, hn::Sub(e.s, hn::Set(d, 1.0)));
}

// How E = v / w - 1 is formed (rowwise/ukr_diag_backward.hpp).
enum class Pairing {
  standard,  // q = N(0, I): against w = 1, from p's parameter alone
  same,      // both std, both var or both precision: from the parameters' difference
  logvar,    // both logvar: expm1 of the difference
  mixed,     // anything else: v lam - 1
};

// dKL/dmu_p (= -dKL/dmu_q), dKL/dx_p and dKL/dx_q of one vector of h, each times the row's
// weight (g = grad[i], gh = g / 2).
struct Lanes {
  VD mean, p_scale, q_scale;
};

// phi'(x) / 2 times g, without the 1 / x: std 2 / x, var 1 / x, logvar 1, precision -1 / x.
HWY_INLINE VD HalfSlope(DiagParam param, VD g, VD gh) {
  switch (param) {
    case DiagParam::stddev:
      return g;
    case DiagParam::var:
    case DiagParam::logvar:
      return gh;
    case DiagParam::precision:
      return hn::Neg(gh);
  }
  return gh;
}

// kPScale, kQScale: whether dKL/dx_p, dKL/dx_q are wanted (the lanes not computed are left 0).
// The N(0, I) pairing has p's parameterization as a template parameter (kStandardP): with it a
// runtime value, the compiler computes the reciprocal a logvar p does not need and discards it
// (a division per vector, a quarter of the VAE case's time).
template <Pairing kPairing, bool kPScale, bool kQScale, DiagParam kStandardP = DiagParam::logvar>
HWY_INLINE Lanes Gradients(DD d, DiagParam pp, DiagParam qp, VD mu, VD xp, VD nu, VD xq, VD g,
                           VD gh) {
  const VD one = hn::Set(d, 1.0);
  const VD zero = hn::Zero(d);
  Lanes out{zero, zero, zero};
  if constexpr (kPairing == Pairing::standard) pp = kStandardP;
  // Known at compile time: no reciprocal is formed and the switches fold (with the table
  // exponential for lam, the learned prior's backward at 128 x 32 went from 11.1 to 8.9 us).
  if constexpr (kPairing == Pairing::logvar) pp = qp = DiagParam::logvar;
  // 1 / x_p: v itself for precision, and phi'(x_p) for std, var and precision.
  const bool need_recip_p = pp == DiagParam::precision || (kPScale && pp != DiagParam::logvar);
  const VD recip_p = need_recip_p ? hn::Div(one, xp) : one;
  if constexpr (kPairing == Pairing::standard) {
    VD e;
    switch (kStandardP) {
      case DiagParam::stddev:
        // s^2 - 1 as (s - 1)(s + 1): relative accuracy near s = 1 on every target (an FMA's
        // single rounding is two roundings where the target emulates it).
        e = hn::Mul(hn::Sub(xp, one), hn::Add(xp, one));
        break;
      case DiagParam::var:
        e = hn::Sub(xp, one);
        break;
      case DiagParam::logvar:
        e = Expm1(d, xp);
        break;
      default:  // precision: (1 - pi) / pi
        e = hn::Mul(hn::Sub(one, xp), recip_p);
        break;
    }
    out.mean = hn::Mul(g, mu);
    if constexpr (kPScale) {
      const VD slope = HalfSlope(kStandardP, g, gh);
      out.p_scale = hn::Mul(kStandardP == DiagParam::logvar ? e : hn::Mul(e, recip_p), slope);
    }
    return out;
  } else {
    const VD diff = hn::Sub(mu, nu);
    // 1 / x_q: lam itself for std and var, and phi'(x_q) (w for precision) for q's gradient.
    const bool need_recip_q =
        qp == DiagParam::stddev || qp == DiagParam::var || (kQScale && qp == DiagParam::precision);
    const VD recip_q = need_recip_q ? hn::Div(one, xq) : one;
    VD lam;
    switch (qp) {
      case DiagParam::stddev:
        lam = hn::Mul(recip_q, recip_q);
        break;
      case DiagParam::var:
        lam = recip_q;
        break;
      case DiagParam::logvar:  // the forward's table exponential (|x| <= 691 once validated)
        lam = rowwise_diag_detail::ExpOf<true>(d, xq);
        break;
      default:  // precision
        lam = xq;
        break;
    }
    VD e;
    if constexpr (kPairing == Pairing::same) {
      switch (pp) {
        case DiagParam::stddev: {  // (s / t)^2 - 1 = a (a + 2), a = (s - t) / t
          const VD a = hn::Mul(hn::Sub(xp, xq), recip_q);
          e = hn::Mul(a, hn::Add(a, hn::Set(d, 2.0)));
          break;
        }
        case DiagParam::var:
          e = hn::Mul(hn::Sub(xp, xq), recip_q);
          break;
        default:  // precision: (lam - pi) / pi
          e = hn::Mul(hn::Sub(xq, xp), recip_p);
          break;
      }
    } else if constexpr (kPairing == Pairing::logvar) {
      e = Expm1(d, hn::Sub(xp, xq));
    } else {
      VD v;
      switch (pp) {
        case DiagParam::stddev:
          v = hn::Mul(xp, xp);
          break;
        case DiagParam::var:
          v = xp;
          break;
        case DiagParam::logvar:
          v = rowwise_diag_detail::ExpOf(d, xp);
          break;
        default:  // precision
          v = recip_p;
          break;
      }
      e = hn::MulSub(v, lam, one);
    }
    const VD m = hn::Mul(diff, lam);
    out.mean = hn::Mul(g, m);
    if constexpr (kPScale) {
      const VD slope = HalfSlope(pp, g, gh);
      out.p_scale = hn::Mul(pp == DiagParam::logvar ? e : hn::Mul(e, recip_p), slope);
    }
    if constexpr (kQScale) {
      const VD slope = hn::Neg(HalfSlope(qp, g, gh));
      const VD sum = hn::MulAdd(diff, m, e);  // E + Q
      out.q_scale = hn::Mul(qp == DiagParam::logvar ? sum : hn::Mul(sum, recip_q), slope);
    }
    return out;
  }
}

// Lanes h .. h + count - 1 of x[k * stride], widened, padded with `pad`.
template <class T>
HWY_INLINE VD Load(DD d, const T* HWY_RESTRICT x, std::int64_t stride, std::int64_t h,
                   std::int64_t count, T pad) {
  if (stride == 1 && count == static_cast<std::int64_t>(hn::Lanes(d))) return LoadWide(d, x + h);
  HWY_ALIGN T buf[hn::MaxLanes(DD())];
  for (std::int64_t k = 0; k < static_cast<std::int64_t>(hn::Lanes(d)); ++k)
    buf[k] = k < count ? x[(h + k) * stride] : pad;
  return LoadWide(d, buf);
}

// Stores v narrowed to T at dst (a whole vector).
template <class T>
HWY_INLINE void StoreWide(DD d, VD v, T* HWY_RESTRICT dst) {
  if constexpr (std::is_same_v<T, float>) {
    hn::StoreU(hn::DemoteTo(hn::Rebind<float, DD>(), v), hn::Rebind<float, DD>(), dst);
  } else {
    hn::StoreU(v, d, dst);
  }
}

// Writes the first `count` lanes of v to dst[0, count) (narrowed to T) or adds them to sum.
template <class T>
HWY_INLINE void Put(DD d, const GradSink<T>& sink, std::int64_t row_offset, std::int64_t h,
                    std::int64_t count, VD v) {
  const bool whole = count == static_cast<std::int64_t>(hn::Lanes(d));
  if (sink.rows) {
    T* HWY_RESTRICT dst = sink.rows + row_offset + h;
    if (whole) {
      StoreWide(d, v, dst);
    } else if constexpr (std::is_same_v<T, float>) {
      const hn::Rebind<float, DD> df;
      HWY_ALIGN float buf[hn::MaxLanes(DD())];
      hn::Store(hn::DemoteTo(df, v), df, buf);
      std::copy(buf, buf + count, dst);
    } else {
      HWY_ALIGN double buf[hn::MaxLanes(DD())];
      hn::Store(v, d, buf);
      std::copy(buf, buf + count, dst);
    }
  } else {
    double* HWY_RESTRICT dst = sink.sum + h;
    if (whole) {
      hn::StoreU(hn::Add(hn::LoadU(d, dst), v), d, dst);
    } else {
      HWY_ALIGN double buf[hn::MaxLanes(DD())];
      hn::Store(v, d, buf);
      for (std::int64_t k = 0; k < count; ++k)
        dst[k] += buf[k];
    }
  }
}

// A scale parameter whose variance is 1, to pad with gradients of exactly 0.
template <class T>
constexpr T Neutral(DiagParam param) {
  return param == DiagParam::logvar ? T(0) : T(1);
}

template <Pairing kPairing, bool kPScale, bool kQScale, DiagParam kStandardP, class T>
void RowsOf(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo, std::int64_t hi,
            const T* HWY_RESTRICT grad, const SideSinks<T>& sp, const SideSinks<T>& sq) {
  const DD d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dims = p.mean.shape[1];
  constexpr bool kStandard = kPairing == Pairing::standard;
  const DiagParam pp = p.param, qp = kStandard ? DiagParam::logvar : q->param;
  const bool p_mean = sp.mean.wanted(), q_mean = !kStandard && sq.mean.wanted();
  const bool p_once = p.mean.shape[0] == 1, q_once = kStandard || q->mean.shape[0] == 1;
  const T p_pad = Neutral<T>(pp), q_pad = Neutral<T>(qp);
  // Rows read and written in place (every parameter contiguous along h, every wanted gradient
  // per row): whole vectors go through a loop with no per-vector branch on layout or sink.
  const auto in_place = [](const View<T, 2>& a, const GradSink<T>& sink) {
    return a.strides[1] == 1 && sink.sum == nullptr;
  };
  const bool direct = in_place(p.mean, sp.mean) && in_place(p.scale, sp.scale) &&
                      (kStandard || (in_place(q->mean, sq.mean) && in_place(q->scale, sq.scale)));
  const std::int64_t whole = direct ? dims / lanes * lanes : 0;
  for (std::int64_t i = lo; i < hi; ++i) {
    const VD g = hn::Set(d, static_cast<double>(grad[i]));
    const VD gh = hn::Mul(g, hn::Set(d, 0.5));
    const std::int64_t ip = p_once ? 0 : i, iq = q_once ? 0 : i;
    const T* p_mean_row = p.mean.data + ip * p.mean.strides[0];
    const T* p_scale_row = p.scale.data + ip * p.scale.strides[0];
    const T* q_mean_row = kStandard ? nullptr : q->mean.data + iq * q->mean.strides[0];
    const T* q_scale_row = kStandard ? nullptr : q->scale.data + iq * q->scale.strides[0];
    const std::int64_t p_row = ip * dims, q_row = iq * dims;
    // The gradients of one vector of h: each parameter by load(row, stride, pad), each wanted
    // gradient to put(sink, row offset, v).
    const auto vector_of = [&](const auto& load, const auto& put) {
      const VD mu = load(p_mean_row, p.mean.strides[1], T(0));
      const VD xp = load(p_scale_row, p.scale.strides[1], p_pad);
      VD nu = hn::Zero(d), xq = hn::Zero(d);
      if constexpr (!kStandard) {
        nu = load(q_mean_row, q->mean.strides[1], T(0));
        xq = load(q_scale_row, q->scale.strides[1], q_pad);
      }
      const Lanes out =
          Gradients<kPairing, kPScale, kQScale, kStandardP>(d, pp, qp, mu, xp, nu, xq, g, gh);
      if (p_mean) put(sp.mean, p_row, out.mean);
      if constexpr (kPScale) put(sp.scale, p_row, out.p_scale);
      if constexpr (!kStandard) {
        if (q_mean) put(sq.mean, q_row, hn::Neg(out.mean));
        if constexpr (kQScale) put(sq.scale, q_row, out.q_scale);
      }
    };
    std::int64_t h = 0;
    for (; h < whole; h += lanes) {
      vector_of([&](const T* x, std::int64_t, T) { return LoadWide(d, x + h); },
                [&](const GradSink<T>& sink, std::int64_t row, VD v) {
                  StoreWide(d, v, sink.rows + row + h);
                });
    }
    for (; h < dims; h += lanes) {
      const std::int64_t count = std::min(lanes, dims - h);
      vector_of(
          [&](const T* x, std::int64_t stride, T pad) { return Load(d, x, stride, h, count, pad); },
          [&](const GradSink<T>& sink, std::int64_t row, VD v) { Put(d, sink, row, h, count, v); });
    }
  }
}

template <Pairing kPairing, DiagParam kStandardP = DiagParam::logvar, class T>
void RowsWanted(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo,
                std::int64_t hi, const T* grad, const SideSinks<T>& sp, const SideSinks<T>& sq) {
  const bool p_scale = sp.scale.wanted();
  const bool q_scale = kPairing != Pairing::standard && sq.scale.wanted();
  if (p_scale && q_scale) {
    return RowsOf<kPairing, true, true, kStandardP>(p, q, lo, hi, grad, sp, sq);
  }
  if (p_scale) return RowsOf<kPairing, true, false, kStandardP>(p, q, lo, hi, grad, sp, sq);
  if (q_scale) return RowsOf<kPairing, false, true, kStandardP>(p, q, lo, hi, grad, sp, sq);
  RowsOf<kPairing, false, false, kStandardP>(p, q, lo, hi, grad, sp, sq);
}

template <class T>
void Rows(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo, std::int64_t hi,
          const T* grad, const SideSinks<T>& sp, const SideSinks<T>& sq) noexcept {
  if (!q) {
    constexpr Pairing kS = Pairing::standard;
    switch (p.param) {
      case DiagParam::stddev:
        return RowsWanted<kS, DiagParam::stddev>(p, q, lo, hi, grad, sp, sq);
      case DiagParam::var:
        return RowsWanted<kS, DiagParam::var>(p, q, lo, hi, grad, sp, sq);
      case DiagParam::logvar:
        return RowsWanted<kS, DiagParam::logvar>(p, q, lo, hi, grad, sp, sq);
      case DiagParam::precision:
        return RowsWanted<kS, DiagParam::precision>(p, q, lo, hi, grad, sp, sq);
    }
    return;
  }
  if (p.param == q->param) {
    if (p.param == DiagParam::logvar)
      return RowsWanted<Pairing::logvar>(p, q, lo, hi, grad, sp, sq);
    return RowsWanted<Pairing::same>(p, q, lo, hi, grad, sp, sq);
  }
  RowsWanted<Pairing::mixed>(p, q, lo, hi, grad, sp, sq);
}

}  // namespace rowwise_diag_backward_detail

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // GAUSSKL_CPU_ROWWISE_DIAG_BACKWARD_INL_H_
