// The SIMD kernel of rowwise/ukr_diag_backward.hpp, compiled once per Highway target by
// rowwise/ukr_diag_backward.cpp: double lanes over h, no logarithms (the forward's r appears only
// as E = e^r - 1), a reciprocal only where a parameterization needs it. docs/kernels.md.

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
using rowwise_diag_detail::StoreWide;

// e^x - 1 per lane from the forward kernel's table exponential (rowwise/ukr_diag-inl.h), e^x =
// s e^y: s (e^y - 1) + (s - 1), exact at 0 (s = 1, y = x) and relative to itself near it; libm
// past x = 700 (inf from 709.78, as the exact value). Cheaper than a Taylor polynomial
// (bench/README.md, "Kernel measurements").
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

// grad == nullptr: every row's weight is 1 (the rows' own gradients). S: the sinks' type, T or
// double.
template <Pairing kPairing, bool kPScale, bool kQScale, DiagParam kStandardP, class T, class S>
void RowsOf(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo, std::int64_t hi,
            const T* HWY_RESTRICT grad, const SideSinks<S>& sp, const SideSinks<S>& sq) {
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
  const auto in_place = [](const View<T, 2>& a, const GradSink<S>& sink) {
    return a.strides[1] == 1 && sink.sum == nullptr;
  };
  const bool direct = in_place(p.mean, sp.mean) && in_place(p.scale, sp.scale) &&
                      (kStandard || (in_place(q->mean, sq.mean) && in_place(q->scale, sq.scale)));
  const std::int64_t whole = direct ? dims / lanes * lanes : 0;
  for (std::int64_t i = lo; i < hi; ++i) {
    const VD g = hn::Set(d, grad ? static_cast<double>(grad[i]) : 1.0);
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
                [&](const GradSink<S>& sink, std::int64_t row, VD v) {
                  StoreWide(d, v, sink.rows + row + h);
                });
    }
    for (; h < dims; h += lanes) {
      const std::int64_t count = std::min(lanes, dims - h);
      vector_of(
          [&](const T* x, std::int64_t stride, T pad) { return Load(d, x, stride, h, count, pad); },
          [&](const GradSink<S>& sink, std::int64_t row, VD v) { Put(d, sink, row, h, count, v); });
    }
  }
}

template <Pairing kPairing, DiagParam kStandardP = DiagParam::logvar, class T, class S>
void RowsWanted(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo,
                std::int64_t hi, const T* grad, const SideSinks<S>& sp, const SideSinks<S>& sq) {
  const bool p_scale = sp.scale.wanted();
  const bool q_scale = kPairing != Pairing::standard && sq.scale.wanted();
  if (p_scale && q_scale) {
    return RowsOf<kPairing, true, true, kStandardP>(p, q, lo, hi, grad, sp, sq);
  }
  if (p_scale) return RowsOf<kPairing, true, false, kStandardP>(p, q, lo, hi, grad, sp, sq);
  if (q_scale) return RowsOf<kPairing, false, true, kStandardP>(p, q, lo, hi, grad, sp, sq);
  RowsOf<kPairing, false, false, kStandardP>(p, q, lo, hi, grad, sp, sq);
}

template <class T, class S>
void Rows(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo, std::int64_t hi,
          const T* grad, const SideSinks<S>& sp, const SideSinks<S>& sq) noexcept {
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

// ---- Values with their rows' own gradients (rowwise_diag_with_gradients) ----

// The KL term of one vector of h (as the forward kernel's StandardLogvar and LogvarPair give it)
// and its gradients for grad = 1 (as Gradients above gives them), p and q both logvar (kStandard:
// q = N(0, I)). e^r - 1 - r and e^r - 1 come from one split of r: the exponentials the value
// needs are those the gradients need.
template <bool kStandard>
HWY_INLINE VD LogvarTermAndGradients(DD d, VD mu, VD xp, VD nu, VD xq, Lanes& grads) {
  namespace fwd = rowwise_diag_detail;
  const VD one = hn::Set(d, 1.0), half = hn::Set(d, 0.5);
  const VD r = kStandard ? xp : hn::Sub(xp, xq);
  VD f, e;
  if (!kStandard && HWY_UNLIKELY(!hn::AllFalse(d, hn::Gt(r, hn::Set(d, fwd::kExpm1Max))))) {
    f = fwd::Expm1MinusX(d, r);  // past e^700: libm per lane, as both kernels do
    e = Expm1(d, r);
  } else {
    // A validated logvar is within +-691, so N(0, I)'s r needs no clamp (nor does the forward's).
    const fwd::Split sp = fwd::ExpSplit(d, kStandard ? r : hn::Max(r, hn::Set(d, fwd::kExpMin)));
    const VD x2 = hn::Mul(sp.x, sp.x), poly = fwd::ExpPoly(d, sp.x);
    f = hn::MulAdd(sp.s, hn::Mul(x2, poly), hn::MulSub(sp.s, hn::Add(sp.x, one), hn::Add(r, one)));
    e = hn::MulAdd(sp.s, hn::MulAdd(x2, poly, sp.x), hn::Sub(sp.s, one));
  }
  grads.p_scale = hn::Mul(e, half);
  if constexpr (kStandard) {
    grads.mean = mu;
    return hn::MulAdd(mu, mu, f);
  } else {
    const VD diff = hn::Sub(mu, nu);
    const VD lam = fwd::ExpOf<true>(d, xq);
    const VD m = hn::Mul(diff, lam);
    grads.mean = m;
    grads.q_scale = hn::Mul(hn::MulAdd(diff, m, e), hn::Neg(half));
    return hn::MulAdd(hn::Mul(diff, diff), lam, f);
  }
}

// Rows lo <= i < hi, p and q both logvar, every array with a row per i and contiguous along h: KL
// into out[i - lo], summed as the forward kernel sums (per lane in h order, then SumRows per group
// of rows), and the wanted gradients into their sinks' rows (S: T, or double).
template <bool kStandard, class T, class S>
void LogvarRowsWithGradients(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo,
                             std::int64_t hi, double* HWY_RESTRICT out, const SideSinks<S>& sp,
                             const SideSinks<S>& sq) {
  namespace fwd = rowwise_diag_detail;
  const DD d;
  constexpr std::int64_t kLanes = hn::MaxLanes(DD());
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dims = p.mean.shape[1], whole = dims / lanes * lanes;
  const auto tail = static_cast<std::size_t>(dims - whole);
  S* const sinks[4] = {sp.mean.rows, sp.scale.rows, sq.mean.rows, sq.scale.rows};
  HWY_ALIGN double acc[kLanes * kLanes];
  HWY_ALIGN double sums[kLanes];
  HWY_ALIGN S buf[kLanes];
  for (std::int64_t i0 = lo; i0 < hi; i0 += lanes) {
    const std::int64_t rows = std::min(lanes, hi - i0);
    for (std::int64_t r = 0; r < lanes; ++r) {
      VD a = hn::Zero(d);
      if (r < rows) {
        const std::int64_t i = i0 + r;
        const T* pm = p.mean.data + i * p.mean.strides[0];
        const T* ps = p.scale.data + i * p.scale.strides[0];
        const T* qm = kStandard ? nullptr : q->mean.data + i * q->mean.strides[0];
        const T* qs = kStandard ? nullptr : q->scale.data + i * q->scale.strides[0];
        const auto put = [&](const Lanes& g, std::int64_t h, std::size_t count) {
          const VD v[4] = {g.mean, g.p_scale, hn::Neg(g.mean), g.q_scale};
          for (int k = 0; k < (kStandard ? 2 : 4); ++k) {
            if (!sinks[k]) continue;
            S* dst = sinks[k] + i * dims + h;
            if (count == static_cast<std::size_t>(lanes)) {
              StoreWide(d, v[k], dst);
            } else {
              StoreWide(d, v[k], buf);
              std::copy(buf, buf + count, dst);
            }
          }
        };
        Lanes g{};  // q_scale stays 0 against N(0, I), and put copies it
        for (std::int64_t h = 0; h < whole; h += lanes) {
          const VD mu = LoadWide(d, pm + h), xp = LoadWide(d, ps + h);
          const VD nu = kStandard ? mu : LoadWide(d, qm + h);
          const VD xq = kStandard ? xp : LoadWide(d, qs + h);
          a = hn::Add(a, LogvarTermAndGradients<kStandard>(d, mu, xp, nu, xq, g));
          put(g, h, static_cast<std::size_t>(lanes));
        }
        if (tail) {  // lanes past the row: mean 0, logvar 0, whose terms and gradients are 0
          const VD mu = fwd::LoadTail(d, pm + whole, tail, 0.0);
          const VD xp = fwd::LoadTail(d, ps + whole, tail, 0.0);
          const VD nu = kStandard ? mu : fwd::LoadTail(d, qm + whole, tail, 0.0);
          const VD xq = kStandard ? xp : fwd::LoadTail(d, qs + whole, tail, 0.0);
          a = hn::Add(a, LogvarTermAndGradients<kStandard>(d, mu, xp, nu, xq, g));
          put(g, whole, tail);
        }
      }
      hn::Store(a, d, acc + r * lanes);
    }
    const VD half = hn::Mul(hn::Max(fwd::SumRows(d, acc), hn::Zero(d)), hn::Set(d, 0.5));
    hn::Store(half, d, sums);
    std::copy(sums, sums + rows, out + (i0 - lo));
  }
}

// Rows lo <= i < hi of rowwise_diag_with_gradients: one pass where p and q are both logvar and
// contiguous along h (the VAE's and a learned prior's case), else the forward kernel's rows and
// then this kernel's with every weight 1.
template <class T, class S>
void RowsWithGradients(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo,
                       std::int64_t hi, double* out, const SideSinks<S>& sp,
                       const SideSinks<S>& sq) noexcept {
  const auto logvar_rows = [](const DiagGaussians<T>& g) {
    return g.param == DiagParam::logvar && g.mean.strides[1] == 1 && g.scale.strides[1] == 1;
  };
  if (logvar_rows(p) && (!q || logvar_rows(*q))) {
    if (q) return LogvarRowsWithGradients<false>(p, q, lo, hi, out, sp, sq);
    return LogvarRowsWithGradients<true>(p, q, lo, hi, out, sp, sq);
  }
  rowwise_diag_detail::Rows<T>(p, q, lo, hi, out);
  Rows<T, S>(p, q, lo, hi, nullptr, sp, sq);
}

}  // namespace rowwise_diag_backward_detail

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // GAUSSKL_CPU_ROWWISE_DIAG_BACKWARD_INL_H_
