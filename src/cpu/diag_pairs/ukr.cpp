// Highway runtime dispatch of the diag_quadratic microkernel: this file is compiled once per
// target (AVX3, AVX2, SSE4, SSSE3, scalar) and the best one the CPU supports is picked at run
// time.
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/diag_pairs/ukr.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include "cpu/diag_pairs/ukr-inl.h"
#include "cpu/diag_pairs/ukr.hpp"
#include "cpu/tunables.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {

template <class T>
DiagKernel<T> Kernel() {
#if HWY_TARGET == HWY_SCALAR
  return {{kDiagRefMr, kDiagRefNr}, &ukr_diag_ref<T>};
#else
#if HWY_TARGET <= HWY_AVX3
  constexpr DiagTileShape shape = kDiagTileAvx3;
#elif HWY_TARGET == HWY_AVX2
  constexpr DiagTileShape shape = kDiagTileAvx2;
#else
  constexpr DiagTileShape shape = kDiagTileSse4;
#endif
  constexpr auto nr =
      static_cast<std::int64_t>(hn::MaxLanes(hn::ScalableTag<T>())) * shape.nr_vectors;
  return {{shape.mr, nr}, &UkrDiag<T, shape.mr, shape.nr_vectors>};
#endif
}

DiagKernel<float> KernelF32() {
  return Kernel<float>();
}
DiagKernel<double> KernelF64() {
  return Kernel<double>();
}
const char* TargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(KernelF32);
HWY_EXPORT(KernelF64);
HWY_EXPORT(TargetName);

template <>
DiagKernel<float> diag_kernel<float>() noexcept {
  return HWY_DYNAMIC_DISPATCH(KernelF32)();
}
template <>
DiagKernel<double> diag_kernel<double>() noexcept {
  return HWY_DYNAMIC_DISPATCH(KernelF64)();
}
const char* diag_kernel_target() noexcept {
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
