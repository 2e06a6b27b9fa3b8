// Row-wise KL between full Gaussians both given by their factors (scale_tril or
// packed_scale_tril, either with a log diagonal), read in place: the SIMD kernel
// (rowwise/ukr_full-inl.h, one per Highway target, picked at run time by rowwise/ukr_full.cpp). No
// prepared copies and nothing that can fail: validated factors have a positive diagonal.
//
// Per row, with delta = mu_p - mu_q and M = Lq^{-1} [delta | Lp] (the mean
// difference solved as one more column, in front of Lp's):
//   2 KL = sum of M's squares left of the diagonal of Lq^{-1} Lp (column 0 is |y|^2)
//        + sum_k f(2 log(Lp_kk / Lq_kk)),    f(r) = e^r - 1 - r >= 0,
// all in double whatever T is, clamped at >= 0, and exactly 0 when p and q are given alike.
#pragma once

#include <cstdint>

#include "cpu/tunables.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

// Staged rows are padded to a multiple of this many doubles (the widest vector, AVX-512).
inline constexpr std::int64_t kRowwiseFullPad = 8;

inline std::int64_t rowwise_full_round(std::int64_t n) {
  return (n + kRowwiseFullPad - 1) / kRowwiseFullPad * kRowwiseFullPad;
}
// Row strides of the staged [delta | Lp] (d + 1 columns and a vector of zeros past them) and Lq.
inline std::int64_t rowwise_full_ld_b(std::int64_t d) {
  return rowwise_full_round(d + 1) + kRowwiseFullPad;
}
inline std::int64_t rowwise_full_ld_q(std::int64_t d) {
  return rowwise_full_round(d);
}

// Doubles of scratch one worker needs at dimension d (any target): the staged factors, the rows
// of one tile of M, 1 / Lq_kk, Lp_kk / Lq_kk, mu_p - mu_q and log Lp_kk - log Lq_kk.
inline std::int64_t rowwise_full_scratch(std::int64_t d) {
  return d * (rowwise_full_ld_b(d) + rowwise_full_ld_q(d) +
              kRowwiseFullMaxVectors * kRowwiseFullPad) +
         4 * rowwise_full_ld_q(d);
}

// out[i] = KL(p_i || q_i) for lo <= i < hi (out is indexed by i itself), a side with one row
// broadcast over every i. p and q must hold valid scale_tril or packed_scale_tril factors; scratch
// holds rowwise_full_scratch(d) doubles, 64-byte aligned. The result of a row depends only on that
// row and the target, never on lo, hi or the strides of the views.
template <class T>
void rowwise_full(const FullGaussians<T>& p, const FullGaussians<T>& q, std::int64_t lo,
                  std::int64_t hi, double* out, double* scratch) noexcept;
const char* rowwise_full_target() noexcept;

}  // namespace gausskl::cpu
