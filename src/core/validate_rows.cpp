// Highway runtime dispatch of the vectorized row checks of validate_rows.hpp: compiled once per
// target (foreach_target.h).
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "core/validate_rows.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include <bit>
#include <cmath>
#include <cstdint>

#include "core/validate_rows.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Both checks compare bit patterns as signed integers, whose order is that of the non-negative
// floats (NaN above inf; a set sign bit below them all): a running integer max (and min) per
// lane, two integer operations a vector and no mask. Comparing as floats (two compares and two
// mask ANDs a vector) took twice the time on AVX3 (4096 floats: 0.25 vs 0.12 us on the machine
// of tunables.hpp). The partial last vector of a row is checked element by element.
template <class T, bool kAbs>
bool Rows(const T* HWY_RESTRICT data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
          T lo, T hi) {
  using I = hwy::MakeSigned<T>;
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto magnitude = hn::Set(di, hwy::LimitsMax<I>());  // all bits but the sign
  auto most = hn::Set(di, I(0)), least = hn::Set(di, hwy::LimitsMax<I>());
  bool bad = false;
  const std::int64_t whole = n / lanes * lanes;
  for (std::int64_t i = 0; i < rows; ++i) {
    const T* HWY_RESTRICT row = data + i * row_stride;
    for (std::int64_t h = 0; h < whole; h += lanes) {
      auto bits = hn::BitCast(di, hn::LoadU(d, row + h));
      if constexpr (kAbs) {
        most = hn::Max(most, hn::And(bits, magnitude));
      } else {
        most = hn::Max(most, bits);
        least = hn::Min(least, bits);
      }
    }
    for (std::int64_t h = whole; h < n; ++h) {
      const T x = kAbs ? std::abs(row[h]) : row[h];
      bad |= !(x >= lo && x <= hi);
    }
  }
  const auto outside = hn::Or(hn::Gt(most, hn::Set(di, std::bit_cast<I>(hi))),
                              hn::Lt(least, hn::Set(di, std::bit_cast<I>(kAbs ? T(0) : lo))));
  return !bad && hn::AllFalse(di, outside);
}

bool AbsWithinF32(const float* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
                  float bound) {
  return Rows<float, true>(data, rows, row_stride, n, 0.0f, bound);
}
bool AbsWithinF64(const double* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
                  double bound) {
  return Rows<double, true>(data, rows, row_stride, n, 0.0, bound);
}
bool WithinF32(const float* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
               float lo, float hi) {
  return Rows<float, false>(data, rows, row_stride, n, lo, hi);
}
bool WithinF64(const double* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
               double lo, double hi) {
  return Rows<double, false>(data, rows, row_stride, n, lo, hi);
}

}  // namespace gausskl::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::detail {

HWY_EXPORT(AbsWithinF32);
HWY_EXPORT(AbsWithinF64);
HWY_EXPORT(WithinF32);
HWY_EXPORT(WithinF64);

bool all_abs_within_rows(const float* data, std::int64_t rows, std::int64_t row_stride,
                         std::int64_t n, float bound) noexcept {
  return HWY_DYNAMIC_DISPATCH(AbsWithinF32)(data, rows, row_stride, n, bound);
}
bool all_abs_within_rows(const double* data, std::int64_t rows, std::int64_t row_stride,
                         std::int64_t n, double bound) noexcept {
  return HWY_DYNAMIC_DISPATCH(AbsWithinF64)(data, rows, row_stride, n, bound);
}
bool all_within_rows(const float* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
                     float lo, float hi) noexcept {
  return HWY_DYNAMIC_DISPATCH(WithinF32)(data, rows, row_stride, n, lo, hi);
}
bool all_within_rows(const double* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
                     double lo, double hi) noexcept {
  return HWY_DYNAMIC_DISPATCH(WithinF64)(data, rows, row_stride, n, lo, hi);
}

}  // namespace gausskl::detail
#endif  // HWY_ONCE
