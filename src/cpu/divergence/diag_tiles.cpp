#include "cpu/divergence/diag_tiles.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>

#include "cpu/common/diag_terms.hpp"
#include "cpu/common/parallel.hpp"
#include "cpu/common/saturating.hpp"
#include "cpu/diag_pairs/bound.hpp"
#include "cpu/diag_pairs/loops.hpp"
#include "cpu/diag_pairs/pack.hpp"
#include "cpu/diag_pairs/row_terms.hpp"
#include "cpu/divergence/bhat_ukr.hpp"
#include "cpu/divergence/diag.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {
namespace {

constexpr double kUnit = std::numeric_limits<double>::epsilon() / 2;

// The relative error of sigma as diag_terms computes it: exact for std, one rounding of a square
// root for var, exp's (within an ulp) or a square root and a division for logvar and precision;
// 4u covers each with room.
double sigma_error(DiagParam param) {
  return param == DiagParam::stddev ? 0.0 : 4 * kUnit;
}

// The kinds of the Bhattacharyya kernel: renyi (of an order in (0, 1), the only ones planned here)
// is its weighted form.
bool is_bhat(Divergence kind) {
  return kind == Divergence::bhattacharyya || kind == Divergence::hellinger ||
         kind == Divergence::renyi;
}

// The tiles' rows and columns: a panel of the packed operands (diag_pairs/loops.hpp), whose
// boundaries are where diag_quadratic_loops_packed may start; for bhattacharyya, whole micro-panels
// of both the kernel's rows and columns.
std::int64_t panel_of(Divergence kind) {
  if (is_bhat(kind)) {
    const BhatTile t = bhat_kernel().tile;
    const std::int64_t unit = std::lcm(t.mr, t.nr);
    return std::max(kDiagNC / unit, std::int64_t{1}) * unit;
  }
  return diag_panel_columns(diag_kernel<double>().tile.nr);
}

std::int64_t depth_of(Divergence kind, std::int64_t d) {
  return kind == Divergence::wasserstein2 ? 2 * d : d;
}

}  // namespace

template <class T>
DiagDivergenceTiles<T>::DiagDivergenceTiles(const DiagGaussians<T>& p, const DiagGaussians<T>* q,
                                            const DivergenceConfig& config)
    : p_(p),
      q_(q ? *q : p),
      n_(p.mean.shape[0]),
      m_(q ? q->mean.shape[0] : p.mean.shape[0]),
      d_(p.mean.shape[1]),
      depth_(depth_of(config.kind, p.mean.shape[1])),
      self_(q == nullptr),
      config_(config),
      bhat_(is_bhat(config.kind)),
      renyi_(config.kind == Divergence::renyi),
      panel_(panel_of(config.kind)),
      kernel_(diag_kernel<double>()),
      bhat_kernel_(bhat_kernel()) {
  if (bhat_) {
    if (renyi_) {
      // Not symmetric: q = p has its own q side, of the weighted variances alpha v.
      bhat_params_ = renyi_params(d_, config.tolerance, config.alpha);
      prepare_bhat(p_, p_side_, true, false, 1 - config.alpha);
      prepare_bhat(q_, q_side_, false, true, config.alpha);
      return;
    }
    bhat_params_ = bhat_params(d_, config.tolerance, config.kind == Divergence::hellinger);
    prepare_bhat(p_, p_side_, true, self_, 1.0);
    if (!self_) prepare_bhat(q_, q_side_, false, true, 1.0);
    return;
  }
  const bool w2 = config.kind == Divergence::wasserstein2;
  // jeffreys: v and lam within 2u each (diag_row_terms), which bound each non-negative term's
  // rounding as in the KL plan; wasserstein2's c = 0 and e = 1 are exact, sigma's rounding is
  // bounded apart (tile()).
  const double c = diag_quadratic_error_bound<double>(depth_) + (w2 ? 0 : 8 * kUnit);
  kernel_bound_ = c / (1 - c);
  if (w2) {
    sigma_error_p_ = sigma_error(p_.param);
    sigma_error_q_ = sigma_error(q_.param);
    const std::int64_t panel = panel_;
    zeros_.resize(static_cast<std::size_t>(panel * depth_));
    std::fill(zeros_.data(), zeros_.data() + panel * depth_, 0.0);
  }
  prepare(p_, p_side_);
  if (!self_) prepare(q_, q_side_);
}

template <class T>
void DiagDivergenceTiles<T>::prepare_bhat(const DiagGaussians<T>& g, Side& side, bool as_rows,
                                          bool as_cols, double weight) const {
  const std::int64_t rows = g.mean.shape[0], d = d_, panel = panel_;
  const BhatTile t = bhat_kernel_.tile;
  const bool rows_apart = as_rows && t.mr != t.nr;
  if (as_cols || !rows_apart)
    side.packed.resize(static_cast<std::size_t>(diag_packed_q_size(rows, d, t.nr)));
  if (rows_apart)
    side.packed_rows.resize(static_cast<std::size_t>(diag_packed_q_size(rows, d, t.mr)));
  // Whole panels: the kernel reads the terms of its padding rows and columns too.
  const auto padded = static_cast<std::size_t>((rows + panel - 1) / panel * panel);
  for (auto* v : {&side.log_mant_v, &side.log2_v, &side.min_v, &side.max_v})
    v->assign(padded, 0.0);
  side.in_range.assign(padded, 0);
  // Per worker: a panel of rows of means and variances, and a row of scale parameters.
  const int workers = std::max(config_.workers, 1);
  const std::int64_t scratch = 2 * panel * d + d;
  Buffer<double> buffers;
  buffers.resize(static_cast<std::size_t>(workers * scratch));
  const std::int64_t panels = (rows + panel - 1) / panel;
  std::atomic<std::int64_t> next{0};
  parallel_for(
      std::min<std::int64_t>(workers, panels), workers, [&](int w, std::int64_t, std::int64_t) {
        double* const mu = buffers.data() + w * scratch;
        double* const v = mu + panel * d;
        double* const x = v + panel * d;
        for (std::int64_t u; (u = next.fetch_add(1, std::memory_order_relaxed)) < panels;) {
          const std::int64_t j0 = u * panel, count = std::min(panel, rows - j0);
          for (std::int64_t r = 0; r < count; ++r) {
            const std::int64_t i = j0 + r;
            for (std::int64_t h = 0; h < d; ++h) {
              mu[r * d + h] = static_cast<double>(g.mean(i, h));
              x[h] = static_cast<double>(g.scale(i, h));
            }
            const DiagRowSums sums = diag_row_terms(g.param, x, d, v + r * d, nullptr);
            const auto k = static_cast<std::size_t>(i);
            bhat_log_product(v + r * d, d, &side.log_mant_v[k], &side.log2_v[k]);
            // The kernel reads the weighted variances (renyi), and its range is theirs.
            if (weight != 1.0) {
              for (std::int64_t h = 0; h < d; ++h)
                v[r * d + h] *= weight;
            }
            const double lo = weight * sums.min_variance, hi = weight * sums.max_variance;
            side.min_v[k] = lo;
            side.max_v[k] = hi;
            side.in_range[k] = bhat_range_ok(lo, hi, lo, hi);
          }
          if (side.packed.size() > 0)
            pack_diag_q(mu, v, d, count, d, t.nr, side.packed.data() + j0 * 2 * d);
          if (rows_apart)
            pack_diag_q(mu, v, d, count, d, t.mr, side.packed_rows.data() + j0 * 2 * d);
        }
      });
}

template <class T>
void DiagDivergenceTiles<T>::prepare(const DiagGaussians<T>& g, Side& side) const {
  const bool w2 = config_.kind == Divergence::wasserstein2;
  const std::int64_t rows = g.mean.shape[0], d = d_, k = depth_;
  const std::int64_t nr = kernel_.tile.nr, panel = panel_;
  side.a.resize(static_cast<std::size_t>(rows * k));
  if (!w2) side.c.resize(static_cast<std::size_t>(rows * d));
  side.packed.resize(static_cast<std::size_t>(diag_packed_q_size(rows, k, nr)));
  if (w2) side.sigma_norm.resize(static_cast<std::size_t>(rows));
  // Per worker: a row of scale parameters and a panel of e (jeffreys' precisions); wasserstein2's
  // e = 1 is one panel shared by all.
  const int workers = std::max(config_.workers, 1);
  const std::int64_t scratch = d + (w2 ? 0 : panel * k);
  Buffer<double> buffers, ones;
  buffers.resize(static_cast<std::size_t>(workers * scratch));
  if (w2) {
    ones.resize(static_cast<std::size_t>(panel * k));
    std::fill(ones.data(), ones.data() + panel * k, 1.0);
  }
  const std::int64_t panels = (rows + panel - 1) / panel;
  std::atomic<std::int64_t> next{0};
  parallel_for(
      std::min<std::int64_t>(workers, panels), workers, [&](int w, std::int64_t, std::int64_t) {
        double* const x = buffers.data() + w * scratch;
        double* const lam = x + d;
        for (std::int64_t u; (u = next.fetch_add(1, std::memory_order_relaxed)) < panels;) {
          const std::int64_t j0 = u * panel, count = std::min(panel, rows - j0);
          for (std::int64_t r = 0; r < count; ++r) {
            const std::int64_t i = j0 + r;
            double* const a = side.a.data() + i * k;
            for (std::int64_t h = 0; h < d; ++h) {
              a[h] = static_cast<double>(g.mean(i, h));
              x[h] = static_cast<double>(g.scale(i, h));
            }
            if (w2) {
              double norm = 0;
              for (std::int64_t h = 0; h < d; ++h) {
                double sigma = 0, inv = 0, log = 0;
                diag_terms(g.param, x[h], &sigma, &inv, &log);
                a[d + h] = sigma;
                norm += sigma * sigma;
              }
              side.sigma_norm[static_cast<std::size_t>(i)] = std::sqrt(norm);
            } else {
              diag_row_terms(g.param, x, d, side.c.data() + i * d, lam + r * d);
            }
          }
          const double* const e = w2 ? ones.data() : lam;
          for (std::int64_t pc = 0; pc < k; pc += kDiagKC) {
            pack_diag_q(side.a.data() + j0 * k + pc, e + pc, k, count, std::min(kDiagKC, k - pc),
                        nr, side.packed.data() + diag_packed_q_offset(rows, k, nr, j0, pc));
          }
        }
      });
}

template <class T>
PairsBytes DiagDivergenceTiles<T>::footprint(std::int64_t n, std::int64_t m, std::int64_t d,
                                             bool self, const DivergenceConfig& config) {
  const bool w2 = config.kind == Divergence::wasserstein2;
  const DiagKernel<double> kernel = diag_kernel<double>();
  const std::int64_t k = depth_of(config.kind, d), panel = panel_of(config.kind);
  const std::int64_t workers = std::max(config.workers, 1);
  if (is_bhat(config.kind)) {
    const BhatTile t = bhat_kernel().tile;
    auto side = [&](std::int64_t rows, bool as_rows, bool as_cols) {
      const bool rows_apart = as_rows && t.mr != t.nr;
      std::int64_t values = sat_mul(5, sat_add(rows, panel));
      if (as_cols || !rows_apart) values = sat_add(values, diag_packed_q_size(rows, d, t.nr));
      if (rows_apart) values = sat_add(values, diag_packed_q_size(rows, d, t.mr));
      return sat_mul(8, values);
    };
    PairsBytes b;
    const bool renyi = config.kind == Divergence::renyi;  // q = p: its own q side
    b.kept = sat_add(side(n, true, self && !renyi), self && !renyi ? 0 : side(m, false, true));
    const std::int64_t prepare = sat_mul(8, sat_mul(workers, 2 * panel * d + d));
    const std::int64_t block = sat_mul(workers, sat_mul(8, panel * panel));  // bhat_tile()
    b.work = std::max(prepare, block);
    return b;
  }
  auto side = [&](std::int64_t rows) {
    const std::int64_t values = sat_add(sat_add(sat_mul(rows, k), w2 ? rows : sat_mul(rows, d)),
                                        diag_packed_q_size(rows, k, kernel.tile.nr));
    return sat_mul(8, values);
  };
  PairsBytes b;
  b.kept = sat_add(sat_add(side(n), self ? 0 : side(m)), w2 ? sat_mul(8, panel * k) : 0);
  const std::int64_t prepare =
      sat_mul(8, sat_add(sat_mul(workers, d + (w2 ? 0 : panel * k)), w2 ? panel * k : 0));
  // block(): two tiles of doubles per worker, and the loop nest's p block per thread.
  const std::int64_t block = sat_mul(
      workers, sat_add(sat_mul(8, 2 * panel * panel), diag_quadratic_p_block_bytes<double>()));
  b.work = std::max(prepare, block);
  return b;
}

template <class T>
double DiagDivergenceTiles<T>::exact(std::int64_t i, std::int64_t j) const {
  double value = 0, pivot = 0;
  std::int64_t dim = 0;
  divergence_diag_rows(rows_of(p_, i, 1), rows_of(q_, j, 1), config_, 0, 1, &value, &dim, &pivot);
  return value;
}

template <class T>
void DiagDivergenceTiles<T>::tile(std::int64_t c0, std::int64_t r0, std::int64_t r1,
                                  std::int64_t j0, std::int64_t j1, double* work, double* out,
                                  std::int64_t ldo, double* out_t) const {
  if (bhat_) {
    bhat_tile(r0, r1, j0, j1, work, out, ldo, out_t);
    return;
  }
  const bool w2 = config_.kind == Divergence::wasserstein2;
  const std::int64_t k = depth_, panel = panel_, rows = r1 - r0, cols = j1 - j0;
  const Side& qs = self_ ? p_side_ : q_side_;
  double* const q1 = work;  // q1[r * panel + c]: Q of p_{r0 + r} against q_{j0 + c}
  diag_quadratic_loops_packed(kernel_, p_side_.a.data() + r0 * k,
                              w2 ? zeros_.data() : p_side_.c.data() + r0 * k, rows,
                              qs.packed.data(), m_, j0, j1, k, q1, panel);
  double* const q2 = work + panel * panel;  // jeffreys: q2[c * panel + r]: Q of q_{j0 + c}
  if (!w2) {                                // against p_{c0 + r}, r from the chunk's start
    diag_quadratic_loops_packed(kernel_, qs.a.data() + j0 * k, qs.c.data() + j0 * k, cols,
                                p_side_.packed.data(), n_, c0, std::min(c0 + panel, n_), k, q2,
                                panel);
  }
  const double c = kernel_bound_, dims = static_cast<double>(d_);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t i = r0 + r;
    for (std::int64_t col = 0; col < cols; ++col) {
      const std::int64_t j = j0 + col;
      double value = 0, bound = 0;
      if (w2) {
        // |sigma_hat - sigma| <= beta_h per h, |beta| <= big_b (1% for the norms' own rounding):
        // the rounded sigmas move sum (d sigma)^2 by at most 2 big_b sqrt(Q') + 3 big_b^2, Q' the
        // exact sum of the rounded operands (|sqrt(Q') - sqrt(W)| <= big_b), Q' <= Q_hat (1 + c).
        value = q1[r * panel + col];
        const double big_b =
            1.01 * (sigma_error_p_ * p_side_.sigma_norm[i] + sigma_error_q_ * qs.sigma_norm[j]);
        bound = c * value;
        if (big_b > 0) bound += big_b * (2 * std::sqrt(value * (1 + c)) + 3 * big_b);
      } else {
        // 2 J = Q + Q' - 2 D: the kernel's bound on each, the sum's and the subtraction's
        // roundings.
        const double s = q1[r * panel + col] + q2[col * panel + (i - c0)];
        value = 0.5 * s - dims;
        bound = (0.5 * c + 2 * kUnit) * s + 2 * kUnit * std::abs(value);
      }
      put(i, j, value, bound, out + r * ldo + col, out_t ? out_t + col * ldo + r : nullptr);
    }
  }
}

template <class T>
void DiagDivergenceTiles<T>::put(std::int64_t i, std::int64_t j, double value, double bound,
                                 double* out, double* out_t) const {
  // Near 0 (near-duplicates) the bound is large against the value: recomputed, so that small
  // values keep their relative accuracy. NaN never reaches here (non-negative terms, finite or
  // +inf).
  if (!(bound <= config_.tolerance * (std::abs(value) + 1) && bound <= 0.01 * value))
    value = exact(i, j);
  if (self_ && i == j) value = 0;
  *out = value;
  if (out_t) *out_t = value;
}

template <class T>
void DiagDivergenceTiles<T>::bhat_tile(std::int64_t r0, std::int64_t r1, std::int64_t j0,
                                       std::int64_t j1, double* work, double* out, std::int64_t ldo,
                                       double* out_t) const {
  const BhatTile t = bhat_kernel_.tile;
  const std::int64_t d = d_, panel = panel_, cols = j1 - j0;
  const std::int64_t ra = r0 / t.mr * t.mr;  // the micro-panel of r0 (r0's chunk starts on one)
  const Side& ps = p_side_;
  const Side& qs = self_ && !renyi_ ? p_side_ : q_side_;
  double* const values = work;  // [(i - ra) * panel + j - j0]: certified, or NaN
  const double* const p_rows = ps.rows(t);
  for (std::int64_t jr = j0; jr < j1; jr += t.nr) {
    const BhatRows q{qs.packed.data() + jr * 2 * d, qs.log_mant_v.data() + jr,
                     qs.log2_v.data() + jr};
    for (std::int64_t ir = ra; ir < r1; ir += t.mr) {
      const BhatRows p{p_rows + ir * 2 * d, ps.log_mant_v.data() + ir, ps.log2_v.data() + ir};
      bhat_kernel_.ukr(std::min(t.mr, r1 - ir), std::min(t.nr, j1 - jr), d, p, q, bhat_params_,
                       values + (ir - ra) * panel + (jr - j0), panel, t);
    }
  }
  // Pairs of rows that are not in range on their own: the pair's range.
  bool all_in_range = true;
  for (std::int64_t i = r0; i < r1 && all_in_range; ++i)
    all_in_range = ps.in_range[static_cast<std::size_t>(i)] != 0;
  for (std::int64_t j = j0; j < j1 && all_in_range; ++j)
    all_in_range = qs.in_range[static_cast<std::size_t>(j)] != 0;
  for (std::int64_t i = r0; i < r1; ++i) {
    const auto pi = static_cast<std::size_t>(i);
    const double* const row = values + (i - ra) * panel;
    double* const dst = out + (i - r0) * ldo;
    for (std::int64_t col = 0; col < cols; ++col) {
      const std::int64_t j = j0 + col;
      const auto qj = static_cast<std::size_t>(j);
      double value = row[col];
      if (std::isnan(value) ||
          (!all_in_range && !bhat_range_ok(ps.min_v[pi], ps.max_v[pi], qs.min_v[qj], qs.max_v[qj])))
        value = exact(i, j);
      if (self_ && i == j) value = 0;
      dst[col] = value;
      if (out_t) out_t[col * ldo + (i - r0)] = value;
    }
  }
}

template <class T>
void DiagDivergenceTiles<T>::block(std::int64_t lo, std::int64_t hi, double* out) const {
  if (lo >= hi || m_ == 0) return;
  const std::int64_t panel = panel_, m = m_, tiles = bhat_ ? 1 : 2;
  // Row chunks start on panel boundaries (q2's columns are p's packed panels); the first may begin
  // before lo, its rows below lo not computed.
  const std::int64_t first = lo / panel, chunks = (hi - 1) / panel + 1 - first;
  const std::int64_t col_panels = (m + panel - 1) / panel;
  // q = p and a block of all rows: each pair of tiles once, the lower one mirrored (both kinds are
  // symmetric); the tiles on the diagonal whole.
  const bool mirror = self_ && !renyi_ && lo == 0 && hi == n_;
  std::vector<std::int64_t> units;  // chunk * col_panels + column panel
  for (std::int64_t ci = 0; ci < chunks; ++ci) {
    for (std::int64_t pj = mirror ? first + ci : 0; pj < col_panels; ++pj)
      units.push_back(ci * col_panels + pj);
  }
  const auto count = static_cast<std::int64_t>(units.size());
  const int workers = std::max(config_.workers, 1);
  Buffer<double> work;
  work.resize(static_cast<std::size_t>(workers * tiles * panel * panel));
  std::atomic<std::int64_t> next{0};
  parallel_for(std::min<std::int64_t>(workers, count), workers,
               [&](int w, std::int64_t, std::int64_t) {
                 double* const buffer = work.data() + w * tiles * panel * panel;
                 for (std::int64_t t; (t = next.fetch_add(1, std::memory_order_relaxed)) < count;) {
                   const std::int64_t unit = units[static_cast<std::size_t>(t)];
                   const std::int64_t c0 = (first + unit / col_panels) * panel;
                   const std::int64_t j0 = unit % col_panels * panel, j1 = std::min(m, j0 + panel);
                   const std::int64_t r0 = std::max(c0, lo), r1 = std::min(c0 + panel, hi);
                   double* const mirrored = mirror && j0 != c0 ? out + j0 * m + r0 : nullptr;
                   tile(c0, r0, r1, j0, j1, buffer, out + (r0 - lo) * m + j0, m, mirrored);
                 }
               });
}

template class DiagDivergenceTiles<float>;
template class DiagDivergenceTiles<double>;

}  // namespace gausskl::cpu
