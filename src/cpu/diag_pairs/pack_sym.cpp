// Highway runtime dispatch of pack_diag_sym (diag_pairs/pack.hpp): this file is compiled once per
// target and the best one the CPU supports is picked at run time. When a panel is one vector wide
// (the symmetric kernel's tiles on AVX-512, AVX2 and SSE4), blocks of N rows by N h are loaded as N
// vectors and transposed in registers; other widths, and the last h of a row, go value by value.
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/diag_pairs/pack_sym.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cpu/diag_pairs/pack.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR  // one lane: no interleaving, and nothing to transpose
// v[k] becomes the k-th column of the N x N block whose rows were v[0 .. N - 1]: pairs interleaved
// within 128-bit blocks, then blocks gathered across the vector.
template <class D, class V = hn::Vec<D>>
HWY_INLINE void Transpose(D d, V* v) {
  constexpr std::size_t N = hn::MaxLanes(D());
  if constexpr (N == 2) {
    const V a = hn::InterleaveLower(d, v[0], v[1]), b = hn::InterleaveUpper(d, v[0], v[1]);
    v[0] = a;
    v[1] = b;
  } else if constexpr (N == 4) {
    // t0 = a0 b0 | a2 b2, t1 = a1 b1 | a3 b3, t2 = c0 d0 | c2 d2, t3 = c1 d1 | c3 d3.
    const V t0 = hn::InterleaveLower(d, v[0], v[1]), t1 = hn::InterleaveUpper(d, v[0], v[1]);
    const V t2 = hn::InterleaveLower(d, v[2], v[3]), t3 = hn::InterleaveUpper(d, v[2], v[3]);
    v[0] = hn::ConcatLowerLower(d, t2, t0);
    v[1] = hn::ConcatLowerLower(d, t3, t1);
    v[2] = hn::ConcatUpperUpper(d, t2, t0);
    v[3] = hn::ConcatUpperUpper(d, t3, t1);
  } else if constexpr (N == 8) {
    // t[2k] holds pairs (r_2k, r_2k+1) at even columns 0 2 | 4 6 by 128-bit block, t[2k+1] at
    // odd ones.
    V t[8];
    for (std::size_t k = 0; k < 4; ++k) {
      t[2 * k] = hn::InterleaveLower(d, v[2 * k], v[2 * k + 1]);
      t[2 * k + 1] = hn::InterleaveUpper(d, v[2 * k], v[2 * k + 1]);
    }
    // For column parity p: u = blocks (rows 01, rows 23) of columns {p, p + 4} and {p + 2,
    // p + 6}, then rows 45 and 67 likewise; halves of those make the columns.
    for (std::size_t p = 0; p < 2; ++p) {
      const V lo01 = t[p], lo23 = t[2 + p], hi01 = t[4 + p], hi23 = t[6 + p];
      const V a = hn::OddEvenBlocks(hn::SwapAdjacentBlocks(lo23), lo01);  // col p, p+4 rows 0-3
      const V b = hn::OddEvenBlocks(lo23, hn::SwapAdjacentBlocks(lo01));  // col p+2, p+6
      const V c = hn::OddEvenBlocks(hn::SwapAdjacentBlocks(hi23), hi01);  // rows 4-7
      const V e = hn::OddEvenBlocks(hi23, hn::SwapAdjacentBlocks(hi01));
      v[p] = hn::ConcatLowerLower(d, c, a);
      v[p + 4] = hn::ConcatUpperUpper(d, c, a);
      v[p + 2] = hn::ConcatLowerLower(d, e, b);
      v[p + 6] = hn::ConcatUpperUpper(d, e, b);
    }
  }
}
#endif

void PackSym(const double* mu, const double* v, const double* lam, std::int64_t ld,
             std::int64_t rows, std::int64_t d, std::int64_t nr, double* dst) {
  std::int64_t h0 = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<double> dt;
  using V = hn::Vec<decltype(dt)>;
  constexpr std::size_t N = hn::MaxLanes(hn::ScalableTag<double>());
  if constexpr (N == 2 || N == 4 || N == 8) {
    if (nr == static_cast<std::int64_t>(N) && hn::Lanes(dt) == N) {
      const double* parts[3] = {mu, v, lam};
      for (; h0 + nr <= d; h0 += nr) {
        for (std::int64_t part = 0; part < 3; ++part) {
          V block[N];
          for (std::size_t c = 0; c < N; ++c) {
            block[c] = static_cast<std::int64_t>(c) < rows
                           ? hn::LoadU(dt, parts[part] + static_cast<std::int64_t>(c) * ld + h0)
                           : hn::Zero(dt);
          }
          Transpose(dt, block);
          for (std::size_t k = 0; k < N; ++k)
            hn::StoreU(block[k], dt,
                       dst + (h0 + static_cast<std::int64_t>(k)) * 3 * nr + part * nr);
        }
      }
    }
  }
#endif
  // Value by value: any nr, and the h past the last whole block.
  for (std::int64_t h = h0; h < d; ++h) {
    double* out = dst + h * 3 * nr;
    for (std::int64_t c = 0; c < nr; ++c) {
      const bool real = c < rows;
      out[c] = real ? mu[c * ld + h] : 0.0;
      out[nr + c] = real ? v[c * ld + h] : 0.0;
      out[2 * nr + c] = real ? lam[c * ld + h] : 0.0;
    }
  }
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(PackSym);

void pack_diag_sym(const double* mu, const double* v, const double* lam, std::int64_t ld,
                   std::int64_t rows, std::int64_t d, std::int64_t nr, double* dst) noexcept {
  HWY_DYNAMIC_DISPATCH(PackSym)(mu, v, lam, ld, rows, d, nr, dst);
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
