// The backward of a training step's kept gradients (cpu/backend.hpp: scale_rows,
// scale_rows_in_place and sum_scaled_rows), with Highway's runtime dispatch: each element is one
// product in double (AVX2: 4 per instruction; in place, one product in T), rounded once; the same
// bits on every target, as the scalar loop's.
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/rowwise/scale_rows.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include <algorithm>
#include <cstdint>

#include "cpu/backend.hpp"
#include "cpu/rowwise/ukr_diag-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DD = hn::ScalableTag<double>;
using rowwise_diag_detail::StoreWide;

template <class T>
void ScaleRowsOf(const double* HWY_RESTRICT unit, std::int64_t rows, std::int64_t row_size,
                 const T* HWY_RESTRICT grad, T* HWY_RESTRICT dst) {
  const DD d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  for (std::int64_t i = 0; i < rows; ++i) {
    const double g = static_cast<double>(grad[i]);
    const auto gv = hn::Set(d, g);
    const double* from = unit + i * row_size;
    T* to = dst + i * row_size;
    std::int64_t k = 0;
    for (; k + lanes <= row_size; k += lanes)
      StoreWide(d, hn::Mul(hn::LoadU(d, from + k), gv), to + k);
    for (; k < row_size; ++k)
      to[k] = static_cast<T>(g * from[k]);
  }
}

template <class T>
void ScaleRowsInPlaceOf(T* HWY_RESTRICT data, std::int64_t rows, std::int64_t row_size,
                        const T* HWY_RESTRICT grad) {
  const hn::ScalableTag<T> d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  for (std::int64_t i = 0; i < rows; ++i) {
    const T g = grad[i];
    const auto gv = hn::Set(d, g);
    T* row = data + i * row_size;
    std::int64_t k = 0;
    for (; k + lanes <= row_size; k += lanes)
      hn::StoreU(hn::Mul(hn::LoadU(d, row + k), gv), d, row + k);
    for (; k < row_size; ++k)
      row[k] *= g;
  }
}

template <class T>
void SumScaledRowsOf(const double* HWY_RESTRICT unit, std::int64_t rows, std::int64_t row_size,
                     const T* HWY_RESTRICT grad, T* HWY_RESTRICT dst) {
  // Columns a block at a time, each summed over the rows in order (a product, then a sum: no
  // FMA, so every target gives the scalar loop's bits); the block (4 KiB) stays in L1.
  constexpr std::int64_t kBlock = 512;
  HWY_ALIGN double sum[kBlock];
  const DD d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  for (std::int64_t k0 = 0; k0 < row_size; k0 += kBlock) {
    const std::int64_t width = std::min(kBlock, row_size - k0), whole = width / lanes * lanes;
    std::fill(sum, sum + width, 0.0);
    for (std::int64_t i = 0; i < rows; ++i) {
      const double g = static_cast<double>(grad[i]);
      const auto gv = hn::Set(d, g);
      const double* from = unit + i * row_size + k0;
      for (std::int64_t k = 0; k < whole; k += lanes)
        hn::Store(hn::Add(hn::Load(d, sum + k), hn::Mul(hn::LoadU(d, from + k), gv)), d, sum + k);
      for (std::int64_t k = whole; k < width; ++k)
        sum[k] += g * from[k];
    }
    std::transform(sum, sum + width, dst + k0, [](double x) { return static_cast<T>(x); });
  }
}

void ScaleRowsF32(const double* unit, std::int64_t rows, std::int64_t row_size, const float* grad,
                  float* dst) {
  ScaleRowsOf(unit, rows, row_size, grad, dst);
}
void ScaleRowsF64(const double* unit, std::int64_t rows, std::int64_t row_size, const double* grad,
                  double* dst) {
  ScaleRowsOf(unit, rows, row_size, grad, dst);
}
void ScaleRowsInPlaceF32(float* data, std::int64_t rows, std::int64_t row_size, const float* grad) {
  ScaleRowsInPlaceOf(data, rows, row_size, grad);
}
void ScaleRowsInPlaceF64(double* data, std::int64_t rows, std::int64_t row_size,
                         const double* grad) {
  ScaleRowsInPlaceOf(data, rows, row_size, grad);
}
void SumScaledRowsF32(const double* unit, std::int64_t rows, std::int64_t row_size,
                      const float* grad, float* dst) {
  SumScaledRowsOf(unit, rows, row_size, grad, dst);
}
void SumScaledRowsF64(const double* unit, std::int64_t rows, std::int64_t row_size,
                      const double* grad, double* dst) {
  SumScaledRowsOf(unit, rows, row_size, grad, dst);
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(ScaleRowsF32);
HWY_EXPORT(ScaleRowsF64);
HWY_EXPORT(ScaleRowsInPlaceF32);
HWY_EXPORT(ScaleRowsInPlaceF64);
HWY_EXPORT(SumScaledRowsF32);
HWY_EXPORT(SumScaledRowsF64);

template <>
void scale_rows<float>(const double* unit, std::int64_t rows, std::int64_t row_size,
                       const float* grad, float* dst) noexcept {
  HWY_DYNAMIC_DISPATCH(ScaleRowsF32)(unit, rows, row_size, grad, dst);
}
template <>
void scale_rows<double>(const double* unit, std::int64_t rows, std::int64_t row_size,
                        const double* grad, double* dst) noexcept {
  HWY_DYNAMIC_DISPATCH(ScaleRowsF64)(unit, rows, row_size, grad, dst);
}
template <>
void scale_rows_in_place<float>(float* data, std::int64_t rows, std::int64_t row_size,
                                const float* grad) noexcept {
  HWY_DYNAMIC_DISPATCH(ScaleRowsInPlaceF32)(data, rows, row_size, grad);
}
template <>
void scale_rows_in_place<double>(double* data, std::int64_t rows, std::int64_t row_size,
                                 const double* grad) noexcept {
  HWY_DYNAMIC_DISPATCH(ScaleRowsInPlaceF64)(data, rows, row_size, grad);
}
template <>
void sum_scaled_rows<float>(const double* unit, std::int64_t rows, std::int64_t row_size,
                            const float* grad, float* dst) noexcept {
  HWY_DYNAMIC_DISPATCH(SumScaledRowsF32)(unit, rows, row_size, grad, dst);
}
template <>
void sum_scaled_rows<double>(const double* unit, std::int64_t rows, std::int64_t row_size,
                             const double* grad, double* dst) noexcept {
  HWY_DYNAMIC_DISPATCH(SumScaledRowsF64)(unit, rows, row_size, grad, dst);
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
