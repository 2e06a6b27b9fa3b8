// The SIMD kernel of rowwise/ukr_full_backward.hpp, compiled once per Highway target by
// rowwise/ukr_full_backward.cpp: two substitutions by Lq on register blocks of staircase rows give
// every gradient, dL/dLq's F without a second solve. The steps: docs/kernels.md.

// Per-target include guard: toggled so that foreach_target.h re-includes this file per target.
#if defined(GAUSSKL_CPU_ROWWISE_FULL_BACKWARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GAUSSKL_CPU_ROWWISE_FULL_BACKWARD_INL_H_
#undef GAUSSKL_CPU_ROWWISE_FULL_BACKWARD_INL_H_
#else
#define GAUSSKL_CPU_ROWWISE_FULL_BACKWARD_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cpu/rowwise/grad_sink.hpp"
#include "cpu/rowwise/ukr_diag-inl.h"
#include "cpu/rowwise/ukr_full_backward.hpp"
#include "cpu/tunables.hpp"
#include "gausskl/types.hpp"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace rowwise_full_backward_detail {

using DD = hn::ScalableTag<double>;
using VD = hn::Vec<DD>;

// Register blocks of every O(d^3) step: kRows rows by kVectors vectors of columns
// (tunables.hpp).
#if HWY_TARGET <= HWY_AVX3
constexpr TriTileShape kTile = kRowwiseFullBackwardTileAvx3;
#else
constexpr TriTileShape kTile = kRowwiseFullBackwardTileOther;
#endif
constexpr int kRows = static_cast<int>(kTile.rows);
constexpr int kVectors = static_cast<int>(kTile.vectors);
static_assert(kVectors >= 1 && kVectors <= 4, "ForTiles dispatches 1 to 4 vectors");

// One side's factor of distribution i, read in place (a log diagonal as stored).
template <class T>
struct Factor {
  const T* base;
  std::int64_t s1, s2;  // scale_tril: row and column strides; packed: s1 the element stride
  bool packed, log_diagonal;

  // Row r's first element and the stride along it.
  const T* row(std::int64_t r) const {
    return packed ? base + r * (r + 1) / 2 * s1 : base + r * s1;
  }
  std::int64_t stride() const { return packed ? s1 : s2; }
  double diagonal(std::int64_t r) const { return static_cast<double>(row(r)[r * stride()]); }
  // Offset of element (r, 0) in a gradient row of this side's scale array, and that row's size.
  std::int64_t offset(std::int64_t d, std::int64_t r) const {
    return packed ? r * (r + 1) / 2 : r * d;
  }
  std::int64_t row_size(std::int64_t d) const { return packed ? d * (d + 1) / 2 : d * d; }
};

template <class T>
Factor<T> FactorOf(const FullGaussians<T>& g, std::int64_t i) {
  if (g.param == FullParam::packed_scale_tril) {
    return {g.packed.data + i * g.packed.strides[0], g.packed.strides[1], 0, true, g.log_diagonal};
  }
  return {g.scale.data + i * g.scale.strides[0], g.scale.strides[1], g.scale.strides[2], false,
          false};
}

// The scratch of one worker, carved as rowwise_full_backward_scratch sizes it.
struct Work {
  std::int64_t d, ldq, ldx;
  double* lq;      // [d * ldq] Lq's strictly lower rows, 0 from the diagonal on (never written)
  double* lp;      // [d * ldq] Lp's, the same
  double* f;       // [d * ldq] F = tril((Lq^{-T} X) X^T)
  double* x;       // [d * ldx] X, then Lq^{-1} X, then Lq^{-T} Lq^{-1} X
  double* xt;      // [(d + 1) * ldq] (Lq^{-1} X)^T, 0 where X^T is (never written)
  double* lp_k;    // [ldq] Lp_kk
  double* lq_k;    // [ldq] Lq_kk
  double* inv;     // [ldq] 1 / Lq_kk
  double* inv_p;   // [ldq] 1 / Lp_kk
  double* d_k;     // [ldq] D_kk
  double* n_k;     // [ldq] N_kk = D_kk / Lq_kk
  double* m_form;  // [ldq] 1 where column k is solved in the M-form, 0 in the N-form
  double* sum_d;   // [ldq] sum_j |D_jk| / Lq_jj
  double* sum_p;   // [ldq] sum_j |Lp_jk| / Lq_jj
  double* row;     // [ldq] a gradient row being assembled
};

inline Work Carve(std::int64_t d, double* scratch) {
  Work w;
  w.d = d;
  w.ldq = full_backward_round(d);
  w.ldx = w.ldq + kFullBackwardPad;  // room for [delta | a row of ldq]
  w.lq = scratch;
  w.lp = w.lq + d * w.ldq;
  w.f = w.lp + d * w.ldq;
  w.x = w.f + d * w.ldq;
  w.xt = w.x + d * w.ldx;
  double* k = w.xt + (d + 1) * w.ldq;
  for (double** v : {&w.lp_k, &w.lq_k, &w.inv, &w.inv_p, &w.d_k, &w.n_k, &w.m_form, &w.sum_d,
                     &w.sum_p, &w.row}) {
    *v = k;
    k += w.ldq;
  }
  return w;
}

// Vectors of a row that reach column `columns` - 1.
HWY_INLINE std::int64_t VectorsFor(std::int64_t columns, std::int64_t lanes) {
  return (columns + lanes - 1) / lanes;
}

// dst[0, r) = row r of f left of the diagonal, widened. Whatever lies right of it in dst is left
// as is: 0 since Rows cleared the scratch, as nothing else writes there.
template <class T>
HWY_INLINE void StageRow(DD d, const Factor<T>& f, std::int64_t r, double* HWY_RESTRICT dst) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const T* src = f.row(r);
  const std::int64_t stride = f.stride();
  std::int64_t c = 0;
  if (stride == 1) {
    for (; c + lanes <= r; c += lanes)
      hn::StoreU(rowwise_diag_detail::LoadWide(d, src + c), d, dst + c);
  }
  for (; c < r; ++c)
    dst[c] = static_cast<double>(src[c * stride]);
}

// Calls f(integral_constant<NB>, v0) for the tiles of `vectors` vectors, NB <= kVectors each.
template <class F>
HWY_INLINE void ForTiles(std::int64_t vectors, const F& f) {
  for (std::int64_t v0 = 0; v0 < vectors; v0 += kVectors) {
    switch (std::min<std::int64_t>(kVectors, vectors - v0)) {
      case 4:
        if constexpr (kVectors >= 4) f(std::integral_constant<int, 4>(), v0);
        break;
      case 3:
        if constexpr (kVectors >= 3) f(std::integral_constant<int, 3>(), v0);
        break;
      case 2:
        f(std::integral_constant<int, 2>(), v0);
        break;
      default:
        f(std::integral_constant<int, 1>(), v0);
        break;
    }
  }
}

// Rows i0 .. i0 + RB - 1 of X <- Lq^{-1} X in tile vectors v0 .. v0 + NB - 1: minus Lq_ij X_j for
// the rows j0 <= j < i0 above the block (done), then the block's own triangle.
template <int RB, int NB>
HWY_INLINE void ForwardBlock(DD d, const Work& w, std::int64_t i0, std::int64_t v0,
                             std::int64_t j0) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  double* HWY_RESTRICT x0 = w.x + i0 * w.ldx + v0 * lanes;
  const double* HWY_RESTRICT lq0 = w.lq + i0 * w.ldq;
  VD acc[RB][NB];
  for (int r = 0; r < RB; ++r) {
    for (int v = 0; v < NB; ++v)
      acc[r][v] = hn::LoadU(d, x0 + r * w.ldx + v * lanes);
  }
  for (std::int64_t j = j0; j < i0; ++j) {
    const double* HWY_RESTRICT xj = w.x + j * w.ldx + v0 * lanes;
    VD xv[NB];
    for (int v = 0; v < NB; ++v)
      xv[v] = hn::LoadU(d, xj + v * lanes);
    for (int r = 0; r < RB; ++r) {
      const VD l = hn::Set(d, lq0[r * w.ldq + j]);
      for (int v = 0; v < NB; ++v)
        acc[r][v] = hn::NegMulAdd(l, xv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < RB; ++r) {
    for (int k = 0; k < r; ++k) {
      const VD l = hn::Set(d, lq0[r * w.ldq + i0 + k]);
      for (int v = 0; v < NB; ++v)
        acc[r][v] = hn::NegMulAdd(l, acc[k][v], acc[r][v]);
    }
    const VD inv = hn::Set(d, w.inv[i0 + r]);
    for (int v = 0; v < NB; ++v) {
      acc[r][v] = hn::Mul(acc[r][v], inv);
      hn::StoreU(acc[r][v], d, x0 + r * w.ldx + v * lanes);
    }
  }
}

// Rows i0 .. i0 + RB - 1 of X <- Lq^{-T} X in tile vectors v0 .. v0 + NB - 1: minus Lq_ji Z_j for
// the rows j >= i0 + RB below the block (done), then the block's own triangle from its bottom.
template <int RB, int NB>
HWY_INLINE void BackBlock(DD d, const Work& w, std::int64_t i0, std::int64_t v0) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  double* HWY_RESTRICT x0 = w.x + i0 * w.ldx + v0 * lanes;
  VD acc[RB][NB];
  for (int r = 0; r < RB; ++r) {
    for (int v = 0; v < NB; ++v)
      acc[r][v] = hn::LoadU(d, x0 + r * w.ldx + v * lanes);
  }
  for (std::int64_t j = i0 + RB; j < w.d; ++j) {
    const double* HWY_RESTRICT zj = w.x + j * w.ldx + v0 * lanes;
    const double* HWY_RESTRICT l_row = w.lq + j * w.ldq + i0;  // Lq_j,i0 .. Lq_j,i0+RB-1
    VD zv[NB];
    for (int v = 0; v < NB; ++v)
      zv[v] = hn::LoadU(d, zj + v * lanes);
    for (int r = 0; r < RB; ++r) {
      const VD l = hn::Set(d, l_row[r]);
      for (int v = 0; v < NB; ++v)
        acc[r][v] = hn::NegMulAdd(l, zv[v], acc[r][v]);
    }
  }
  for (int r = RB - 1; r >= 0; --r) {
    for (int k = r + 1; k < RB; ++k) {
      const VD l = hn::Set(d, w.lq[(i0 + k) * w.ldq + i0 + r]);
      for (int v = 0; v < NB; ++v)
        acc[r][v] = hn::NegMulAdd(l, acc[k][v], acc[r][v]);
    }
    const VD inv = hn::Set(d, w.inv[i0 + r]);
    for (int v = 0; v < NB; ++v) {
      acc[r][v] = hn::Mul(acc[r][v], inv);
      hn::StoreU(acc[r][v], d, x0 + r * w.ldx + v * lanes);
    }
  }
}

// Rows r0 .. r0 + RB - 1 of F = (Lq^{-T} X) X^T in tile vectors v0 .. v0 + NB - 1, into f:
// sum_{k < k_end} (Lq^{-T} X)_rk (X^T)_k.
template <int RB, int NB>
HWY_INLINE void GramBlock(DD d, const Work& w, std::int64_t r0, std::int64_t v0, std::int64_t k_end,
                          double* HWY_RESTRICT f) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const double* HWY_RESTRICT z0 = w.x + r0 * w.ldx;
  VD acc[RB][NB];
  for (int r = 0; r < RB; ++r) {
    for (int v = 0; v < NB; ++v)
      acc[r][v] = hn::Zero(d);
  }
  for (std::int64_t k = 0; k < k_end; ++k) {
    const double* HWY_RESTRICT xt = w.xt + k * w.ldq + v0 * lanes;
    VD xv[NB];
    for (int v = 0; v < NB; ++v)
      xv[v] = hn::LoadU(d, xt + v * lanes);
    for (int r = 0; r < RB; ++r) {
      const VD a = hn::Set(d, z0[r * w.ldx + k]);
      for (int v = 0; v < NB; ++v)
        acc[r][v] = hn::MulAdd(a, xv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < RB; ++r) {
    for (int v = 0; v < NB; ++v)
      hn::StoreU(acc[r][v], d, f + (r0 + r) * w.ldq + (v0 + v) * lanes);
  }
}

// The diagonals of p and q as vectors over k (padding lanes describe L_kk = 1).
template <class T>
HWY_INLINE void StageDiagonals(DD d, const Work& w, const Factor<T>& fp, const Factor<T>& fq) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dims = w.d;
  for (std::int64_t k = 0; k < w.ldq; ++k) {
    w.lp_k[k] = k < dims ? fp.diagonal(k) : fp.log_diagonal ? 0.0 : 1.0;
    w.lq_k[k] = k < dims ? fq.diagonal(k) : fq.log_diagonal ? 0.0 : 1.0;
  }
  const VD one = hn::Set(d, 1.0);
  for (std::int64_t k = 0; k < w.ldq; k += lanes) {
    const VD a = hn::LoadU(d, w.lp_k + k), b = hn::LoadU(d, w.lq_k + k);
    const VD lp = fp.log_diagonal ? hn::Exp(d, a) : a;
    const VD lq = fq.log_diagonal ? hn::Exp(d, b) : b;
    // D_kk from the stored values' difference: exact where they are close.
    const VD dk = fp.log_diagonal && fq.log_diagonal ? hn::Mul(lq, hn::Expm1(d, hn::Sub(a, b)))
                                                     : hn::Sub(lp, lq);
    const VD inv = hn::Div(one, lq);
    hn::StoreU(lp, d, w.lp_k + k);
    hn::StoreU(lq, d, w.lq_k + k);
    hn::StoreU(inv, d, w.inv + k);
    hn::StoreU(hn::Div(one, lp), d, w.inv_p + k);
    hn::StoreU(dk, d, w.d_k + k);
    hn::StoreU(hn::Mul(dk, inv), d, w.n_k + k);
  }
}

// Picks each column's form and stages X = [delta | D or Lp by column] (Lp's rows staged).
HWY_INLINE void StageFactorColumns(DD d, const Work& w) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dims = w.d;
  // Row j of a right-hand side enters the solve divided by Lq_jj: weigh the sums so.
  for (std::int64_t k = 0; k < w.ldq; k += lanes) {
    const VD inv = hn::LoadU(d, w.inv + k);
    hn::StoreU(hn::Mul(hn::Abs(hn::LoadU(d, w.d_k + k)), inv), d, w.sum_d + k);
    hn::StoreU(hn::Mul(hn::LoadU(d, w.lp_k + k), inv), d, w.sum_p + k);
  }
  for (std::int64_t r = 1; r < dims; ++r) {
    const VD inv = hn::Set(d, w.inv[r]);
    const double* lp = w.lp + r * w.ldq;
    const double* lq = w.lq + r * w.ldq;
    for (std::int64_t k = 0; k < r; k += lanes) {
      const VD a = hn::LoadU(d, lp + k), b = hn::LoadU(d, lq + k);
      hn::StoreU(hn::MulAdd(hn::Abs(hn::Sub(a, b)), inv, hn::LoadU(d, w.sum_d + k)), d,
                 w.sum_d + k);
      hn::StoreU(hn::MulAdd(hn::Abs(a), inv, hn::LoadU(d, w.sum_p + k)), d, w.sum_p + k);
    }
  }
  for (std::int64_t k = 0; k < w.ldq; k += lanes) {
    const auto m = hn::Gt(hn::LoadU(d, w.sum_d + k), hn::LoadU(d, w.sum_p + k));
    hn::StoreU(hn::IfThenElseZero(m, hn::Set(d, 1.0)), d, w.m_form + k);
  }
  const VD iota = hn::Iota(d, 0.0);
  for (std::int64_t r = 0; r < dims; ++r) {
    const double* lp = w.lp + r * w.ldq;
    const double* lq = w.lq + r * w.ldq;
    double* x = w.x + r * w.ldx;
    // Columns 1 .. ldq of X from Lp and Lq left of the diagonal (0 right of it), the diagonal
    // put in its lane (not stored on its own: the solve's vector loads would wait on it).
    const VD diagonal = hn::Set(d, w.m_form[r] != 0 ? w.lp_k[r] : w.d_k[r]);
    for (std::int64_t k = 0; k < w.ldq; k += lanes) {
      const VD a = hn::LoadU(d, lp + k);
      const auto m = hn::Ne(hn::LoadU(d, w.m_form + k), hn::Zero(d));
      const VD value = hn::IfThenElse(m, a, hn::Sub(a, hn::LoadU(d, lq + k)));
      const auto at_diagonal = hn::Eq(iota, hn::Set(d, static_cast<double>(r - k)));
      hn::StoreU(hn::IfThenElse(at_diagonal, diagonal, value), d, x + 1 + k);
    }
  }
}

// Writes (rows) or adds (sum) row r of a side's scale gradient, vector by vector from registers:
// values(v) is vector v of the row (columns v L ..), masked here to c <= r, with `diagonal` in
// column r; a scale_tril row gets its 0s right of the diagonal too. From registers, not a buffer:
// that cost a failed store-to-load forward per row (docs/kernels.md). Whole vectors are stored
// only within the row's own elements: past them lies the next row or another worker's.
template <class T, class Values>
HWY_INLINE void PutScaleRow(DD d, const GradSink<T>& sink, const Factor<T>& f, std::int64_t dims,
                            std::int64_t i, std::int64_t r, const Values& values, double diagonal) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t count = sink.rows && !f.packed ? dims : r + 1;
  const VD iota = hn::Iota(d, 0.0);
  for (std::int64_t v = 0; v * lanes < count; ++v) {
    const std::int64_t c0 = v * lanes;
    VD x = hn::Zero(d);
    if (c0 <= r) {
      x = hn::IfThenElseZero(hn::FirstN(d, static_cast<std::size_t>(r + 1 - c0)), values(v));
      if (r < c0 + lanes) {
        x = hn::IfThenElse(hn::Eq(iota, hn::Set(d, static_cast<double>(r - c0))),
                           hn::Set(d, diagonal), x);
      }
    }
    const std::int64_t here = std::min(lanes, count - c0);
    if (sink.rows) {
      T* HWY_RESTRICT dst = sink.rows + i * f.row_size(dims) + f.offset(dims, r) + c0;
      if constexpr (std::is_same_v<T, float>) {
        const hn::Rebind<float, DD> df;
        if (here == lanes) {
          hn::StoreU(hn::DemoteTo(df, x), df, dst);
        } else {
          HWY_ALIGN float buf[hn::MaxLanes(DD())];
          hn::Store(hn::DemoteTo(df, x), df, buf);
          std::copy(buf, buf + here, dst);
        }
      } else {
        if (here == lanes) {
          hn::StoreU(x, d, dst);
        } else {
          HWY_ALIGN double buf[hn::MaxLanes(DD())];
          hn::Store(x, d, buf);
          std::copy(buf, buf + here, dst);
        }
      }
    } else {
      double* HWY_RESTRICT dst = sink.sum + f.offset(dims, r) + c0;
      if (here == lanes) {
        hn::StoreU(hn::Add(hn::LoadU(d, dst), x), d, dst);
      } else {
        HWY_ALIGN double buf[hn::MaxLanes(DD())];
        hn::Store(x, d, buf);
        for (std::int64_t k = 0; k < here; ++k)
          dst[k] += buf[k];
      }
    }
  }
}

// Writes or adds a side's mean gradient: g * values[r * stride].
template <class T>
HWY_INLINE void PutMean(const GradSink<T>& sink, std::int64_t d, std::int64_t i, double g,
                        const double* values, std::int64_t stride) {
  if (sink.rows) {
    for (std::int64_t r = 0; r < d; ++r)
      sink.rows[i * d + r] = static_cast<T>(g * values[r * stride]);
  } else {
    for (std::int64_t r = 0; r < d; ++r)
      sink.sum[r] += g * values[r * stride];
  }
}

template <class T>
void PairRow(DD d, const Work& w, const FullGaussians<T>& p, const FullGaussians<T>& q,
             std::int64_t i, double g, const SideSinks<T>& sp, const SideSinks<T>& sq) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dims = w.d, ldq = w.ldq, ldx = w.ldx;
  const std::int64_t ip = p.mean.shape[0] == 1 ? 0 : i, iq = q.mean.shape[0] == 1 ? 0 : i;
  const Factor<T> fp = FactorOf(p, ip), fq = FactorOf(q, iq);
  const bool want_p = sp.scale.wanted(), want_q = sq.scale.wanted();
  const std::int64_t width = want_p || want_q ? dims + 1 : 1;  // columns of X in use

  // 1. Staging.
  StageDiagonals(d, w, fp, fq);
  for (std::int64_t r = 0; r < dims; ++r)
    StageRow(d, fq, r, w.lq + r * ldq);
  if (width > 1) {
    for (std::int64_t r = 0; r < dims; ++r)
      StageRow(d, fp, r, w.lp + r * ldq);
    StageFactorColumns(d, w);
  }
  const T* mu = p.mean.data + ip * p.mean.strides[0];
  const T* nu = q.mean.data + iq * q.mean.strides[0];
  for (std::int64_t r = 0; r < dims; ++r) {
    w.x[r * ldx] = static_cast<double>(mu[r * p.mean.strides[1]]) -
                   static_cast<double>(nu[r * q.mean.strides[1]]);
  }

  // 2. X <- Lq^{-1} X, blocks of kRows rows from the top (the last rows one at a time). Row j
  // of X is zero from vector (j + 2) / L on, so tile v0 starts at row j = v0 L - 1; a block
  // covers the vectors its last row reaches (those of its other rows there are exact 0s).
  {
    const auto forward = [&](auto rows, std::int64_t i0) {
      constexpr int kBlock = decltype(rows)::value;
      ForTiles(VectorsFor(std::min(i0 + kBlock + 1, width), lanes), [&](auto nb, std::int64_t v0) {
        ForwardBlock<kBlock, decltype(nb)::value>(d, w, i0, v0,
                                                  std::max<std::int64_t>(0, v0 * lanes - 1));
      });
    };
    std::int64_t i0 = 0;
    for (; i0 + kRows <= dims; i0 += kRows)
      forward(std::integral_constant<int, kRows>(), i0);
    for (; i0 < dims; ++i0)
      forward(std::integral_constant<int, 1>(), i0);
  }

  // 3. X^T for dL/dLq: row k holds column k of X (0 left of column k - 1, never written).
  if (want_q) {
    for (std::int64_t r = 0; r < dims; ++r) {
      const double* x = w.x + r * ldx;
      const std::int64_t k_end = std::min(r + 1, dims);
      for (std::int64_t k = 0; k <= k_end; ++k)
        w.xt[k * ldq + r] = x[k];
    }
  }

  // 4. X <- Lq^{-T} X, blocks of kRows rows from the bottom (the first rows one at a time). The
  // vectors a block covers past its rows' staircases get Lq^{-T} X's true values there.
  {
    const auto back = [&](auto rows, std::int64_t i0) {
      constexpr int kBlock = decltype(rows)::value;
      ForTiles(VectorsFor(std::min(i0 + kBlock + 1, width), lanes), [&](auto nb, std::int64_t v0) {
        BackBlock<kBlock, decltype(nb)::value>(d, w, i0, v0);
      });
    };
    std::int64_t top = dims;  // rows top .. dims - 1 are done
    for (; top >= kRows; top -= kRows)
      back(std::integral_constant<int, kRows>(), top - kRows);
    for (; top > 0; --top)
      back(std::integral_constant<int, 1>(), top - 1);
  }

  // F = tril((Lq^{-T} X) X^T): row r needs columns 0 .. r, from X's columns k <= r + 1 (X^T_k
  // is 0 left of column k - 1, so a tile of columns needs only k <= its last column + 1).
  double* f = w.f;
  if (want_q) {
    const auto gram = [&](auto rows, std::int64_t r0) {
      constexpr int kBlock = decltype(rows)::value;
      ForTiles(VectorsFor(r0 + kBlock, lanes), [&](auto nb, std::int64_t v0) {
        constexpr int kNb = decltype(nb)::value;
        const std::int64_t k_end = std::min(r0 + kBlock + 1, (v0 + kNb) * lanes + 1);
        GramBlock<kBlock, kNb>(d, w, r0, v0, k_end, f);
      });
    };
    std::int64_t r0 = 0;
    for (; r0 + kRows <= dims; r0 += kRows)
      gram(std::integral_constant<int, kRows>(), r0);
    for (; r0 < dims; ++r0)
      gram(std::integral_constant<int, 1>(), r0);
  }

  // 5. The gradients, times g (rowwise/ukr_full_backward.hpp). Column 0 of X is Lq^{-T} y;
  // columns 1 .. r + 1 of row r are row r of Z.
  if (sp.mean.wanted()) PutMean(sp.mean, dims, ip, g, w.x, ldx);
  if (sq.mean.wanted()) PutMean(sq.mean, dims, iq, -g, w.x, ldx);
  if (width == 1) return;
  const VD vg = hn::Set(d, g), neg_g = hn::Neg(vg);
  for (std::int64_t r = 0; r < dims; ++r) {
    const double* z = w.x + r * ldx + 1;
    const bool m_form = w.m_form[r] != 0;
    if (want_p) {
      // dKL/dLp_rr = z_r + N_rr / Lp_rr (N-form) or z_r - 1 / Lp_rr (M-form); times Lp_rr for a
      // log diagonal.
      const double n_over = m_form ? -1.0 : w.n_k[r];
      const double diagonal = g * (fp.log_diagonal ? std::fma(z[r], w.lp_k[r], n_over)
                                                   : std::fma(n_over, w.inv_p[r], z[r]));
      PutScaleRow(
          d, sp.scale, fp, dims, ip, r,
          [&](std::int64_t v) { return hn::Mul(vg, hn::LoadU(d, z + v * lanes)); }, diagonal);
    }
    if (want_q) {
      // -F_rr - z_r - N_rr / Lq_rr (N-form) or -F_rr + 1 / Lq_rr (M-form), times Lq_rr for a log
      // diagonal; left of it -F_rc - z_c in N-form columns, -F_rc in M-form ones.
      const double* f_row = f + r * ldq;
      const double sum = m_form ? f_row[r] : f_row[r] + z[r];
      const double n_over = m_form ? -1.0 : w.n_k[r];
      const double diagonal = -g * (fq.log_diagonal ? std::fma(sum, w.lq_k[r], n_over)
                                                    : std::fma(n_over, w.inv[r], sum));
      PutScaleRow(
          d, sq.scale, fq, dims, iq, r,
          [&](std::int64_t v) {
            const auto m = hn::Ne(hn::LoadU(d, w.m_form + v * lanes), hn::Zero(d));
            const VD z_v = hn::IfThenZeroElse(m, hn::LoadU(d, z + v * lanes));
            return hn::Mul(neg_g, hn::Add(hn::LoadU(d, f_row + v * lanes), z_v));
          },
          diagonal);
    }
  }
}

// q = N(0, I): dKL/dmu = mu; dKL/dL = L below the diagonal, (L_kk^2 - 1) / L_kk on it (each
// rounded once), or expm1(2 a) for a log diagonal a.
template <class T>
void StandardRow(DD d, const Work& w, const FullGaussians<T>& p, std::int64_t i, double g,
                 const SideSinks<T>& sp) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dims = w.d;
  const std::int64_t ip = p.mean.shape[0] == 1 ? 0 : i;
  const Factor<T> fp = FactorOf(p, ip);
  if (sp.mean.wanted()) {
    const T* mu = p.mean.data + ip * p.mean.strides[0];
    for (std::int64_t r = 0; r < dims; ++r)
      w.row[r] = static_cast<double>(mu[r * p.mean.strides[1]]);
    PutMean(sp.mean, dims, ip, g, w.row, 1);
  }
  if (!sp.scale.wanted()) return;
  const VD vg = hn::Set(d, g);
  for (std::int64_t r = 0; r < dims; ++r) {
    StageRow(d, fp, r, w.row);
    const double x = fp.diagonal(r);
    PutScaleRow(
        d, sp.scale, fp, dims, ip, r,
        [&](std::int64_t v) { return hn::Mul(vg, hn::LoadU(d, w.row + v * lanes)); },
        g * (fp.log_diagonal ? std::expm1(2 * x) : std::fma(x, x, -1.0) / x));
  }
}

template <class T>
void Rows(const FullGaussians<T>& p, const FullGaussians<T>* q, std::int64_t lo, std::int64_t hi,
          const T* grad, const SideSinks<T>& sp, const SideSinks<T>& sq,
          double* HWY_RESTRICT scratch) noexcept {
  const DD d;
  const std::int64_t dims = p.mean.shape[1];
  // Padding that no step writes must read as 0 (Work's comments): cleared once per call.
  std::fill(scratch, scratch + rowwise_full_backward_scratch(dims), 0.0);
  const Work w = Carve(dims, scratch);
  for (std::int64_t i = lo; i < hi; ++i) {
    const auto g = static_cast<double>(grad[i]);
    if (q) {
      PairRow(d, w, p, *q, i, g, sp, sq);
    } else {
      StandardRow(d, w, p, i, g, sp);
    }
  }
}

}  // namespace rowwise_full_backward_detail

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // GAUSSKL_CPU_ROWWISE_FULL_BACKWARD_INL_H_
