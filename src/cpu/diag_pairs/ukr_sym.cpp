// Highway runtime dispatch of the q = p all-pairs microkernel: this file is compiled once per
// target (AVX3, AVX2, SSE4, SSSE3, scalar) and the best one the CPU supports is picked at run
// time. Compiled with -ffp-contract=off (CMakeLists.txt; why in diag_pairs/ukr_sym.hpp).
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/diag_pairs/ukr_sym.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include "cpu/diag_pairs/ukr_sym-inl.h"
#include "cpu/diag_pairs/ukr_sym.hpp"
#include "cpu/tunables.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {

DiagSymKernel SymKernel() {
#if HWY_TARGET == HWY_SCALAR
  static_assert(kDiagRefMr * kDiagRefNr <= kDiagSymMaxTile, "the drivers' tile buffers");
  return {{kDiagRefMr, kDiagRefNr}, &ukr_diag_sym_ref, &ukr_diag_sym_ref_one};
#else
#if HWY_TARGET <= HWY_AVX3
  constexpr DiagSymTileShape shape = kDiagSymTileAvx3;
#elif HWY_TARGET == HWY_AVX2
  constexpr DiagSymTileShape shape = kDiagSymTileAvx2;
#else
  constexpr DiagSymTileShape shape = kDiagSymTileSse4;
#endif
  using D = hn::CappedTag<double, shape.lanes>;
  constexpr auto mr = static_cast<std::size_t>(shape.mr);
  constexpr auto nrv = static_cast<std::size_t>(shape.nr_vectors);
  constexpr auto nr = static_cast<std::int64_t>(hn::MaxLanes(D()) * nrv);
  static_assert(shape.mr * nr <= kDiagSymMaxTile, "the drivers' tile buffers");
  return {{shape.mr, nr}, &UkrDiagSym<D, mr, nrv, true>, &UkrDiagSym<D, mr, nrv, false>};
#endif
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(SymKernel);

DiagSymKernel diag_sym_kernel() noexcept {
  return HWY_DYNAMIC_DISPATCH(SymKernel)();
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
