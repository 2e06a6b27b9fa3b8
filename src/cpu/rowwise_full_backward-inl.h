// The SIMD kernel of rowwise_full_backward.hpp, compiled once per Highway target by
// rowwise_full_backward.cpp.
//
// Per row pair, in double, on row-major staged matrices whose rows are vectors of columns:
//   1. staging: the diagonals (exp of log diagonals, D_kk, 1 / Lq_kk, 1 / Lp_kk, N_kk) as
//      vectors over k; Lq's lower triangle; each column's form (rowwise_full_backward.hpp) from
//      the column sums of |D| and |Lp|; X = [delta | D or Lp by column] with rows zero-padded;
//   2. X <- Lq^{-1} X by forward substitution, row by row (row r of X is nonzero in columns
//      0 .. r + 1 only: a staircase, so row j contributes its first vectors only);
//   3. if dL/dLq is wanted: F = X X^T (dot products of rows), then F <- Lq^{-T} F;
//   4. X <- Lq^{-T} X by back substitution: column 0 is Lq^{-T} y, columns 1 .. r + 1 of row r
//      are row r of Z = tril(Lq^{-T} [N or M]);
//   5. the gradients of row r from row r of X and F and the diagonals.
// Each substitution step updates a tile of up to 4 vectors of a row with two accumulators (even
// and odd j) so that consecutive FMAs do not wait on each other. Pivots multiply by 1 / Lq_rr.
// When only the means' gradients are wanted, X is the single column delta.

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

#include "cpu/grad_sink.hpp"
#include "cpu/rowwise_full_backward.hpp"
#include "gausskl/types.hpp"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace rowwise_full_backward_detail {

using DD = hn::ScalableTag<double>;
using VD = hn::Vec<DD>;

// Vectors per substitution tile: 2 x 4 accumulators, 4 loads and 2 broadcasts fit AVX2's 16
// registers.
constexpr int kTile = 4;

// One side's factor of distribution i, read in place: L_rc (c <= r), raw (a log diagonal is
// returned as stored).
template <class T>
struct Factor {
  const T* base;
  std::int64_t s1, s2;  // scale_tril: row and column strides; packed: s1 the element stride
  bool packed, log_diagonal;

  double at(std::int64_t r, std::int64_t c) const {
    return static_cast<double>(packed ? base[(r * (r + 1) / 2 + c) * s1] : base[r * s1 + c * s2]);
  }
  // Offset of element (r, c) in a gradient row of this side's scale array.
  std::int64_t offset(std::int64_t d, std::int64_t r, std::int64_t c) const {
    return packed ? r * (r + 1) / 2 + c : r * d + c;
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
  std::int64_t d, ldx, lds, ldk;
  double* lq;      // [d * d] Lq, lower triangle (row-major, leading dimension d)
  double* x;       // [d * ldx] X, then Lq^{-1} X, then Lq^{-T} Lq^{-1} X
  double* s;       // [d * lds] Lp while staging; then F = X X^T, then Lq^{-T} F
  double* lp_k;    // [ldk] Lp_kk
  double* lq_k;    // [ldk] Lq_kk
  double* inv;     // [ldk] 1 / Lq_kk
  double* inv_p;   // [ldk] 1 / Lp_kk
  double* d_k;     // [ldk] D_kk
  double* n_k;     // [ldk] N_kk = D_kk / Lq_kk
  double* m_form;  // [ldk] 1 where column k is solved in the M-form, 0 in the N-form
  double* sum_d;   // [ldk] sum_j |D_jk|
  double* sum_p;   // [ldk] sum_j |Lp_jk|
  double* row;     // [ldk] a gradient row being assembled
};

inline Work Carve(std::int64_t d, double* scratch) {
  Work w;
  w.d = d;
  w.ldx = full_backward_round(d + 1);
  w.lds = full_backward_round(d);
  w.ldk = full_backward_round(d);
  w.lq = scratch;
  w.x = w.lq + d * d;
  w.s = w.x + d * w.ldx;
  double* k = w.s + d * w.lds;
  for (double** v : {&w.lp_k, &w.lq_k, &w.inv, &w.inv_p, &w.d_k, &w.n_k, &w.m_form, &w.sum_d,
                     &w.sum_p, &w.row}) {
    *v = k;
    k += w.ldk;
  }
  return w;
}

// Vectors of a row that reach column `columns` - 1.
HWY_INLINE std::int64_t VectorsFor(std::int64_t columns, std::int64_t lanes) {
  return (columns + lanes - 1) / lanes;
}

// rows[r][v0 L, (v0 + NB) L) <- (that - sum_{j0 <= j < j1} coeff(j) rows[j][same]) * inv.
template <int NB, class Coeff>
HWY_INLINE void Eliminate(DD d, double* HWY_RESTRICT rows, std::int64_t ld, std::int64_t r,
                          std::int64_t v0, std::int64_t j0, std::int64_t j1, const Coeff& coeff,
                          double inv) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  double* HWY_RESTRICT row = rows + r * ld + v0 * lanes;
  VD a[NB], b[NB];
  for (int v = 0; v < NB; ++v) {
    a[v] = hn::LoadU(d, row + v * lanes);
    b[v] = hn::Zero(d);
  }
  std::int64_t j = j0;
  for (; j + 1 < j1; j += 2) {
    const VD l0 = hn::Set(d, coeff(j)), l1 = hn::Set(d, coeff(j + 1));
    const double* HWY_RESTRICT x0 = rows + j * ld + v0 * lanes;
    const double* HWY_RESTRICT x1 = x0 + ld;
    for (int v = 0; v < NB; ++v) {
      a[v] = hn::NegMulAdd(l0, hn::LoadU(d, x0 + v * lanes), a[v]);
      b[v] = hn::NegMulAdd(l1, hn::LoadU(d, x1 + v * lanes), b[v]);
    }
  }
  if (j < j1) {
    const VD l0 = hn::Set(d, coeff(j));
    const double* HWY_RESTRICT x0 = rows + j * ld + v0 * lanes;
    for (int v = 0; v < NB; ++v)
      a[v] = hn::NegMulAdd(l0, hn::LoadU(d, x0 + v * lanes), a[v]);
  }
  const VD scale = hn::Set(d, inv);
  for (int v = 0; v < NB; ++v)
    hn::StoreU(hn::Mul(hn::Add(a[v], b[v]), scale), d, row + v * lanes);
}

// Row r's first `vectors` vectors, tile by tile, eliminating rows j_first(v0) <= j < j_end.
template <class Coeff, class First>
HWY_INLINE void EliminateRow(DD d, double* rows, std::int64_t ld, std::int64_t r,
                             std::int64_t vectors, std::int64_t j_end, const Coeff& coeff,
                             const First& j_first, double inv) {
  for (std::int64_t v0 = 0; v0 < vectors; v0 += kTile) {
    const std::int64_t j0 = j_first(v0);
    switch (std::min<std::int64_t>(kTile, vectors - v0)) {
      case 4:
        Eliminate<4>(d, rows, ld, r, v0, j0, j_end, coeff, inv);
        break;
      case 3:
        Eliminate<3>(d, rows, ld, r, v0, j0, j_end, coeff, inv);
        break;
      case 2:
        Eliminate<2>(d, rows, ld, r, v0, j0, j_end, coeff, inv);
        break;
      default:
        Eliminate<1>(d, rows, ld, r, v0, j0, j_end, coeff, inv);
        break;
    }
  }
}

// sum_k a[k] b[k] over `vectors` vectors.
HWY_INLINE double Dot(DD d, const double* HWY_RESTRICT a, const double* HWY_RESTRICT b,
                      std::int64_t vectors) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  VD s0 = hn::Zero(d), s1 = hn::Zero(d);
  std::int64_t v = 0;
  for (; v + 1 < vectors; v += 2) {
    s0 = hn::MulAdd(hn::LoadU(d, a + v * lanes), hn::LoadU(d, b + v * lanes), s0);
    s1 = hn::MulAdd(hn::LoadU(d, a + (v + 1) * lanes), hn::LoadU(d, b + (v + 1) * lanes), s1);
  }
  if (v < vectors) s0 = hn::MulAdd(hn::LoadU(d, a + v * lanes), hn::LoadU(d, b + v * lanes), s0);
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
}

// The diagonals of p and q as vectors over k (padding lanes describe L_kk = 1).
template <class T>
HWY_INLINE void StageDiagonals(DD d, const Work& w, const Factor<T>& fp, const Factor<T>& fq) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dims = w.d;
  for (std::int64_t k = 0; k < w.ldk; ++k) {
    w.lp_k[k] = k < dims ? fp.at(k, k) : fp.log_diagonal ? 0.0 : 1.0;
    w.lq_k[k] = k < dims ? fq.at(k, k) : fq.log_diagonal ? 0.0 : 1.0;
  }
  for (std::int64_t k = 0; k < dims; k += lanes) {
    const VD a = hn::LoadU(d, w.lp_k + k), b = hn::LoadU(d, w.lq_k + k);
    const VD lp = fp.log_diagonal ? hn::Exp(d, a) : a;
    const VD lq = fq.log_diagonal ? hn::Exp(d, b) : b;
    // D_kk from the stored values' difference: exact where they are close.
    const VD dk = fp.log_diagonal && fq.log_diagonal ? hn::Mul(lq, hn::Expm1(d, hn::Sub(a, b)))
                                                     : hn::Sub(lp, lq);
    const VD one = hn::Set(d, 1.0);
    const VD inv = hn::Div(one, lq);
    hn::StoreU(lp, d, w.lp_k + k);
    hn::StoreU(lq, d, w.lq_k + k);
    hn::StoreU(inv, d, w.inv + k);
    hn::StoreU(hn::Div(one, lp), d, w.inv_p + k);
    hn::StoreU(dk, d, w.d_k + k);
    hn::StoreU(hn::Mul(dk, inv), d, w.n_k + k);
  }
}

// Writes (rows) or adds (sum) row r of a side's scale gradient: values[c] for c <= r.
template <class T>
HWY_INLINE void PutScaleRow(const GradSink<T>& sink, const Factor<T>& f, std::int64_t d,
                            std::int64_t i, std::int64_t r, const double* values) {
  if (sink.rows) {
    T* dst = sink.rows + i * f.row_size(d) + f.offset(d, r, 0);
    for (std::int64_t c = 0; c <= r; ++c)
      dst[c] = static_cast<T>(values[c]);
    if (!f.packed) std::fill(dst + r + 1, dst + d, T(0));
  } else {
    double* dst = sink.sum + f.offset(d, r, 0);
    for (std::int64_t c = 0; c <= r; ++c)
      dst[c] += values[c];
  }
}

// Writes or adds a side's mean gradient: g * values[r].
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
  const std::int64_t dims = w.d;
  const std::int64_t ip = p.mean.shape[0] == 1 ? 0 : i, iq = q.mean.shape[0] == 1 ? 0 : i;
  const Factor<T> fp = FactorOf(p, ip), fq = FactorOf(q, iq);
  const bool want_p = sp.scale.wanted(), want_q = sq.scale.wanted();
  const std::int64_t width = want_p || want_q ? dims + 1 : 1;  // columns of X in use

  // 1. Staging.
  StageDiagonals(d, w, fp, fq);
  const T* mu = p.mean.data + ip * p.mean.strides[0];
  const T* nu = q.mean.data + iq * q.mean.strides[0];
  for (std::int64_t r = 0; r < dims; ++r) {
    double* lq = w.lq + r * dims;
    for (std::int64_t c = 0; c < r; ++c)
      lq[c] = fq.at(r, c);
  }
  if (width > 1) {
    // Lp's rows into F's place, and the column sums that pick each column's form.
    // Row j of a right-hand side enters the solve divided by Lq_jj, so the sums weigh it so.
    for (std::int64_t c = 0; c < dims; ++c) {
      w.sum_d[c] = std::abs(w.d_k[c]) * w.inv[c];
      w.sum_p[c] = w.lp_k[c] * w.inv[c];
    }
    for (std::int64_t r = 0; r < dims; ++r) {
      const double* lq = w.lq + r * dims;
      double* lp = w.s + r * w.lds;
      for (std::int64_t c = 0; c < r; ++c) {
        lp[c] = fp.at(r, c);
        w.sum_d[c] += std::abs(lp[c] - lq[c]) * w.inv[r];
        w.sum_p[c] += std::abs(lp[c]) * w.inv[r];
      }
    }
    for (std::int64_t c = 0; c < dims; ++c)
      w.m_form[c] = w.sum_d[c] > w.sum_p[c] ? 1.0 : 0.0;
  }
  for (std::int64_t r = 0; r < dims; ++r) {
    double* x = w.x + r * w.ldx;
    x[0] = static_cast<double>(mu[r * p.mean.strides[1]]) -
           static_cast<double>(nu[r * q.mean.strides[1]]);
    std::int64_t end = 1;
    if (width > 1) {
      const double* lq = w.lq + r * dims;
      const double* lp = w.s + r * w.lds;
      for (std::int64_t c = 0; c < r; ++c)
        x[1 + c] = w.m_form[c] != 0 ? lp[c] : lp[c] - lq[c];
      x[1 + r] = w.m_form[r] != 0 ? w.lp_k[r] : w.d_k[r];
      end = r + 2;
    }
    std::fill(x + end, x + w.ldx, 0.0);
  }

  // 2. X <- Lq^{-1} X: row r minus Lq_rj times rows j < r. Row j is zero from vector
  // (j + 2) / L on, so tile v0 starts at j = v0 L - 1.
  for (std::int64_t r = 0; r < dims; ++r) {
    const double* lq_row = w.lq + r * dims;
    EliminateRow(
        d, w.x, w.ldx, r, VectorsFor(std::min(r + 2, width), lanes), r,
        [lq_row](std::int64_t j) { return lq_row[j]; },
        [lanes](std::int64_t v0) { return std::max<std::int64_t>(0, v0 * lanes - 1); }, w.inv[r]);
  }

  // Back substitutions: row r minus Lq_jr times rows j > r (coefficients down column r).
  const auto column = [&w](std::int64_t r) {
    return [lq = w.lq, dims = w.d, r](std::int64_t j) { return lq[j * dims + r]; };
  };
  const auto after = [](std::int64_t r) { return [r](std::int64_t) { return r + 1; }; };

  // 3. F = X X^T and F <- Lq^{-T} F, for dL/dLq. Row r is needed in columns 0 .. r only, but
  // its vectors reach further: those columns get F's true values (0 past d), so that every lane
  // the substitution reads is finite and the ones kept are exact.
  if (want_q) {
    for (std::int64_t r = 0; r < dims; ++r) {
      double* s = w.s + r * w.lds;
      const std::int64_t columns = std::min(dims, VectorsFor(r + 1, lanes) * lanes);
      for (std::int64_t c = 0; c < columns; ++c) {
        s[c] = Dot(d, w.x + r * w.ldx, w.x + c * w.ldx, VectorsFor(std::min(r, c) + 2, lanes));
      }
      std::fill(s + columns, s + w.lds, 0.0);
    }
    for (std::int64_t r = dims - 1; r >= 0; --r)
      EliminateRow(d, w.s, w.lds, r, VectorsFor(r + 1, lanes), dims, column(r), after(r), w.inv[r]);
  }

  // 4. X <- Lq^{-T} X.
  for (std::int64_t r = dims - 1; r >= 0; --r)
    EliminateRow(d, w.x, w.ldx, r, VectorsFor(std::min(r + 2, width), lanes), dims, column(r),
                 after(r), w.inv[r]);

  // 5. The gradients, times g (rowwise_full_backward.hpp). Column 0 of X is Lq^{-T} y;
  // columns 1 .. r + 1 of row r are row r of Z, and row r of F holds tril(Lq^{-T} X X^T)'s.
  if (sp.mean.wanted()) PutMean(sp.mean, dims, ip, g, w.x, w.ldx);
  if (sq.mean.wanted()) PutMean(sq.mean, dims, iq, -g, w.x, w.ldx);
  for (std::int64_t r = 0; r < dims; ++r) {
    const double* z = w.x + r * w.ldx + 1;
    const bool m_form = w.m_form[r] != 0;
    if (want_p) {
      for (std::int64_t c = 0; c < r; ++c)
        w.row[c] = g * z[c];
      const double n_over = m_form ? -1.0 : w.n_k[r];  // times 1 / Lp_rr: the diagonal term
      w.row[r] = g * (fp.log_diagonal ? std::fma(z[r], w.lp_k[r], n_over)
                                      : std::fma(n_over, w.inv_p[r], z[r]));
      PutScaleRow(sp.scale, fp, dims, ip, r, w.row);
    }
    if (want_q) {
      const double* f = w.s + r * w.lds;
      for (std::int64_t c = 0; c < r; ++c)
        w.row[c] = -g * (w.m_form[c] != 0 ? f[c] : f[c] + z[c]);
      const double sum = m_form ? f[r] : f[r] + z[r];
      const double n_over = m_form ? -1.0 : w.n_k[r];  // times 1 / Lq_rr: the diagonal term
      w.row[r] = -g * (fq.log_diagonal ? std::fma(sum, w.lq_k[r], n_over)
                                       : std::fma(n_over, w.inv[r], sum));
      PutScaleRow(sq.scale, fq, dims, iq, r, w.row);
    }
  }
}

// q = N(0, I): dKL/dmu = mu; dKL/dL = L below the diagonal, (L_kk^2 - 1) / L_kk on it (each
// rounded once), or expm1(2 a) for a log diagonal a.
template <class T>
void StandardRow(const Work& w, const FullGaussians<T>& p, std::int64_t i, double g,
                 const SideSinks<T>& sp) {
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
  for (std::int64_t r = 0; r < dims; ++r) {
    for (std::int64_t c = 0; c < r; ++c)
      w.row[c] = g * fp.at(r, c);
    const double x = fp.at(r, r);
    w.row[r] = g * (fp.log_diagonal ? std::expm1(2 * x) : std::fma(x, x, -1.0) / x);
    PutScaleRow(sp.scale, fp, dims, ip, r, w.row);
  }
}

template <class T>
void Rows(const FullGaussians<T>& p, const FullGaussians<T>* q, std::int64_t lo, std::int64_t hi,
          const T* grad, const SideSinks<T>& sp, const SideSinks<T>& sq,
          double* HWY_RESTRICT scratch) noexcept {
  const DD d;
  const Work w = Carve(p.mean.shape[1], scratch);
  for (std::int64_t i = lo; i < hi; ++i) {
    const auto g = static_cast<double>(grad[i]);
    if (q) {
      PairRow(d, w, p, *q, i, g, sp, sq);
    } else {
      StandardRow(w, p, i, g, sp);
    }
  }
}

}  // namespace rowwise_full_backward_detail

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // GAUSSKL_CPU_ROWWISE_FULL_BACKWARD_INL_H_
