// The SIMD row-wise full-covariance KL kernel (rowwise/ukr_full.hpp), compiled once per Highway
// target by rowwise/ukr_full.cpp: M = Lq^{-1} [delta | Lp] by register-blocked forward substitution
// on factors read in place, pivots by reciprocal except on M's diagonal (so KL(p || p) = 0). The
// steps and their accuracy: docs/kernels.md.

// Per-target include guard: toggled so that foreach_target.h re-includes this file per target.
#if defined(GAUSSKL_CPU_ROWWISE_FULL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GAUSSKL_CPU_ROWWISE_FULL_INL_H_
#undef GAUSSKL_CPU_ROWWISE_FULL_INL_H_
#else
#define GAUSSKL_CPU_ROWWISE_FULL_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cpu/common/stable.hpp"
#include "cpu/rowwise/ukr_diag-inl.h"
#include "cpu/rowwise/ukr_full.hpp"
#include "cpu/tunables.hpp"
#include "gausskl/types.hpp"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace rowwise_full_detail {

using DD = hn::ScalableTag<double>;
using VD = hn::Vec<DD>;
using rowwise_diag_detail::Expm1MinusX;
using rowwise_diag_detail::LoadWide;

#if HWY_TARGET <= HWY_AVX3
constexpr TriTileShape kTile = kRowwiseFullTileAvx3;
#else
constexpr TriTileShape kTile = kRowwiseFullTileOther;
#endif
constexpr int kRows = static_cast<int>(kTile.rows);
constexpr int kVectors = static_cast<int>(kTile.vectors);
static_assert(kVectors <= kRowwiseFullMaxVectors);

// The scratch of one worker, carved as rowwise_full_scratch sizes it.
struct Work {
  std::int64_t d, ld_b, ld_q, ld_t;
  double* b;          // [d * ld_b] B = [delta | Lp], rows zero-padded
  double* lq;         // [d * ld_q] Lq, lower triangle (rounded up to whole vectors)
  double* tile;       // [d * ld_t] the rows of M in the current tile of columns
  double* inv;        // [ld_q] 1 / Lq_kk
  double* ratio;      // [ld_q] Lp_kk / Lq_kk, M's diagonal
  double* delta;      // [ld_q] mu_p - mu_q
  double* log_ratio;  // [ld_q] log Lp_kk - log Lq_kk, when both are given as logs
};

inline Work Carve(std::int64_t d, double* scratch) {
  Work w;
  w.d = d;
  w.ld_b = rowwise_full_ld_b(d);
  w.ld_q = rowwise_full_ld_q(d);
  w.ld_t = kRowwiseFullMaxVectors * kRowwiseFullPad;
  w.b = scratch;
  w.lq = w.b + d * w.ld_b;
  w.tile = w.lq + d * w.ld_q;
  w.inv = w.tile + d * w.ld_t;
  w.ratio = w.inv + w.ld_q;
  w.delta = w.ratio + w.ld_q;
  w.log_ratio = w.delta + w.ld_q;
  return w;
}

// One distribution's factor as the kernel reads it: scale_tril rows (row r at data + r row_stride,
// zeros right of the diagonal) or packed rows (row r at data + r (r + 1) / 2 col_stride, its r + 1
// entries only); with log_diagonal (packed only) the diagonal holds log L_rr.
template <class T>
struct Factor {
  const T* data;
  std::int64_t row_stride, col_stride;
  bool packed, log_diagonal;

  const T* Row(std::int64_t r) const {
    return data + (packed ? r * (r + 1) / 2 * col_stride : r * row_stride);
  }
};

template <class T>
Factor<T> FactorOf(const FullGaussians<T>& g, std::int64_t i) {
  if (g.param == FullParam::packed_scale_tril) {
    return {g.packed.data + i * g.packed.strides[0], 0, g.packed.strides[1], true, g.log_diagonal};
  }
  return {g.scale.data + i * g.scale.strides[0], g.scale.strides[1], g.scale.strides[2], false,
          false};
}

// dst[0, count) = src[0], src[stride], ... widened to double; whole vectors when contiguous.
template <class T>
HWY_INLINE void Widen(DD d, const T* HWY_RESTRICT src, std::int64_t stride, std::int64_t count,
                      double* HWY_RESTRICT dst) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t c = 0;
  if (stride == 1) {
    for (; c + lanes <= count; c += lanes)
      hn::StoreU(LoadWide(d, src + c), d, dst + c);
  }
  for (; c < count; ++c)
    dst[c] = static_cast<double>(src[c * stride]);
}

// Block rows i0 .. i0 + RB - 1 against the rows j in [j, i0) of the tile starting at vector t0:
// NV vectors of each row j up to the one holding its diagonal, then the next NV.
template <int RB, int NB, int NV>
HWY_INLINE void SubtractAbove(DD d, const Work& w, std::int64_t i0, std::int64_t t0, std::int64_t j,
                              VD (&acc)[RB][NB]) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  // Row j's diagonal (column j + 1 of B) lies in tile vector NV - 1 while j + 1 < (t0 + NV) L.
  const std::int64_t end = NV == NB ? i0 : std::min(i0, (t0 + NV) * lanes - 1);
  const double* HWY_RESTRICT lq = w.lq + i0 * w.ld_q;
  for (; j < end; ++j) {
    const double* HWY_RESTRICT mj = w.tile + j * w.ld_t;
    VD m[NV];
    for (int v = 0; v < NV; ++v)
      m[v] = hn::LoadU(d, mj + v * lanes);
    for (int r = 0; r < RB; ++r) {
      const VD l = hn::Set(d, lq[r * w.ld_q + j]);
      for (int v = 0; v < NV; ++v)
        acc[r][v] = hn::NegMulAdd(l, m[v], acc[r][v]);
    }
  }
  if constexpr (NV < NB) SubtractAbove<RB, NB, NV + 1>(d, w, i0, t0, j, acc);
}

// Rows i0 .. i0 + RB - 1 of M in tile vectors t0 .. t0 + NB - 1 (the vectors that reach these
// rows' diagonals); rows j_first .. i0 - 1 of the tile are done. Returns the sum of squares left
// of the diagonals.
template <int RB, int NB>
HWY_NOINLINE VD Block(DD d, const Work& w, std::int64_t i0, std::int64_t t0, std::int64_t j_first) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  VD acc[RB][NB];
  for (int r = 0; r < RB; ++r) {
    for (int v = 0; v < NB; ++v)
      acc[r][v] = hn::LoadU(d, w.b + (i0 + r) * w.ld_b + (t0 + v) * lanes);
  }
  SubtractAbove<RB, NB, 1>(d, w, i0, t0, j_first, acc);
  // Each lane's column of B, minus i0 + 1, in vector 0: row r's diagonal is where it equals r.
  const VD column0 = hn::Iota(d, static_cast<double>(t0 * lanes - i0 - 1));
  VD sum = hn::Zero(d);
  for (int r = 0; r < RB; ++r) {
    const std::int64_t i = i0 + r;
    for (int k = 0; k < r; ++k) {
      const VD l = hn::Set(d, w.lq[i * w.ld_q + i0 + k]);
      for (int v = 0; v < NB; ++v)
        acc[r][v] = hn::NegMulAdd(l, acc[k][v], acc[r][v]);
    }
    const VD inv = hn::Set(d, w.inv[i]);
    for (int v = 0; v < NB; ++v) {
      const VD x = hn::Mul(acc[r][v], inv);
      const auto on_diagonal = hn::Eq(column0, hn::Set(d, static_cast<double>(r - v * lanes)));
      // Right of the diagonal every lane is exactly 0 (Lp's upper triangle is 0).
      const VD left = hn::IfThenZeroElse(on_diagonal, x);
      sum = hn::MulAdd(left, left, sum);
      acc[r][v] = hn::IfThenElse(on_diagonal, hn::Set(d, w.ratio[i]), x);
      hn::StoreU(acc[r][v], d, w.tile + i * w.ld_t + v * lanes);
    }
  }
  return sum;
}

template <int RB>
HWY_INLINE VD BlockOf(DD d, const Work& w, std::int64_t i0, std::int64_t t0, int nb,
                      std::int64_t j_first) {
  static_assert(kVectors <= 4, "add cases");
  if constexpr (kVectors >= 4) {
    if (nb >= 4) return Block<RB, 4>(d, w, i0, t0, j_first);
  }
  if constexpr (kVectors >= 3) {
    if (nb == 3) return Block<RB, 3>(d, w, i0, t0, j_first);
  }
  if constexpr (kVectors >= 2) {
    if (nb == 2) return Block<RB, 2>(d, w, i0, t0, j_first);
  }
  return Block<RB, 1>(d, w, i0, t0, j_first);
}

// Sum of M's squares left of the diagonal, over every tile of B's d + 1 columns.
HWY_INLINE VD SolveSquares(DD d, const Work& w) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dims = w.d, vectors = (dims + 1 + lanes - 1) / lanes;
  VD squares = hn::Zero(d);
  for (std::int64_t t0 = 0; t0 < vectors; t0 += kVectors) {
    const std::int64_t tile_vectors = std::min<std::int64_t>(kVectors, vectors - t0);
    const std::int64_t j_first = std::max<std::int64_t>(0, t0 * lanes - 1);
    for (std::int64_t i0 = j_first; i0 < dims; i0 += kRows) {
      const std::int64_t rb = std::min<std::int64_t>(kRows, dims - i0);
      // The vectors up to the one holding the last row's diagonal (column i0 + rb of B).
      const int nb = static_cast<int>(std::min(tile_vectors, (i0 + rb) / lanes - t0 + 1));
      VD sum;
      if (kRows >= 4 && rb >= 4) {
        sum = BlockOf < kRows >= 4 ? 4 : 1 > (d, w, i0, t0, nb, j_first);
      } else if (kRows >= 3 && rb == 3) {
        sum = BlockOf < kRows >= 3 ? 3 : 1 > (d, w, i0, t0, nb, j_first);
      } else if (kRows >= 2 && rb == 2) {
        sum = BlockOf<2>(d, w, i0, t0, nb, j_first);
      } else {
        sum = BlockOf<1>(d, w, i0, t0, nb, j_first);
      }
      squares = hn::Add(squares, sum);
    }
  }
  return squares;
}

// Row i of B = [delta | Lp] from a row of Lp read with unit stride, as far as the block holding
// row i reads it (the vector holding column i + kRows): whole vectors loaded from Lp one column to
// the left, so that the stores are aligned; vector 0 is Lp's first vector moved up a lane with
// delta_i in lane 0; a vector reaching past Lp's last column goes through a buffer.
template <class T>
HWY_INLINE void StageRow(DD d, const Work& w, const T* HWY_RESTRICT row, std::int64_t i,
                         double delta, double* HWY_RESTRICT b) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dims = w.d;
  const std::int64_t vectors = std::min((dims + lanes) / lanes, (i + kRows) / lanes + 1);
  std::int64_t v = 0;
  if (dims >= lanes) {
    HWY_ALIGN std::int64_t up[hn::MaxLanes(DD())];
    for (std::int64_t k = 0; k < lanes; ++k)
      up[k] = k == 0 ? 0 : k - 1;
    const VD shifted = hn::TableLookupLanes(LoadWide(d, row), hn::SetTableIndices(d, up));
    hn::Store(hn::IfThenElse(hn::FirstN(d, 1), hn::Set(d, delta), shifted), d, b);
    for (v = 1; v < vectors && (v + 1) * lanes <= dims + 1; ++v)
      hn::Store(LoadWide(d, row + v * lanes - 1), d, b + v * lanes);
  }
  for (; v < vectors; ++v) {
    HWY_ALIGN double buf[hn::MaxLanes(DD())];
    for (std::int64_t k = 0; k < lanes; ++k) {
      const std::int64_t column = v * lanes + k;
      buf[k] = column == 0 ? delta : column - 1 < dims ? static_cast<double>(row[column - 1]) : 0.0;
    }
    hn::Store(hn::Load(d, buf), d, b + v * lanes);
  }
}

// Row i of B from packed row i of Lp, the vectors StageRow writes: past its i + 1 entries a packed
// row runs into the next rows, so every vector is masked to zero right of the diagonal. With unit
// stride, whole vectors are loaded as in StageRow as long as they stay within the `readable`
// entries from the row's start (the rest of the distribution's packed array); other vectors, and
// strided rows, go through a buffer.
template <class T>
HWY_INLINE void StagePackedRow(DD d, const Work& w, const T* HWY_RESTRICT row, std::int64_t stride,
                               std::int64_t readable, std::int64_t i, double delta,
                               double* HWY_RESTRICT b) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t vectors = std::min((w.d + lanes) / lanes, (i + kRows) / lanes + 1);
  for (std::int64_t v = 0; v < vectors; ++v) {
    const std::int64_t first = v * lanes - 1;  // the entry in lane 0 (-1: delta's column)
    VD x;
    if (first > i) {
      x = hn::Zero(d);
    } else if (stride == 1 && v == 0 && readable >= lanes) {
      HWY_ALIGN std::int64_t up[hn::MaxLanes(DD())];
      for (std::int64_t k = 0; k < lanes; ++k)
        up[k] = k == 0 ? 0 : k - 1;
      const VD shifted = hn::TableLookupLanes(LoadWide(d, row), hn::SetTableIndices(d, up));
      x = hn::IfThenElse(hn::FirstN(d, 1), hn::Set(d, delta), shifted);
    } else if (stride == 1 && v > 0 && first + lanes <= readable) {
      x = LoadWide(d, row + first);
    } else {
      HWY_ALIGN double buf[hn::MaxLanes(DD())];
      for (std::int64_t k = 0; k < lanes; ++k) {
        const std::int64_t e = first + k;
        buf[k] = e < 0 ? delta : e <= i ? static_cast<double>(row[e * stride]) : 0.0;
      }
      x = hn::Load(d, buf);
    }
    const auto keep = static_cast<std::size_t>(std::min(lanes, i + 1 - first));
    hn::Store(hn::IfThenElseZero(hn::FirstN(d, keep), x), d, b + v * lanes);
  }
}

// 2 KL of one pair. kPacked: either side is packed. Without it every packed and log branch folds
// away, so that scale_tril pairs run the code they ran before packed factors existed.
template <bool kPacked, class T>
double TwoKl(DD d, const Work& w, const Factor<T>& lp, const Factor<T>& lq,
             const T* HWY_RESTRICT mu, std::int64_t mu_stride, const T* HWY_RESTRICT nu,
             std::int64_t nu_stride) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dims = w.d;
  const bool p_packed = kPacked && lp.packed, q_packed = kPacked && lq.packed;
  const bool p_log = kPacked && lp.log_diagonal, q_log = kPacked && lq.log_diagonal;
  const std::int64_t packed_size = dims * (dims + 1) / 2;
  if (mu_stride == 1 && nu_stride == 1) {
    std::int64_t k = 0;
    for (; k + lanes <= dims; k += lanes)
      hn::Store(hn::Sub(LoadWide(d, mu + k), LoadWide(d, nu + k)), d, w.delta + k);
    for (; k < dims; ++k)
      w.delta[k] = static_cast<double>(mu[k]) - static_cast<double>(nu[k]);
  } else {
    for (std::int64_t k = 0; k < dims; ++k) {
      w.delta[k] = static_cast<double>(mu[k * mu_stride]) - static_cast<double>(nu[k * nu_stride]);
    }
  }
  for (std::int64_t i = 0; i < dims; ++i) {
    double* b = w.b + i * w.ld_b;
    if (p_packed) {
      StagePackedRow(d, w, lp.Row(i), lp.col_stride, packed_size - i * (i + 1) / 2, i, w.delta[i],
                     b);
    } else if (lp.col_stride == 1) {
      StageRow(d, w, lp.Row(i), i, w.delta[i], b);
    } else {
      // Strided: the same values, element by element, and zeros past Lp's last column.
      b[0] = w.delta[i];
      Widen(d, lp.Row(i), lp.col_stride, dims, b + 1);
      hn::StoreU(hn::Zero(d), d, b + dims + 1);
    }
    // Whole vectors, as far as they stay within the array: what lies right of the diagonal (the
    // next rows' entries, for a packed row) is never read.
    const std::int64_t whole = std::min(dims, (i + lanes) / lanes * lanes);
    const std::int64_t row = q_packed ? std::min(whole, packed_size - i * (i + 1) / 2) : whole;
    Widen(d, lq.Row(i), lq.col_stride, row, w.lq + i * w.ld_q);
  }
  // M's diagonal and pivots first: the solve needs them. The ratio is exactly 1 where the
  // diagonals are equal, which keeps KL(p || p) at 0; the staged diagonals are read only here, so
  // logs (log_diagonal) stay logs in the solve.
  const bool logs = p_log && q_log;
  const double pad_p = p_log ? 0.0 : 1.0, pad_q = q_log ? 0.0 : 1.0;
  for (std::int64_t k0 = 0; k0 < dims; k0 += lanes) {
    HWY_ALIGN double a[hn::MaxLanes(DD())], c[hn::MaxLanes(DD())];
    for (std::int64_t k = 0; k < lanes; ++k) {
      const bool in = k0 + k < dims;
      a[k] = in ? w.b[(k0 + k) * w.ld_b + k0 + k + 1] : pad_p;
      c[k] = in ? w.lq[(k0 + k) * w.ld_q + k0 + k] : pad_q;
    }
    VD vp = hn::Load(d, a), vq = hn::Load(d, c);
    if (logs) hn::Store(hn::Sub(vp, vq), d, w.log_ratio + k0);
    if (p_log) vp = hn::Exp(d, vp);
    if (q_log) vq = hn::Exp(d, vq);
    const VD inv = hn::Div(hn::Set(d, 1.0), vq);
    hn::Store(inv, d, w.inv + k0);
    hn::Store(hn::IfThenElse(hn::Eq(vp, vq), hn::Set(d, 1.0), hn::Mul(vp, inv)), d, w.ratio + k0);
  }
  const VD squares = SolveSquares(d, w);
  // The diagonal terms after the solve, which does not need them: their long Log and Expm1
  // chains overlap its last blocks.
  VD f = hn::Zero(d);
  for (std::int64_t k0 = 0; k0 < dims; k0 += lanes) {
    VD half_r;
    if (logs) {
      half_r = hn::Load(d, w.log_ratio + k0);
    } else {
      const VD ratio = hn::Load(d, w.ratio + k0);
      half_r = hn::IfThenZeroElse(hn::Eq(ratio, hn::Set(d, 1.0)), hn::Log(d, ratio));
    }
    f = hn::Add(f, Expm1MinusX(d, hn::Add(half_r, half_r)));
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(f, squares)));
}

template <class T>
void Rows(const FullGaussians<T>& p, const FullGaussians<T>& q, std::int64_t lo, std::int64_t hi,
          double* HWY_RESTRICT out, double* HWY_RESTRICT scratch) noexcept {
  const DD d;
  const Work w = Carve(p.mean.shape[1], scratch);
  const bool p_once = p.mean.shape[0] == 1, q_once = q.mean.shape[0] == 1;
  const bool packed =
      p.param == FullParam::packed_scale_tril || q.param == FullParam::packed_scale_tril;
  for (std::int64_t i = lo; i < hi; ++i) {
    const std::int64_t ip = p_once ? 0 : i, iq = q_once ? 0 : i;
    const Factor<T> lp = FactorOf(p, ip), lq = FactorOf(q, iq);
    const T* mu = p.mean.data + ip * p.mean.strides[0];
    const T* nu = q.mean.data + iq * q.mean.strides[0];
    const double two_kl =
        packed ? TwoKl<true>(d, w, lp, lq, mu, p.mean.strides[1], nu, q.mean.strides[1])
               : TwoKl<false>(d, w, lp, lq, mu, p.mean.strides[1], nu, q.mean.strides[1]);
    out[i] = 0.5 * two_kl_of_sum(two_kl);
  }
}

}  // namespace rowwise_full_detail

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // GAUSSKL_CPU_ROWWISE_FULL_INL_H_
