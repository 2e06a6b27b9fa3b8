#include "cpu/divergence/diag_tiles.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "cpu/common/diag_terms.hpp"
#include "cpu/common/parallel.hpp"
#include "cpu/common/saturating.hpp"
#include "cpu/diag_pairs/bound.hpp"
#include "cpu/diag_pairs/loops.hpp"
#include "cpu/diag_pairs/pack.hpp"
#include "cpu/diag_pairs/row_terms.hpp"
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

// The tiles' rows and columns: a panel of the packed operands (diag_pairs/loops.hpp), whose
// boundaries are where diag_quadratic_loops_packed may start.
std::int64_t panel_of(const DiagKernel<double>& kernel) {
  return diag_panel_columns(kernel.tile.nr);
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
      kernel_(diag_kernel<double>()) {
  const bool w2 = config.kind == Divergence::wasserstein2;
  // jeffreys: v and lam within 2u each (diag_row_terms), which bound each non-negative term's
  // rounding as in the KL plan; wasserstein2's c = 0 and e = 1 are exact, sigma's rounding is
  // bounded apart (tile()).
  const double c = diag_quadratic_error_bound<double>(depth_) + (w2 ? 0 : 8 * kUnit);
  kernel_bound_ = c / (1 - c);
  if (w2) {
    sigma_error_p_ = sigma_error(p_.param);
    sigma_error_q_ = sigma_error(q_.param);
    const std::int64_t panel = panel_of(kernel_);
    zeros_.resize(static_cast<std::size_t>(panel * depth_));
    std::fill(zeros_.data(), zeros_.data() + panel * depth_, 0.0);
  }
  prepare(p_, p_side_);
  if (!self_) prepare(q_, q_side_);
}

template <class T>
void DiagDivergenceTiles<T>::prepare(const DiagGaussians<T>& g, Side& side) const {
  const bool w2 = config_.kind == Divergence::wasserstein2;
  const std::int64_t rows = g.mean.shape[0], d = d_, k = depth_;
  const std::int64_t nr = kernel_.tile.nr, panel = panel_of(kernel_);
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
  const std::int64_t k = depth_of(config.kind, d), panel = panel_of(kernel);
  const std::int64_t workers = std::max(config.workers, 1);
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
  const bool w2 = config_.kind == Divergence::wasserstein2;
  const std::int64_t k = depth_, panel = panel_of(kernel_), rows = r1 - r0, cols = j1 - j0;
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
  const double tolerance = config_.tolerance, c = kernel_bound_, dims = static_cast<double>(d_);
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
      // Near 0 (near-duplicates) the bound is large against the value: recomputed, so that small
      // values keep their relative accuracy. NaN never reaches here (non-negative terms, finite
      // or +inf).
      if (!(bound <= tolerance * (std::abs(value) + 1) && bound <= 0.01 * value))
        value = exact(i, j);
      if (self_ && i == j) value = 0;
      out[r * ldo + col] = value;
      if (out_t) out_t[col * ldo + r] = value;
    }
  }
}

template <class T>
void DiagDivergenceTiles<T>::block(std::int64_t lo, std::int64_t hi, double* out) const {
  if (lo >= hi || m_ == 0) return;
  const std::int64_t panel = panel_of(kernel_), m = m_;
  // Row chunks start on panel boundaries (q2's columns are p's packed panels); the first may begin
  // before lo, its rows below lo not computed.
  const std::int64_t first = lo / panel, chunks = (hi - 1) / panel + 1 - first;
  const std::int64_t col_panels = (m + panel - 1) / panel;
  // q = p and a block of all rows: each pair of tiles once, the lower one mirrored (both kinds are
  // symmetric); the tiles on the diagonal whole.
  const bool mirror = self_ && lo == 0 && hi == n_;
  std::vector<std::int64_t> units;  // chunk * col_panels + column panel
  for (std::int64_t ci = 0; ci < chunks; ++ci) {
    for (std::int64_t pj = mirror ? first + ci : 0; pj < col_panels; ++pj)
      units.push_back(ci * col_panels + pj);
  }
  const auto count = static_cast<std::int64_t>(units.size());
  const int workers = std::max(config_.workers, 1);
  Buffer<double> work;
  work.resize(static_cast<std::size_t>(workers * 2 * panel * panel));
  std::atomic<std::int64_t> next{0};
  parallel_for(std::min<std::int64_t>(workers, count), workers,
               [&](int w, std::int64_t, std::int64_t) {
                 double* const buffer = work.data() + w * 2 * panel * panel;
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
