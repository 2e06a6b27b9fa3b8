// Highway runtime dispatch of diag_row_terms (diag_row_terms.hpp): this file is compiled once per
// target and the best one the CPU supports is picked at run time. The last, partial vector goes
// through a small buffer padded with 1 (a valid value of every parameterization).
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/diag_row_terms.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include <algorithm>
#include <cstddef>

#include "cpu/diag_row_terms.hpp"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D, class V = hn::Vec<D>>
HWY_INLINE void Terms(D d, DiagParam param, V x, V& log_sigma, V& variance) {
  const V half = hn::Set(d, 0.5);
  switch (param) {
    case DiagParam::stddev:
      log_sigma = hn::Log(d, x);
      variance = hn::Mul(x, x);
      return;
    case DiagParam::var:
      log_sigma = hn::Mul(half, hn::Log(d, x));
      variance = x;
      return;
    case DiagParam::logvar:
      log_sigma = hn::Mul(half, x);
      variance = hn::Exp(d, x);
      return;
    case DiagParam::precision:
      log_sigma = hn::Neg(hn::Mul(half, hn::Log(d, x)));
      variance = hn::Div(hn::Set(d, 1.0), x);
      return;
  }
}

void RowTerms(DiagParam param, const double* x, std::int64_t n, double* log_sigma,
              double* variance) {
  const hn::ScalableTag<double> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t h = 0;
  for (; h + lanes <= n; h += lanes) {
    hn::Vec<decltype(d)> ls = hn::Zero(d), v = hn::Zero(d);
    Terms(d, param, hn::LoadU(d, x + h), ls, v);
    hn::StoreU(ls, d, log_sigma + h);
    if (variance) hn::StoreU(v, d, variance + h);
  }
  if (h == n) return;
  constexpr std::size_t kMax = hn::MaxLanes(hn::ScalableTag<double>());
  HWY_ALIGN double x_tail[kMax], ls_tail[kMax], v_tail[kMax];
  std::fill(x_tail, x_tail + kMax, 1.0);
  std::copy(x + h, x + n, x_tail);
  hn::Vec<decltype(d)> ls = hn::Zero(d), v = hn::Zero(d);
  Terms(d, param, hn::Load(d, x_tail), ls, v);
  hn::Store(ls, d, ls_tail);
  hn::Store(v, d, v_tail);
  std::copy(ls_tail, ls_tail + (n - h), log_sigma + h);
  if (variance) std::copy(v_tail, v_tail + (n - h), variance + h);
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(RowTerms);

void diag_row_terms(DiagParam param, const double* x, std::int64_t n, double* log_sigma,
                    double* variance) noexcept {
  HWY_DYNAMIC_DISPATCH(RowTerms)(param, x, n, log_sigma, variance);
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
