// Highway runtime dispatch of the row-wise kernel of the other kinds (diag_simd.hpp): compiled once
// per target, the best one the CPU supports picked at run time. The loop is instantiated per kind
// and per pairing of parameterizations (both sides alike, or the mixed form reading them at run
// time), so that the inner loop has no branch on either; rows are read in place as the KL kernel
// reads them (its loads, exponential and delta - log1p(delta), rowwise/ukr_diag-inl.h), strided
// rows through chunk buffers, padding lanes with terms of exactly 0.
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/divergence/diag_simd.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu/divergence/diag_simd.hpp"
#include "cpu/rowwise/ukr_diag-inl.h"
#include "cpu/tunables.hpp"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace diag_simd_detail {

using rowwise_diag_detail::DD;
using rowwise_diag_detail::VD;
using MD = hn::Mask<DD>;
// Mixed parameterizations: each side's read at run time.
constexpr int kMixed = -1;

// sigma and 1 / sigma from the parameter, as diag_terms computes them (logvar by the KL kernel's
// exponential).
HWY_INLINE void SigmaInv(DD d, DiagParam param, VD x, VD& sigma, VD& inv) {
  const VD one = hn::Set(d, 1.0);
  switch (param) {
    case DiagParam::stddev:
      sigma = x, inv = hn::Div(one, x);
      return;
    case DiagParam::var:
      sigma = hn::Sqrt(x), inv = hn::Div(one, sigma);
      return;
    case DiagParam::logvar: {
      const VD half = hn::Mul(x, hn::Set(d, 0.5));
      sigma = rowwise_diag_detail::ExpOf(d, half), inv = rowwise_diag_detail::ExpOf<true>(d, half);
      return;
    }
    case DiagParam::precision:
      inv = hn::Sqrt(x), sigma = hn::Div(one, inv);
      return;
  }
}

// sigma_1 - sigma_2 (diag.cpp's sigma_difference): from the parameters' own difference where
// both sides share the parameterization P, else of the sigmas.
template <int P>
HWY_INLINE VD SigmaDifference(DD d, VD x1, VD s1, VD i1, VD x2, VD s2, VD i2) {
  if constexpr (P == static_cast<int>(DiagParam::stddev)) {
    return hn::Sub(x1, x2);
  } else if constexpr (P == static_cast<int>(DiagParam::var)) {
    return hn::Div(hn::Sub(x1, x2), hn::Add(s1, s2));
  } else if constexpr (P == static_cast<int>(DiagParam::logvar)) {
    const VD quarter = hn::Set(d, 0.25);
    const VD e = rowwise_diag_detail::ExpOf(d, hn::Mul(quarter, hn::Add(x1, x2)));
    const VD sh = hn::Sinh(d, hn::Mul(quarter, hn::Sub(x1, x2)));
    return hn::Mul(e, hn::Add(sh, sh));
  } else if constexpr (P == static_cast<int>(DiagParam::precision)) {
    return hn::Div(hn::Mul(hn::Sub(x2, x1), hn::Mul(s1, s2)), hn::Add(i1, i2));
  } else {
    (void)d, (void)x1, (void)i1, (void)x2, (void)i2;
    return hn::Sub(s1, s2);
  }
}

// log1p(delta) and delta - log1p(delta) >= 0 from the KL kernel's one reduction of u = 1 + delta
// (rowwise_diag_detail::ReduceLog1p): delta itself for f where k = 0, so both keep their relative
// accuracy near 0; u may carry a few roundings of its own (it is read only where k != 0, where
// both are far from 0). u must be a positive normal double.
struct LogPair {
  VD log1p, minus;  // log1p(delta), delta - log1p(delta)
};
HWY_INLINE LogPair Log1pPair(DD d, VD delta, VD u) {
  using rowwise_diag_detail::kLn2Hi;
  using rowwise_diag_detail::kLn2Lo;
  const rowwise_diag_detail::Log1pParts r = rowwise_diag_detail::ReduceLog1p(d, delta, u);
  const VD corr = hn::Mul(r.s, r.f_minus_r);  // s (f - R)
  // log1p = k ln2 + f - s (f - R); delta - log1p = (delta - f - k ln2) + s (f - R).
  const VD log1p =
      hn::MulAdd(r.k, hn::Set(d, kLn2Hi), hn::MulAdd(r.k, hn::Set(d, kLn2Lo), hn::Sub(r.f, corr)));
  return {log1p, hn::Add(rowwise_diag_detail::DeltaMinusReduced(d, r, delta), corr)};
}

// a + b with the same bits for b + a: the compiler may contract a product into an addition's
// multiply-add (which rounds one side only), never through the min and max.
HWY_INLINE VD SymmetricSum(VD a, VD b) {
  return hn::Add(hn::Min(a, b), hn::Max(a, b));
}

// What every vector of a call shares.
struct Params {
  DiagParam pp, qp;
  double alpha, beta, inv_beta;
};

// The terms of one vector of h, the scalar form's (wasserstein2) or twice them (the row's sum is
// halved once: kHalved), and for renyi the lanes whose mixed variance is left to the scalar form.
template <Divergence K>
constexpr bool kHalved = K != Divergence::wasserstein2;

template <Divergence K, int P>
HWY_INLINE VD Terms(DD d, const Params& c, VD m1, VD x1, VD m2, VD x2, MD& bad) {
  VD s1 = hn::Zero(d), i1 = s1, s2 = s1, i2 = s1;
  SigmaInv(d, P == kMixed ? c.pp : static_cast<DiagParam>(P), x1, s1, i1);
  SigmaInv(d, P == kMixed ? c.qp : static_cast<DiagParam>(P), x2, s2, i2);
  const VD ds = SigmaDifference<P>(d, x1, s1, i1, x2, s2, i2);
  const VD delta = hn::Sub(m1, m2);
  if constexpr (K == Divergence::wasserstein2) {
    (void)bad;
    return hn::MulAdd(delta, delta, hn::Mul(ds, ds));
  } else if constexpr (K == Divergence::jeffreys) {
    (void)bad;
    const VD z1 = hn::Mul(delta, i1), z2 = hn::Mul(delta, i2);
    const VD st = hn::Mul(ds, hn::Add(i1, i2));  // 2 sinh t
    // Bitwise symmetric in the swap of p and q: z1 and z2 swap (up to sign), ds changes sign.
    return hn::Add(SymmetricSum(hn::Mul(z1, z1), hn::Mul(z2, z2)), hn::Mul(st, st));
  } else if constexpr (K == Divergence::bhattacharyya || K == Divergence::hellinger) {
    (void)bad;
    // 1/2 delta^2 / (v1 + v2) + log cosh t, by the larger sigma factored out (nothing overflows);
    // every operation symmetric in the swap of p and q, bitwise.
    const VD inv_big = hn::Div(hn::Set(d, 1.0), hn::Max(s1, s2));
    const VD a = hn::Mul(s1, inv_big), b = hn::Mul(s2, inv_big);
    const VD z = hn::Mul(delta, inv_big), dn = hn::Mul(ds, inv_big);
    const VD quad = hn::Div(hn::Mul(z, z), SymmetricSum(hn::Mul(a, a), hn::Mul(b, b)));
    const VD ab = hn::Mul(a, b);
    const VD log_cosh = hn::Log1p(d, hn::Div(hn::Mul(dn, dn), hn::Add(ab, ab)));
    return hn::MulAdd(quad, hn::Set(d, 0.5), log_cosh);
  } else {
    static_assert(K == Divergence::renyi);
    // With e = sigma_p / sigma_q - 1 (from ds, exact near p = q): mu = v_p / v_q - 1 = e (2 + e),
    // r = log(v_p / v_q) = 2 log1p(e), mu - log1p(mu) = 2 (e - log1p(e)) + e^2; the mixed
    // variance over v_q 1 + beta mu.
    const VD one = hn::Set(d, 1.0), beta = hn::Set(d, c.beta), inv_beta = hn::Set(d, c.inv_beta);
    const VD e = hn::Mul(ds, i2);
    const VD mu = hn::Mul(e, hn::Add(e, hn::Set(d, 2.0)));
    const VD bmu = hn::Mul(beta, mu);
    const VD mixed = hn::Add(one, bmu);
    bad = hn::Or(bad, hn::Not(hn::Ge(mixed, hn::Set(d, 0x1p-1000))));
    const VD z = hn::Mul(delta, i2);
    const VD mean = hn::Div(hn::Mul(hn::Mul(hn::Set(d, c.alpha), z), z), mixed);
    const LogPair ratio = Log1pPair(d, e, hn::Mul(s1, i2));
    const LogPair mix = Log1pPair(d, bmu, mixed);
    // |mu| < 1/2: m(mu) - m(beta mu) / beta, m(u) = u - log1p(u) (scalar.hpp's
    // renyi_variance_term); beyond, [log1p(beta mu) - beta r] / beta, clamped at >= 0.
    const VD m_mu = hn::MulAdd(e, e, hn::Add(ratio.minus, ratio.minus));
    const VD near = hn::NegMulAdd(mix.minus, inv_beta, m_mu);
    const VD r = hn::Add(ratio.log1p, ratio.log1p);
    VD far = hn::Mul(hn::NegMulAdd(beta, r, mix.log1p), inv_beta);
    far = hn::IfThenElse(hn::Gt(far, hn::Zero(d)), far, hn::Zero(d));
    const VD term = hn::IfThenElse(hn::Lt(hn::Abs(mu), hn::Set(d, 0.5)), near, far);
    return hn::Add(mean, term);
  }
}

// The scale parameter whose variance is 1: padding lanes then have terms of exactly 0.
HWY_INLINE double Neutral(DiagParam param) {
  return param == DiagParam::logvar ? 0.0 : 1.0;
}

template <Divergence K, int P, class T>
std::int64_t RowsOf(const Params& c, const DiagGaussians<T>& p, const DiagGaussians<T>& q,
                    std::int64_t lo, std::int64_t hi, double* HWY_RESTRICT out) noexcept {
  using rowwise_diag_detail::LoadTail;
  using rowwise_diag_detail::LoadWide;
  const DD d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dims = p.mean.shape[1];
  const T* const base[4] = {p.mean.data, p.scale.data, q.mean.data, q.scale.data};
  std::int64_t step[4] = {p.mean.strides[0], p.scale.strides[0], q.mean.strides[0],
                          q.scale.strides[0]};
  const std::int64_t stride[4] = {p.mean.strides[1], p.scale.strides[1], q.mean.strides[1],
                                  q.scale.strides[1]};
  if (p.mean.shape[0] == 1) step[0] = step[1] = 0;
  if (q.mean.shape[0] == 1) step[2] = step[3] = 0;
  const bool contiguous = stride[0] == 1 && stride[1] == 1 && stride[2] == 1 && stride[3] == 1;
  const double pad[4] = {0.0, Neutral(c.pp), 0.0, Neutral(c.qp)};
  const std::int64_t whole = dims / lanes * lanes;
  HWY_ALIGN T buf[4][kRowwiseDiagStridedChunk];
  for (std::int64_t i = lo; i < hi; ++i) {
    const T* row[4];
    for (int a = 0; a < 4; ++a)
      row[a] = base[a] + i * step[a];
    VD acc = hn::Zero(d);
    MD bad = hn::FirstN(d, 0);
    if (contiguous) {
      for (std::int64_t h = 0; h < whole; h += lanes) {
        acc = hn::Add(acc, Terms<K, P>(d, c, LoadWide(d, row[0] + h), LoadWide(d, row[1] + h),
                                       LoadWide(d, row[2] + h), LoadWide(d, row[3] + h), bad));
      }
      if (whole < dims) {
        const auto count = static_cast<std::size_t>(dims - whole);
        acc = hn::Add(acc, Terms<K, P>(d, c, LoadTail(d, row[0] + whole, count, pad[0]),
                                       LoadTail(d, row[1] + whole, count, pad[1]),
                                       LoadTail(d, row[2] + whole, count, pad[2]),
                                       LoadTail(d, row[3] + whole, count, pad[3]), bad));
      }
    } else {
      for (std::int64_t h0 = 0; h0 < dims; h0 += kRowwiseDiagStridedChunk) {
        const std::int64_t count = std::min(kRowwiseDiagStridedChunk, dims - h0);
        const std::int64_t padded = (count + lanes - 1) / lanes * lanes;
        for (int a = 0; a < 4; ++a) {
          for (std::int64_t k = 0; k < count; ++k)
            buf[a][k] = row[a][(h0 + k) * stride[a]];
          std::fill(buf[a] + count, buf[a] + padded, static_cast<T>(pad[a]));
        }
        for (std::int64_t h = 0; h < padded; h += lanes) {
          acc = hn::Add(acc, Terms<K, P>(d, c, LoadWide(d, buf[0] + h), LoadWide(d, buf[1] + h),
                                         LoadWide(d, buf[2] + h), LoadWide(d, buf[3] + h), bad));
        }
      }
    }
    if constexpr (K == Divergence::renyi) {
      if (HWY_UNLIKELY(!hn::AllFalse(d, bad))) return i;
    }
    // A sum of non-negative terms: NaN only from an overflow (scalar.hpp's divergence_of_sum).
    double sum = hn::GetLane(hn::SumOfLanes(d, acc));
    if constexpr (kHalved<K>) sum *= 0.5;
    sum = std::isnan(sum) ? HUGE_VAL : (sum > 0 ? sum : 0.0);
    out[i - lo] = K == Divergence::hellinger ? -std::expm1(-sum) : sum;
  }
  return -1;
}

template <Divergence K, class T>
std::int64_t RowsOfKind(const Params& c, const DiagGaussians<T>& p, const DiagGaussians<T>& q,
                        std::int64_t lo, std::int64_t hi, double* out) noexcept {
  if (c.pp == c.qp) {
    switch (c.pp) {
      case DiagParam::stddev:
        return RowsOf<K, static_cast<int>(DiagParam::stddev)>(c, p, q, lo, hi, out);
      case DiagParam::var:
        return RowsOf<K, static_cast<int>(DiagParam::var)>(c, p, q, lo, hi, out);
      case DiagParam::logvar:
        return RowsOf<K, static_cast<int>(DiagParam::logvar)>(c, p, q, lo, hi, out);
      case DiagParam::precision:
        return RowsOf<K, static_cast<int>(DiagParam::precision)>(c, p, q, lo, hi, out);
    }
  }
  return RowsOf<K, kMixed>(c, p, q, lo, hi, out);
}

template <class T>
std::int64_t Rows(const DiagGaussians<T>& p, const DiagGaussians<T>& q, Divergence kind,
                  double alpha, std::int64_t lo, std::int64_t hi, double* out) noexcept {
  const double beta = 1 - alpha;
  const Params c{p.param, q.param, alpha, beta, kind == Divergence::renyi ? 1 / beta : 0.0};
  switch (kind) {
    case Divergence::jeffreys:
      return RowsOfKind<Divergence::jeffreys>(c, p, q, lo, hi, out);
    case Divergence::bhattacharyya:
      return RowsOfKind<Divergence::bhattacharyya>(c, p, q, lo, hi, out);
    case Divergence::hellinger:
      return RowsOfKind<Divergence::hellinger>(c, p, q, lo, hi, out);
    case Divergence::renyi:
      return RowsOfKind<Divergence::renyi>(c, p, q, lo, hi, out);
    case Divergence::wasserstein2:
      return RowsOfKind<Divergence::wasserstein2>(c, p, q, lo, hi, out);
    default:  // kl (the KL kernels), and a kind without a SIMD form: rows to the scalar form
      break;
  }
  return lo < hi ? lo : -1;
}

}  // namespace diag_simd_detail

std::int64_t DiagRowsF32(const DiagGaussians<float>& p, const DiagGaussians<float>& q,
                         Divergence kind, double alpha, std::int64_t lo, std::int64_t hi,
                         double* out) {
  return diag_simd_detail::Rows<float>(p, q, kind, alpha, lo, hi, out);
}
std::int64_t DiagRowsF64(const DiagGaussians<double>& p, const DiagGaussians<double>& q,
                         Divergence kind, double alpha, std::int64_t lo, std::int64_t hi,
                         double* out) {
  return diag_simd_detail::Rows<double>(p, q, kind, alpha, lo, hi, out);
}
const char* DiagSimdTargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(DiagRowsF32);
HWY_EXPORT(DiagRowsF64);
HWY_EXPORT(DiagSimdTargetName);

template <>
std::int64_t divergence_diag_rows_simd<float>(const DiagGaussians<float>& p,
                                              const DiagGaussians<float>& q, Divergence kind,
                                              double alpha, std::int64_t lo, std::int64_t hi,
                                              double* out) noexcept {
  return HWY_DYNAMIC_DISPATCH(DiagRowsF32)(p, q, kind, alpha, lo, hi, out);
}
template <>
std::int64_t divergence_diag_rows_simd<double>(const DiagGaussians<double>& p,
                                               const DiagGaussians<double>& q, Divergence kind,
                                               double alpha, std::int64_t lo, std::int64_t hi,
                                               double* out) noexcept {
  return HWY_DYNAMIC_DISPATCH(DiagRowsF64)(p, q, kind, alpha, lo, hi, out);
}
const char* divergence_diag_simd_target() noexcept {
  return HWY_DYNAMIC_DISPATCH(DiagSimdTargetName)();
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
