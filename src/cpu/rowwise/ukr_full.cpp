// Highway runtime dispatch of the row-wise full-covariance kernel (rowwise/ukr_full-inl.h): this
// file is compiled once per target and the best one the CPU supports is picked at run time, on
// every call (so tests that force a target reach it through kl_rowwise).
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/rowwise/ukr_full.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include "cpu/rowwise/ukr_full-inl.h"
#include "cpu/rowwise/ukr_full.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {

void FullRowsF32(const FullGaussians<float>& p, const FullGaussians<float>& q, std::int64_t lo,
                 std::int64_t hi, double* out, double* scratch) {
  rowwise_full_detail::Rows<float>(p, q, lo, hi, out, scratch);
}
void FullRowsF64(const FullGaussians<double>& p, const FullGaussians<double>& q, std::int64_t lo,
                 std::int64_t hi, double* out, double* scratch) {
  rowwise_full_detail::Rows<double>(p, q, lo, hi, out, scratch);
}
const char* FullRowsTargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(FullRowsF32);
HWY_EXPORT(FullRowsF64);
HWY_EXPORT(FullRowsTargetName);

template <>
void rowwise_full<float>(const FullGaussians<float>& p, const FullGaussians<float>& q,
                         std::int64_t lo, std::int64_t hi, double* out, double* scratch) noexcept {
  HWY_DYNAMIC_DISPATCH(FullRowsF32)(p, q, lo, hi, out, scratch);
}
template <>
void rowwise_full<double>(const FullGaussians<double>& p, const FullGaussians<double>& q,
                          std::int64_t lo, std::int64_t hi, double* out, double* scratch) noexcept {
  HWY_DYNAMIC_DISPATCH(FullRowsF64)(p, q, lo, hi, out, scratch);
}
const char* rowwise_full_target() noexcept {
  return HWY_DYNAMIC_DISPATCH(FullRowsTargetName)();
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
