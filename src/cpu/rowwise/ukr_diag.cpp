// Highway runtime dispatch of the row-wise diagonal kernel (rowwise/ukr_diag-inl.h): this file is
// compiled once per target (AVX3, AVX2, SSE4, SSSE3, scalar) and the best one the CPU supports is
// picked at run time, on every call (so tests that force a target reach it through kl_rowwise).
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/rowwise/ukr_diag.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include "cpu/rowwise/ukr_diag-inl.h"
#include "cpu/rowwise/ukr_diag.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {

void RowsF32(const DiagGaussians<float>& p, const DiagGaussians<float>* q, std::int64_t lo,
             std::int64_t hi, double* out) {
  rowwise_diag_detail::Rows<float>(p, q, lo, hi, out);
}
void RowsF64(const DiagGaussians<double>& p, const DiagGaussians<double>* q, std::int64_t lo,
             std::int64_t hi, double* out) {
  rowwise_diag_detail::Rows<double>(p, q, lo, hi, out);
}
const char* RowwiseTargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(RowsF32);
HWY_EXPORT(RowsF64);
HWY_EXPORT(RowwiseTargetName);

template <>
void rowwise_diag<float>(const DiagGaussians<float>& p, const DiagGaussians<float>* q,
                         std::int64_t lo, std::int64_t hi, double* out) noexcept {
  HWY_DYNAMIC_DISPATCH(RowsF32)(p, q, lo, hi, out);
}
template <>
void rowwise_diag<double>(const DiagGaussians<double>& p, const DiagGaussians<double>* q,
                          std::int64_t lo, std::int64_t hi, double* out) noexcept {
  HWY_DYNAMIC_DISPATCH(RowsF64)(p, q, lo, hi, out);
}
const char* rowwise_diag_target() noexcept {
  return HWY_DYNAMIC_DISPATCH(RowwiseTargetName)();
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
