// Highway runtime dispatch of the pairwise backward's GEMM microkernel: this file is compiled
// once per target (AVX3, AVX2, SSE4, SSSE3, scalar) and the best one the CPU supports is picked
// at run time.
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/diag_pairs_backward/ukr.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include "cpu/diag_pairs_backward/ukr-inl.h"
#include "cpu/diag_pairs_backward/ukr.hpp"
#include "cpu/tunables.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {

GemmKernel BackwardGemmKernel() {
#if HWY_TARGET == HWY_SCALAR
  return {{kGemmRefMr, kGemmRefNr}, &ukr_gemm_ref};
#else
#if HWY_TARGET <= HWY_AVX3
  constexpr GemmTileShape shape = kGemmTileAvx3;
#elif HWY_TARGET == HWY_AVX2
  constexpr GemmTileShape shape = kGemmTileAvx2;
#else
  constexpr GemmTileShape shape = kGemmTileSse4;
#endif
  constexpr auto nr =
      static_cast<std::int64_t>(hn::MaxLanes(hn::ScalableTag<double>())) * shape.nr_vectors;
  return {{shape.mr, nr}, &UkrGemm<shape.mr, shape.nr_vectors>};
#endif
}

const char* BackwardGemmTargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(BackwardGemmKernel);
HWY_EXPORT(BackwardGemmTargetName);

GemmKernel gemm_kernel() noexcept {
  return HWY_DYNAMIC_DISPATCH(BackwardGemmKernel)();
}
const char* gemm_kernel_target() noexcept {
  return HWY_DYNAMIC_DISPATCH(BackwardGemmTargetName)();
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
