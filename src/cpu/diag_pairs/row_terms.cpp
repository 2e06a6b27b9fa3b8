// Highway runtime dispatch of diag_row_terms (diag_pairs/row_terms.hpp): this file is compiled once
// per target and the best one the CPU supports is picked at run time. The last, partial vector goes
// through a small buffer padded with 1 (a valid value of every parameterization), and its
// padding lanes are left out of the sums.
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/diag_pairs/row_terms.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "cpu/diag_pairs/row_terms.hpp"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// sigma^2 and 1 / sigma^2 of a vector of parameters, and z with log sigma^2 = sign * log z
// (logvar: none, the parameter is log sigma^2 itself).
template <class D, class V = hn::Vec<D>>
HWY_INLINE void Terms(D d, DiagParam param, V x, V& variance, V& precision) {
  const V one = hn::Set(d, 1.0);
  switch (param) {
    case DiagParam::stddev:
      variance = hn::Mul(x, x);
      precision = hn::Div(one, variance);
      return;
    case DiagParam::var:
      variance = x;
      precision = hn::Div(one, x);
      return;
    case DiagParam::logvar:
      variance = hn::Exp(d, x);
      precision = hn::Exp(d, hn::Neg(x));
      return;
    case DiagParam::precision:
      variance = hn::Div(one, x);
      precision = x;
      return;
  }
}

// Neumaier's compensated sum in each lane: sum + carry is the lanes' sum up to O(n u^2).
template <class V>
struct LaneSum {
  V sum, carry;

  HWY_INLINE void Add(V x) {
    const V t = hn::Add(sum, x);
    const auto big = hn::Ge(hn::Abs(sum), hn::Abs(x));
    carry = hn::Add(carry,
                    hn::IfThenElse(big, hn::Add(hn::Sub(sum, t), x), hn::Add(hn::Sub(x, t), sum)));
    sum = t;
  }
};

// The scalar Neumaier step, for the lanes' sums and carries.
HWY_INLINE void Compensated(double x, double& sum, double& carry) {
  const double t = sum + x;
  carry += std::abs(sum) >= std::abs(x) ? (sum - t) + x : (x - t) + sum;
  sum = t;
}

// a b - fl(a b) exactly: one FMA, or Dekker's product of halves split by Veltkamp's constant
// on targets without FMA (where MulSub would round twice).
template <class D, class V = hn::Vec<D>>
HWY_INLINE V ProductError(D d, V a, V b, V p) {
#if HWY_NATIVE_FMA
  (void)d;
  return hn::MulSub(a, b, p);
#else
  const V split = hn::Set(d, 134217729.0);  // 2^27 + 1
  const V ta = hn::Mul(split, a), tb = hn::Mul(split, b);
  const V a_hi = hn::Sub(ta, hn::Sub(ta, a)), b_hi = hn::Sub(tb, hn::Sub(tb, b));
  const V a_lo = hn::Sub(a, a_hi), b_lo = hn::Sub(b, b_hi);
  const V e =
      hn::Add(hn::Add(hn::Sub(hn::Mul(a_hi, b_hi), p), hn::Mul(a_hi, b_lo)), hn::Mul(a_lo, b_hi));
  return hn::Add(e, hn::Mul(a_lo, b_lo));
#endif
}

// Terms of h per lane multiplied into one product before its logarithm: products of at most
// 512 factors in [sqrt(2) / 2, sqrt(2)] stay within 2^(+-256).
constexpr std::int64_t kProductTerms = 512;

// sum_h log z_h, per lane, from z_h = 2^e_h y_h with y_h in [sqrt(2) / 2, sqrt(2)) (musl's
// reduction): sum_h e_h exactly (small integers in double), and log of the product of the y_h
// carried in double-double (ProductError gives each product's rounding exactly), one Log per
// kProductTerms h instead of one per h. The bound it keeps: each product's Log within 4 ulp,
// 8u |log P| <= 8u sum |log y_h|; the products' own error O(n u^2); and
// abs_bound = ln 2 sum |e_h| + 1.4143 sum |y_h - 1| >= sum_h |log z_h| (|log y| <= |y - 1| / y,
// y >= 0.7071; |log y_h| <= |log z_h|).
template <class D, class V = hn::Vec<D>>
struct LogSum {
  V exponents, abs_exponents, abs_offsets, hi, lo;
  LaneSum<V> logs;
  std::int64_t terms = 0;

  explicit LogSum(D d)
      : exponents(hn::Zero(d)),
        abs_exponents(hn::Zero(d)),
        abs_offsets(hn::Zero(d)),
        hi(hn::Set(d, 1.0)),
        lo(hn::Zero(d)),
        logs{hn::Zero(d), hn::Zero(d)} {}

  HWY_INLINE void Add(D d, V z) {
    const hn::RebindToUnsigned<D> du;
    // musl's log: z's bits shifted so that the exponent field counts from sqrt(2) / 2.
    const auto bits =
        hn::Add(hn::BitCast(du, z), hn::Set(du, 0x3ff0000000000000ull - 0x3fe6a09e00000000ull));
    // The exponent field as a double, exactly: 2^52 + field, minus 2^52 + 1023.
    const V field =
        hn::BitCast(d, hn::Or(hn::ShiftRight<52>(bits), hn::Set(du, 0x4330000000000000ull)));
    const V e = hn::Sub(field, hn::Set(d, 0x1p52 + 1023));
    const V y = hn::BitCast(d, hn::Add(hn::And(bits, hn::Set(du, 0x000fffffffffffffull)),
                                       hn::Set(du, 0x3fe6a09e00000000ull)));
    exponents = hn::Add(exponents, e);
    abs_exponents = hn::Add(abs_exponents, hn::Abs(e));
    abs_offsets = hn::Add(abs_offsets, hn::Abs(hn::Sub(y, hn::Set(d, 1.0))));
    const V p = hn::Mul(hi, y);
    lo = hn::MulAdd(lo, y, ProductError(d, hi, y, p));
    hi = p;
    if (++terms == kProductTerms) Flush(d);
  }

  HWY_INLINE void Flush(D d) {
    logs.Add(hn::Add(hn::Log(d, hi), hn::Div(lo, hi)));
    hi = hn::Set(d, 1.0);
    lo = hn::Zero(d);
    terms = 0;
  }
};

// The sums of two LogSums (or LaneSums) and the variances' range, lanes combined in a fixed
// order: the result depends on the target only.
template <class D, class V = hn::Vec<D>>
struct RowAccumulators {
  LogSum<D> logs[2];
  LaneSum<V> direct[2];
  V abs_direct, min_var, max_var;

  explicit RowAccumulators(D d)
      : logs{LogSum<D>(d), LogSum<D>(d)},
        direct{{hn::Zero(d), hn::Zero(d)}, {hn::Zero(d), hn::Zero(d)}},
        abs_direct(hn::Zero(d)),
        min_var(hn::Set(d, HUGE_VAL)),
        max_var(hn::Zero(d)) {}
};

// RowTerms for one parameterization; two accumulators take alternate vectors, so that the
// products' and sums' dependency chains overlap.
template <DiagParam kParam>
DiagRowSums RowTermsOf(const double* x, std::int64_t n, double* variance, double* precision) {
  const hn::ScalableTag<double> d;
  using V = hn::Vec<decltype(d)>;
  constexpr bool kDirect = kParam == DiagParam::logvar;  // log sigma^2 is the parameter
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  RowAccumulators<decltype(d)> acc(d);
  const auto add = [&](int which, V z) {
    if constexpr (kDirect) {
      acc.direct[which].Add(z);
      acc.abs_direct = hn::Add(acc.abs_direct, hn::Abs(z));
    } else {
      acc.logs[which].Add(d, z);
    }
  };
  std::int64_t h = 0;
  for (; h + 2 * lanes <= n; h += 2 * lanes) {
    const V z0 = hn::LoadU(d, x + h), z1 = hn::LoadU(d, x + h + lanes);
    V v0 = hn::Zero(d), lam0 = hn::Zero(d), v1 = hn::Zero(d), lam1 = hn::Zero(d);
    Terms(d, kParam, z0, v0, lam0);
    Terms(d, kParam, z1, v1, lam1);
    if (variance) {
      hn::StoreU(v0, d, variance + h);
      hn::StoreU(v1, d, variance + h + lanes);
    }
    if (precision) {
      hn::StoreU(lam0, d, precision + h);
      hn::StoreU(lam1, d, precision + h + lanes);
    }
    add(0, z0);
    add(1, z1);
    acc.min_var = hn::Min(acc.min_var, hn::Min(v0, v1));
    acc.max_var = hn::Max(acc.max_var, hn::Max(v0, v1));
  }
  for (; h + lanes <= n; h += lanes) {
    const V z = hn::LoadU(d, x + h);
    V v = hn::Zero(d), lam = hn::Zero(d);
    Terms(d, kParam, z, v, lam);
    if (variance) hn::StoreU(v, d, variance + h);
    if (precision) hn::StoreU(lam, d, precision + h);
    add(0, z);
    acc.min_var = hn::Min(acc.min_var, v);
    acc.max_var = hn::Max(acc.max_var, v);
  }
  constexpr std::size_t kMax = hn::MaxLanes(hn::ScalableTag<double>());
  if (h < n) {
    // Padding lanes hold 1 for stddev, var and precision (log 1 = 0, a factor 1 of the product)
    // and 0 for logvar, and are kept out of the range of variances.
    const std::int64_t rest = n - h;
    HWY_ALIGN double x_tail[kMax], v_tail[kMax], lam_tail[kMax];
    std::fill(x_tail, x_tail + kMax, kDirect ? 0.0 : 1.0);
    std::copy(x + h, x + n, x_tail);
    const V z = hn::Load(d, x_tail);
    V v = hn::Zero(d), lam = hn::Zero(d);
    Terms(d, kParam, z, v, lam);
    hn::Store(v, d, v_tail);
    hn::Store(lam, d, lam_tail);
    if (variance) std::copy(v_tail, v_tail + rest, variance + h);
    if (precision) std::copy(lam_tail, lam_tail + rest, precision + h);
    add(1, z);
    const auto real = hn::FirstN(d, static_cast<std::size_t>(rest));
    acc.min_var = hn::Min(acc.min_var, hn::IfThenElse(real, v, hn::Set(d, HUGE_VAL)));
    acc.max_var = hn::Max(acc.max_var, hn::IfThenElseZero(real, v));
  }
  HWY_ALIGN double sum[2][kMax], carry[2][kMax], exps[2][kMax], abs_exps[2][kMax];
  HWY_ALIGN double offsets[2][kMax], abs_direct[kMax], lo_var[kMax], hi_var[kMax];
  for (int k = 0; k < 2; ++k) {
    LogSum<decltype(d)>& logs = acc.logs[k];
    if (logs.terms > 0) logs.Flush(d);
    const LaneSum<V>& lane = kDirect ? acc.direct[k] : logs.logs;
    hn::Store(lane.sum, d, sum[k]);
    hn::Store(lane.carry, d, carry[k]);
    hn::Store(logs.exponents, d, exps[k]);
    hn::Store(logs.abs_exponents, d, abs_exps[k]);
    hn::Store(logs.abs_offsets, d, offsets[k]);
  }
  hn::Store(acc.abs_direct, d, abs_direct);
  hn::Store(acc.min_var, d, lo_var);
  hn::Store(acc.max_var, d, hi_var);
  double total = 0, total_carry = 0, exponent = 0, abs_exponent = 0, abs_offset = 0, abs_sum = 0;
  DiagRowSums out;
  out.min_variance = n > 0 ? HUGE_VAL : 1.0;
  out.max_variance = n > 0 ? 0.0 : 1.0;
  for (std::int64_t l = 0; l < lanes; ++l) {
    for (int k = 0; k < 2; ++k) {
      Compensated(sum[k][l], total, total_carry);
      exponent += exps[k][l];  // integers: exact
      abs_exponent += abs_exps[k][l];
      abs_offset += offsets[k][l];
    }
    abs_sum += abs_direct[l];
    if (n > 0) {
      out.min_variance = std::min(out.min_variance, lo_var[l]);
      out.max_variance = std::max(out.max_variance, hi_var[l]);
    }
  }
  for (std::int64_t l = 0; l < lanes; ++l) {
    for (int k = 0; k < 2; ++k)
      Compensated(carry[k][l], total, total_carry);
  }
  if (!kDirect) {
    // exponent ln 2 in two parts: the high part has 32 significant bits, so with |exponent| <
    // 2^21 its product is exact (else rounded, within u |exponent ln 2| <= u abs_sum); the low
    // part's rounding is far below u of the whole.
    constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
    Compensated(exponent * kLn2Hi, total, total_carry);
    Compensated(exponent * kLn2Lo, total, total_carry);
    abs_sum = abs_exponent * 0.6931471805599454 + 1.4143 * abs_offset;  // ln 2 rounded up
  }
  // Plain sums (of |y - 1| or of |l_h|): n roundings, far below this spare while n u < 1e-4.
  abs_sum *= 1 + 1e-3;
  // log sigma^2 = 2 log(stddev) = log(var) = -log(precision).
  constexpr double kSign = kParam == DiagParam::stddev      ? 2.0
                           : kParam == DiagParam::precision ? -1.0
                                                            : 1.0;
  out.log_det = kSign * (total + total_carry);
  out.abs_log_det = std::abs(kSign) * abs_sum;
  return out;
}

DiagRowSums RowTerms(DiagParam param, const double* x, std::int64_t n, double* variance,
                     double* precision) {
  switch (param) {  // one loop per parameterization, with nothing to decide inside
    case DiagParam::stddev:
      return RowTermsOf<DiagParam::stddev>(x, n, variance, precision);
    case DiagParam::var:
      return RowTermsOf<DiagParam::var>(x, n, variance, precision);
    case DiagParam::logvar:
      return RowTermsOf<DiagParam::logvar>(x, n, variance, precision);
    case DiagParam::precision:
      return RowTermsOf<DiagParam::precision>(x, n, variance, precision);
  }
  return {};
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(RowTerms);

DiagRowSums diag_row_terms(DiagParam param, const double* x, std::int64_t n, double* variance,
                           double* precision) noexcept {
  return HWY_DYNAMIC_DISPATCH(RowTerms)(param, x, n, variance, precision);
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
