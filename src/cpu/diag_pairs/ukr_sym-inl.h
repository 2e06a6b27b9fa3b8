// The SIMD microkernel of q = p all-pairs (signature in diag_pairs/ukr_sym.hpp), compiled once per
// Highway target by diag_pairs/ukr_sym.cpp. l is the lane dimension: each h loads the means,
// variances and precisions of the b panel (nr_vectors vectors each) and broadcasts those of each
// of the MR a rows (at fixed offsets from one pointer, which the compiler folds into the
// arithmetic as embedded broadcasts on AVX-512).

// Per-target include guard: toggled so that foreach_target.h re-includes this file per target.
#if defined(GAUSSKL_CPU_UKR_DIAG_SYM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GAUSSKL_CPU_UKR_DIAG_SYM_INL_H_
#undef GAUSSKL_CPU_UKR_DIAG_SYM_INL_H_
#else
#define GAUSSKL_CPU_UKR_DIAG_SYM_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "cpu/diag_pairs/ukr_sym.hpp"
#include "hwy/highway.h"

// The scalar target (one lane) uses the reference kernel instead.
#if HWY_TARGET != HWY_SCALAR
HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// c[r * NR + l] (+)= acc[r][l / N][l % N].
template <class D, std::size_t MR, std::size_t NRV>
HWY_INLINE void FlushSymTile(D d, const hn::Vec<D> (&acc)[MR][NRV], bool add,
                             double* HWY_RESTRICT c) {
  constexpr std::size_t N = hn::MaxLanes(D());
  for (std::size_t r = 0; r < MR; ++r) {
    for (std::size_t x = 0; x < NRV; ++x) {
      double* at = c + r * NRV * N + x * N;
      hn::StoreU(add ? hn::Add(hn::LoadU(d, at), acc[r][x]) : acc[r][x], d, at);
    }
  }
}

// The MR x (NRV * lanes of D) tile; both directions when kBoth.
template <class D, std::size_t MR, std::size_t NRV, bool kBoth>
void UkrDiagSym(std::int64_t k, const double* HWY_RESTRICT a, const double* HWY_RESTRICT b,
                bool accumulate, double* HWY_RESTRICT c, double* HWY_RESTRICT ct,
                const DiagSymTile& /*tile: MR and NR are compile-time here*/) noexcept {
  const D d;
  using V = hn::Vec<D>;
  constexpr std::size_t N = hn::MaxLanes(D());
  constexpr std::size_t NR = NRV * N;
  static_assert(MR <= NR && NR % MR == 0, "a's rows are a part of one panel");
  constexpr std::size_t MRT = kBoth ? MR : 1, NRT = kBoth ? NRV : 1;
  V acc[MR][NRV], acct[MRT][NRT];
  for (std::size_t r = 0; r < MR; ++r) {
    for (std::size_t x = 0; x < NRV; ++x)
      acc[r][x] = hn::Zero(d);
  }
  for (std::size_t r = 0; r < MRT; ++r) {
    for (std::size_t x = 0; x < NRT; ++x)
      acct[r][x] = hn::Zero(d);
  }
  const double* ah = a;
  const double* bh = b;
  for (std::int64_t h = 0; h < k; ++h, ah += 3 * NR, bh += 3 * NR) {
    V mu_b[NRV], v_b[NRV], lam_b[NRV];
    for (std::size_t x = 0; x < NRV; ++x) {
      mu_b[x] = hn::LoadU(d, bh + x * N);
      lam_b[x] = hn::LoadU(d, bh + 2 * NR + x * N);
      if constexpr (kBoth) v_b[x] = hn::LoadU(d, bh + NR + x * N);
    }
    for (std::size_t r = 0; r < MR; ++r) {
      const V mu_a = hn::Set(d, ah[r]);
      const V v_a = hn::Set(d, ah[NR + r]);
      for (std::size_t x = 0; x < NRV; ++x) {
        const V s = hn::Sub(mu_b[x], mu_a);
        acc[r][x] = hn::MulAdd(hn::MulAdd(s, s, v_a), lam_b[x], acc[r][x]);
        if constexpr (kBoth) {
          acct[r][x] = hn::MulAdd(hn::MulAdd(s, s, v_b[x]), hn::Set(d, ah[2 * NR + r]), acct[r][x]);
        }
      }
    }
  }
  FlushSymTile<D, MR, NRV>(d, acc, accumulate, c);
  if constexpr (kBoth) FlushSymTile<D, MR, NRV>(d, acct, accumulate, ct);
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();
#endif  // HWY_TARGET != HWY_SCALAR

#endif  // GAUSSKL_CPU_UKR_DIAG_SYM_INL_H_
