// Highway runtime dispatch of tri_squares: compiled once per target, the best one the CPU
// supports picked at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/pair/tri_squares.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include <algorithm>

#include "cpu/pair/tri_squares.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Row i, one vector of columns [k0, k0 + lanes) at a time, kept in a register while the rows
// j >= k0 above it are subtracted (rows j < k0 are 0 there), then divided by the pivot; the
// squares of the entries left of the diagonal go into a vector of partial sums, reduced once.
double TriSquares(const double* lq, const double* lp, std::int64_t d, double* m) {
  const hn::ScalableTag<double> tag;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(tag));
  const std::int64_t ld = tri_squares_ld(d);
  auto squares = hn::Zero(tag);
  for (std::int64_t i = 0; i < d; ++i) {
    double* mi = m + i * ld;
    const double* lq_i = lq + i * d;
    std::copy(lp + i * d, lp + i * d + i + 1, mi);
    std::fill(mi + i + 1, mi + ld, 0.0);
    const auto pivot = hn::Set(tag, lq_i[i]);
    for (std::int64_t k0 = 0; k0 <= i; k0 += lanes) {
      auto v = hn::LoadU(tag, mi + k0);
      for (std::int64_t j = k0; j < i; ++j)
        v = hn::NegMulAdd(hn::Set(tag, lq_i[j]), hn::LoadU(tag, m + j * ld + k0), v);
      v = hn::Div(v, pivot);
      hn::StoreU(v, tag, mi + k0);
      const auto left =
          hn::IfThenElseZero(hn::FirstN(tag, static_cast<std::size_t>(std::min(i - k0, lanes))), v);
      squares = hn::MulAdd(left, left, squares);
    }
  }
  return hn::GetLane(hn::SumOfLanes(tag, squares));
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(TriSquares);

double tri_squares(const double* lq, const double* lp, std::int64_t d, double* scratch) noexcept {
  static_assert(HWY_MAX_BYTES / sizeof(double) <= kTriPad, "rows must hold whole vectors");
  return HWY_DYNAMIC_DISPATCH(TriSquares)(lq, lp, d, scratch);
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
