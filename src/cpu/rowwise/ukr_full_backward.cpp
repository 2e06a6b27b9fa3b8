// Highway runtime dispatch of the row-wise full-covariance backward kernel
// (rowwise/ukr_full_backward-inl.h): compiled once per target, the best one the CPU supports picked
// at run time on every call (so tests that force a target reach it).
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/rowwise/ukr_full_backward.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include "cpu/rowwise/ukr_full_backward-inl.h"
#include "cpu/rowwise/ukr_full_backward.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {

void FullBackwardF32(const FullGaussians<float>& p, const FullGaussians<float>* q, std::int64_t lo,
                     std::int64_t hi, const float* grad, const SideSinks<float>& sp,
                     const SideSinks<float>& sq, double* scratch) {
  rowwise_full_backward_detail::Rows<float>(p, q, lo, hi, grad, sp, sq, scratch);
}
void FullBackwardF64(const FullGaussians<double>& p, const FullGaussians<double>* q,
                     std::int64_t lo, std::int64_t hi, const double* grad,
                     const SideSinks<double>& sp, const SideSinks<double>& sq, double* scratch) {
  rowwise_full_backward_detail::Rows<double>(p, q, lo, hi, grad, sp, sq, scratch);
}
const char* FullBackwardTargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(FullBackwardF32);
HWY_EXPORT(FullBackwardF64);
HWY_EXPORT(FullBackwardTargetName);

template <>
void rowwise_full_backward<float>(const FullGaussians<float>& p, const FullGaussians<float>* q,
                                  std::int64_t lo, std::int64_t hi, const float* grad,
                                  const SideSinks<float>& sp, const SideSinks<float>& sq,
                                  double* scratch) noexcept {
  HWY_DYNAMIC_DISPATCH(FullBackwardF32)(p, q, lo, hi, grad, sp, sq, scratch);
}
template <>
void rowwise_full_backward<double>(const FullGaussians<double>& p, const FullGaussians<double>* q,
                                   std::int64_t lo, std::int64_t hi, const double* grad,
                                   const SideSinks<double>& sp, const SideSinks<double>& sq,
                                   double* scratch) noexcept {
  HWY_DYNAMIC_DISPATCH(FullBackwardF64)(p, q, lo, hi, grad, sp, sq, scratch);
}
const char* rowwise_full_backward_target() noexcept {
  return HWY_DYNAMIC_DISPATCH(FullBackwardTargetName)();
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
