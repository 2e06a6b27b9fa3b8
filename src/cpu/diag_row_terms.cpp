// Highway runtime dispatch of diag_row_terms (diag_row_terms.hpp): this file is compiled once per
// target and the best one the CPU supports is picked at run time. The last, partial vector goes
// through a small buffer padded with 1 (a valid value of every parameterization), and its
// padding lanes are left out of the sums.
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/diag_row_terms.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "cpu/diag_row_terms.hpp"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// log sigma^2, sigma^2 and 1 / sigma^2 of a vector of parameters.
template <class D, class V = hn::Vec<D>>
HWY_INLINE void Terms(D d, DiagParam param, V x, V& log_var, V& variance, V& precision) {
  const V one = hn::Set(d, 1.0);
  switch (param) {
    case DiagParam::stddev: {
      const V log_sigma = hn::Log(d, x);
      log_var = hn::Add(log_sigma, log_sigma);
      variance = hn::Mul(x, x);
      precision = hn::Div(one, variance);
      return;
    }
    case DiagParam::var:
      log_var = hn::Log(d, x);
      variance = x;
      precision = hn::Div(one, x);
      return;
    case DiagParam::logvar:
      log_var = x;
      variance = hn::Exp(d, x);
      precision = hn::Exp(d, hn::Neg(x));
      return;
    case DiagParam::precision:
      log_var = hn::Neg(hn::Log(d, x));
      variance = hn::Div(one, x);
      precision = x;
      return;
  }
}

// Neumaier's compensated sum in each lane: sum + carry is the lanes' sum up to O(n u^2).
template <class V>
struct LaneSums {
  V sum, carry, abs_sum, max_abs;

  HWY_INLINE void Add(V x) {
    const V t = hn::Add(sum, x);
    const auto big = hn::Ge(hn::Abs(sum), hn::Abs(x));
    carry = hn::Add(carry,
                    hn::IfThenElse(big, hn::Add(hn::Sub(sum, t), x), hn::Add(hn::Sub(x, t), sum)));
    sum = t;
    abs_sum = hn::Add(abs_sum, hn::Abs(x));
    max_abs = hn::Max(max_abs, hn::Abs(x));
  }
};

// The scalar Neumaier step, for the lanes' sums and carries.
HWY_INLINE void Compensated(double x, double& sum, double& carry) {
  const double t = sum + x;
  carry += std::abs(sum) >= std::abs(x) ? (sum - t) + x : (x - t) + sum;
  sum = t;
}

DiagRowSums RowTerms(DiagParam param, const double* x, std::int64_t n, double* variance,
                     double* precision) {
  const hn::ScalableTag<double> d;
  using V = hn::Vec<decltype(d)>;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  LaneSums<V> sums{hn::Zero(d), hn::Zero(d), hn::Zero(d), hn::Zero(d)};
  std::int64_t h = 0;
  for (; h + lanes <= n; h += lanes) {
    V l = hn::Zero(d), v = hn::Zero(d), lam = hn::Zero(d);
    Terms(d, param, hn::LoadU(d, x + h), l, v, lam);
    if (variance) hn::StoreU(v, d, variance + h);
    if (precision) hn::StoreU(lam, d, precision + h);
    sums.Add(l);
  }
  constexpr std::size_t kMax = hn::MaxLanes(hn::ScalableTag<double>());
  if (h < n) {
    const std::int64_t rest = n - h;
    HWY_ALIGN double x_tail[kMax], v_tail[kMax], lam_tail[kMax];
    std::fill(x_tail, x_tail + kMax, 1.0);
    std::copy(x + h, x + n, x_tail);
    V l = hn::Zero(d), v = hn::Zero(d), lam = hn::Zero(d);
    Terms(d, param, hn::Load(d, x_tail), l, v, lam);
    hn::Store(v, d, v_tail);
    hn::Store(lam, d, lam_tail);
    if (variance) std::copy(v_tail, v_tail + rest, variance + h);
    if (precision) std::copy(lam_tail, lam_tail + rest, precision + h);
    sums.Add(hn::IfThenElseZero(hn::FirstN(d, static_cast<std::size_t>(rest)), l));
  }
  HWY_ALIGN double sum[kMax], carry[kMax], abs_sum[kMax], max_abs[kMax];
  hn::Store(sums.sum, d, sum);
  hn::Store(sums.carry, d, carry);
  hn::Store(sums.abs_sum, d, abs_sum);
  hn::Store(sums.max_abs, d, max_abs);
  // Lane by lane in a fixed order: the result depends on the target only.
  double total = 0, total_carry = 0;
  DiagRowSums out;
  for (std::int64_t k = 0; k < lanes; ++k) {
    Compensated(sum[k], total, total_carry);
    out.abs_log_det += abs_sum[k];
    out.max_abs_log = std::max(out.max_abs_log, max_abs[k]);
  }
  for (std::int64_t k = 0; k < lanes; ++k)
    Compensated(carry[k], total, total_carry);
  out.log_det = total + total_carry;
  return out;
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
