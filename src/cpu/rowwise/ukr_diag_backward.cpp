// Highway runtime dispatch of the row-wise diagonal backward kernel
// (rowwise/ukr_diag_backward-inl.h): compiled once per target, the best one the CPU supports picked
// at run time on every call (so tests that force a target reach it).
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/rowwise/ukr_diag_backward.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include <type_traits>

#include "cpu/rowwise/ukr_diag_backward-inl.h"
#include "cpu/rowwise/ukr_diag_backward.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {

void DiagBackwardF32(const DiagGaussians<float>& p, const DiagGaussians<float>* q, std::int64_t lo,
                     std::int64_t hi, const float* grad, const SideSinks<float>& sp,
                     const SideSinks<float>& sq) {
  rowwise_diag_backward_detail::Rows<float>(p, q, lo, hi, grad, sp, sq);
}
void DiagBackwardF64(const DiagGaussians<double>& p, const DiagGaussians<double>* q,
                     std::int64_t lo, std::int64_t hi, const double* grad,
                     const SideSinks<double>& sp, const SideSinks<double>& sq) {
  rowwise_diag_backward_detail::Rows<double>(p, q, lo, hi, grad, sp, sq);
}
void DiagWithGradientsF32(const DiagGaussians<float>& p, const DiagGaussians<float>* q,
                          std::int64_t lo, std::int64_t hi, double* out, const SideSinks<float>& sp,
                          const SideSinks<float>& sq) {
  rowwise_diag_backward_detail::RowsWithGradients<float, float>(p, q, lo, hi, out, sp, sq);
}
void DiagWithGradientsF32Wide(const DiagGaussians<float>& p, const DiagGaussians<float>* q,
                              std::int64_t lo, std::int64_t hi, double* out,
                              const SideSinks<double>& sp, const SideSinks<double>& sq) {
  rowwise_diag_backward_detail::RowsWithGradients<float, double>(p, q, lo, hi, out, sp, sq);
}
void DiagWithGradientsF64(const DiagGaussians<double>& p, const DiagGaussians<double>* q,
                          std::int64_t lo, std::int64_t hi, double* out,
                          const SideSinks<double>& sp, const SideSinks<double>& sq) {
  rowwise_diag_backward_detail::RowsWithGradients<double, double>(p, q, lo, hi, out, sp, sq);
}
const char* DiagBackwardTargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(DiagBackwardF32);
HWY_EXPORT(DiagBackwardF64);
HWY_EXPORT(DiagWithGradientsF32);
HWY_EXPORT(DiagWithGradientsF32Wide);
HWY_EXPORT(DiagWithGradientsF64);
HWY_EXPORT(DiagBackwardTargetName);

template <>
void rowwise_diag_backward<float>(const DiagGaussians<float>& p, const DiagGaussians<float>* q,
                                  std::int64_t lo, std::int64_t hi, const float* grad,
                                  const SideSinks<float>& sp, const SideSinks<float>& sq) noexcept {
  HWY_DYNAMIC_DISPATCH(DiagBackwardF32)(p, q, lo, hi, grad, sp, sq);
}
template <>
void rowwise_diag_backward<double>(const DiagGaussians<double>& p, const DiagGaussians<double>* q,
                                   std::int64_t lo, std::int64_t hi, const double* grad,
                                   const SideSinks<double>& sp,
                                   const SideSinks<double>& sq) noexcept {
  HWY_DYNAMIC_DISPATCH(DiagBackwardF64)(p, q, lo, hi, grad, sp, sq);
}
// Values with gradients rounded to S: float batches into float or double, double into double.
template <class T, class S>
void rowwise_diag_with_gradients(const DiagGaussians<T>& p, const DiagGaussians<T>* q,
                                 std::int64_t lo, std::int64_t hi, double* out,
                                 const SideSinks<S>& sp, const SideSinks<S>& sq) noexcept {
  if constexpr (std::is_same_v<T, double>) {
    HWY_DYNAMIC_DISPATCH(DiagWithGradientsF64)(p, q, lo, hi, out, sp, sq);
  } else if constexpr (std::is_same_v<S, float>) {
    HWY_DYNAMIC_DISPATCH(DiagWithGradientsF32)(p, q, lo, hi, out, sp, sq);
  } else {
    HWY_DYNAMIC_DISPATCH(DiagWithGradientsF32Wide)(p, q, lo, hi, out, sp, sq);
  }
}
template void rowwise_diag_with_gradients(const DiagGaussians<float>&, const DiagGaussians<float>*,
                                          std::int64_t, std::int64_t, double*,
                                          const SideSinks<float>&,
                                          const SideSinks<float>&) noexcept;
template void rowwise_diag_with_gradients(const DiagGaussians<float>&, const DiagGaussians<float>*,
                                          std::int64_t, std::int64_t, double*,
                                          const SideSinks<double>&,
                                          const SideSinks<double>&) noexcept;
template void rowwise_diag_with_gradients(const DiagGaussians<double>&,
                                          const DiagGaussians<double>*, std::int64_t, std::int64_t,
                                          double*, const SideSinks<double>&,
                                          const SideSinks<double>&) noexcept;
const char* rowwise_diag_backward_target() noexcept {
  return HWY_DYNAMIC_DISPATCH(DiagBackwardTargetName)();
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
