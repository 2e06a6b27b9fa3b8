#include "cpu/diag_pairs/plan.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "cpu/common/diag_terms.hpp"
#include "cpu/common/parallel.hpp"
#include "cpu/common/saturating.hpp"
#include "cpu/common/stable.hpp"
#include "cpu/diag_pairs/bound.hpp"
#include "cpu/diag_pairs/finish.hpp"
#include "cpu/diag_pairs/loops.hpp"
#include "cpu/diag_pairs/loops_sym.hpp"
#include "cpu/diag_pairs/pack.hpp"
#include "cpu/diag_pairs/row_terms.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {
namespace {

constexpr double kUnit = std::numeric_limits<double>::epsilon() / 2;

// Whether a row's means and variances keep every term of the float kernel within the range
// where its bound holds: sigma in [2^-20, 2^20] (variances and precisions in [2^-40, 2^40]; the
// test is a hair inside) and means within 2^20 make each term below 2^84 and each v lam a normal
// float, so nothing overflows and only terms far below the +1 of the tolerance's |KL| + 1 can
// underflow (kernel_abs_ covers them).
bool in_float_kernel_range(const double* mean, std::int64_t d, const DiagRowSums& sums) {
  double largest = 0;
  for (std::int64_t h = 0; h < d; ++h)
    largest = std::max(largest, std::abs(mean[h]));
  return largest <= 0x1p20 && sums.min_variance >= 0x1.01p-40 && sums.max_variance <= 0x1.fep39;
}

// Row i of a [N, D] view as doubles.
template <class T>
void load_row(const View<T, 2>& v, std::int64_t i, std::int64_t d, double* out) {
  const T* row = v.data + i * v.strides[0];
  if (v.strides[1] == 1) {
    for (std::int64_t h = 0; h < d; ++h)
      out[h] = static_cast<double>(row[h]);
  } else {
    for (std::int64_t h = 0; h < d; ++h)
      out[h] = static_cast<double>(row[h * v.strides[1]]);
  }
}

// The double kernel's bound relative to the computed Q, with the roundings of its operands (v
// within 2u, lam = (1 / sigma)^2 within 6u; each term is non-negative, so they bound the term's).
double double_kernel_bound(std::int64_t d) {
  const double c = diag_quadratic_error_bound<double>(d) + 8 * 0x1p-53;
  return c / (1 - c);
}

}  // namespace

// The float kernel's bound relative to Q, with the roundings of v and lam to float (each term is
// non-negative, so each operand's relative rounding u bounds the term's), as a bound relative to
// the computed Q: c / (1 - c).
double DiagPairs::float_kernel_bound(std::int64_t d) {
  const double c = diag_quadratic_error_bound<float>(d) + 2.5 * 0x1p-24;
  return c / (1 - c);
}

template <class T>
DiagPairs::DiagPairs(const DiagGaussians<T>& p, const DiagGaussians<T>* q, double tolerance,
                     DiagKernelKind kernel, int threads)
    : n_(p.mean.shape[0]),
      m_(q ? q->mean.shape[0] : p.mean.shape[0]),
      d_(p.mean.shape[1]),
      self_(q == nullptr),
      tolerance_(tolerance),
      kernel_bound_(0),
      kernel_(diag_kernel<double>()),
      kernel_f_(diag_kernel<float>()),
      sym_kernel_(diag_sym_kernel()),
      p_in_(p),
      q_in_(q ? *q : p) {
  if (std::is_same_v<T, float> && kernel == DiagKernelKind::float_kernel) {
    // q = p: one pass writes p's rows and q packed, and the sums once. A row outside the float
    // kernel's range is the exact form's in every pair it is in (outside_p_, outside_q_), not a
    // reason to leave the kernel for the whole call: an entry's value depends on its own rows.
    prepare(p, {.p_rows = true, .q_packed = self_}, true, true, threads);
    if (!self_) prepare(*q, {.q_packed = true}, false, true, threads);
    float_kernel_ = true;
  }
  if (float_kernel_) {
    kernel_bound_ = float_kernel_bound(d_);
    // A square (mu - nu)^2 below the smallest float (2^-149) is lost or rounded absolutely, and
    // lam <= 2^40 scales that to below 2^-108 per term, a few roundings each: 2^-100 per h.
    kernel_abs_ = static_cast<double>(d_) * 0x1p-100;
    return;
  }
  kernel_bound_ = double_kernel_bound(d_);
  sym_ = self_;
  if (sym_) {
    prepare(p, {.sym_panels = true}, true, false, threads);
  } else {
    prepare(p, {.p_rows = true}, true, false, threads);
    prepare(*q, {.q_packed = true}, false, false, threads);
  }
}

template <class T>
void DiagPairs::prepare(const DiagGaussians<T>& g, Layouts layouts, bool as_p, bool in_float,
                        int threads) {
  const std::int64_t d = d_, rows = g.mean.shape[0];
  std::vector<double>& sum = as_p ? s_ : t_;
  std::vector<double>& abs_sum = as_p ? abs_s_ : abs_t_;
  sum.resize(static_cast<std::size_t>(rows));
  abs_sum.resize(sum.size());
  const std::int64_t nr = layouts.sym_panels ? sym_kernel_.tile.nr
                          : in_float         ? kernel_f_.tile.nr
                                             : kernel_.tile.nr;
  if (layouts.p_rows) {
    const auto values = static_cast<std::size_t>(rows * d);
    if (in_float) {
      mu_f_.resize(values);
      v_f_.resize(values);
    } else {
      mu_.resize(values);
      v_.resize(values);
    }
  }
  if (layouts.q_packed) {
    const auto values = static_cast<std::size_t>(diag_packed_q_size(rows, d, nr));
    if (in_float) {
      q_packed_f_.resize(values);
    } else {
      q_packed_.resize(values);
    }
  }
  if (layouts.sym_panels)
    sym_panels_.resize(static_cast<std::size_t>(diag_sym_panels_size(rows, d, nr)));
  // Units of rows: one micro-panel of the layout packed, else kDiagPrepareRows.
  const std::int64_t unit = layouts.q_packed || layouts.sym_panels ? nr : kDiagPrepareRows;
  const std::int64_t units = (rows + unit - 1) / unit;
  const int workers = std::max(threads, 1);
  // Per worker: a row of scale parameters, and the unit's means, variances and precisions (and
  // in float, means and precisions for q packed in float).
  const std::int64_t scratch = d + 3 * unit * d;
  const std::int64_t scratch_f = layouts.q_packed && in_float ? 2 * unit * d : 0;
  Buffer<double> buffers;
  Buffer<float> buffers_f;
  buffers.resize(static_cast<std::size_t>(workers * scratch));
  buffers_f.resize(static_cast<std::size_t>(workers * scratch_f));
  std::vector<char>& outside = as_p ? outside_p_ : outside_q_;
  if (in_float) outside.assign(static_cast<std::size_t>(rows), 0);
  const bool need_v = layouts.p_rows || layouts.sym_panels;
  const bool need_lam = layouts.q_packed || layouts.sym_panels;
  // Units handed out as they come: a worker that starts late or is descheduled on a busy machine
  // leaves its share to the others.
  std::atomic<std::int64_t> next{0};
  parallel_for(
      std::min<std::int64_t>(workers, units), workers, [&](int w, std::int64_t, std::int64_t) {
        double* const x = buffers.data() + w * scratch;
        double* const mean = x + d;
        double* const var = mean + unit * d;
        double* const lam = var + unit * d;
        float* const mean_f = buffers_f.data() + w * scratch_f;
        float* const lam_f = mean_f + unit * d;
        for (std::int64_t u; (u = next.fetch_add(1, std::memory_order_relaxed)) < units;) {
          const std::int64_t i0 = u * unit, count = std::min(unit, rows - i0);
          for (std::int64_t c = 0; c < count; ++c) {
            const std::int64_t i = i0 + c;
            load_row(g.scale, i, d, x);
            load_row(g.mean, i, d, mean + c * d);
            const DiagRowSums sums = diag_row_terms(g.param, x, d, need_v ? var + c * d : nullptr,
                                                    need_lam ? lam + c * d : nullptr);
            sum[static_cast<std::size_t>(i)] = sums.log_det;
            abs_sum[static_cast<std::size_t>(i)] = sums.abs_log_det;
            if (in_float && !in_float_kernel_range(mean + c * d, d, sums)) {
              // Neutral operands for the kernel (its values for this row are replaced).
              outside[static_cast<std::size_t>(i)] = 1;
              std::fill(mean + c * d, mean + (c + 1) * d, 0.0);
              if (need_v) std::fill(var + c * d, var + (c + 1) * d, 1.0);
              if (need_lam) std::fill(lam + c * d, lam + (c + 1) * d, 1.0);
            }
          }
          if (layouts.p_rows) {
            const std::int64_t at = i0 * d, values = count * d;
            if (in_float) {
              std::copy(mean, mean + values, mu_f_.data() + at);
              std::copy(var, var + values, v_f_.data() + at);
            } else {
              std::copy(mean, mean + values, mu_.data() + at);
              std::copy(var, var + values, v_.data() + at);
            }
          }
          if (layouts.q_packed) {
            // This micro-panel of each KC-deep block, where pack_diag_q_panels puts it.
            const std::int64_t nc = diag_panel_columns(nr), jc = i0 / nc * nc;
            if (in_float) {
              std::copy(mean, mean + count * d, mean_f);
              std::copy(lam, lam + count * d, lam_f);
            }
            for (std::int64_t pc = 0; pc < d; pc += kDiagKC) {
              const std::int64_t kc = std::min(kDiagKC, d - pc);
              const std::int64_t at =
                  diag_packed_q_offset(rows, d, nr, jc, pc) + (i0 - jc) * 2 * kc;
              if (in_float) {
                pack_diag_q(mean_f + pc, lam_f + pc, d, count, kc, nr, q_packed_f_.data() + at);
              } else {
                pack_diag_q(mean + pc, lam + pc, d, count, kc, nr, q_packed_.data() + at);
              }
            }
          }
          if (layouts.sym_panels) {
            pack_diag_sym(mean, var, lam, d, count, d, nr, sym_panels_.data() + i0 * 3 * d);
          }
        }
      });
}

template <class T>
std::int64_t DiagPairs::footprint(std::int64_t n, std::int64_t m, std::int64_t d, bool self,
                                  DiagKernelKind kernel, int threads) {
  // The two sums per row of p and of q; the kernel's operands: p's means and variances and q
  // packed, or with q = p and the double kernel the symmetric kernel's panels; and, while
  // preparing, a unit of rows per worker (prepare()). The float kernel's arrays are released
  // before the double kernel's are made, so the larger of the layouts bounds all.
  const std::int64_t workers = std::max(threads, 1);
  const std::int64_t sums = sat_mul(8, sat_add(2 * n, self ? 0 : 2 * m));
  auto scratch = [&](std::int64_t bytes, std::int64_t unit) {
    const std::int64_t per_worker = sat_add(sat_mul(8, sat_add(d, sat_mul(3 * unit, d))),
                                            bytes == 4 ? sat_mul(8, sat_mul(unit, d)) : 0);
    return sat_mul(workers, per_worker);
  };
  auto layout = [&](std::int64_t bytes, std::int64_t nr) {
    const std::int64_t p_values = sat_mul(n, sat_mul(2, d));
    const std::int64_t packed = diag_packed_q_size(m, d, nr);
    return sat_add(sat_mul(bytes, sat_add(p_values, packed)),
                   scratch(bytes, std::max(nr, kDiagPrepareRows)));
  };
  std::int64_t own = 0;
  if (self) {
    const std::int64_t nr = diag_sym_kernel().tile.nr;
    own = sat_add(sat_mul(8, diag_sym_panels_size(n, d, nr)), scratch(8, nr));
  } else {
    own = layout(8, diag_kernel<double>().tile.nr);
  }
  if (std::is_same_v<T, float> && kernel == DiagKernelKind::float_kernel)
    own = std::max(own, layout(4, diag_kernel<float>().tile.nr));
  // The p block of diag_quadratic_loops_packed, per thread (not used by the symmetric kernel).
  return sat_add(sat_add(sums, own), sat_mul(threads, diag_quadratic_p_block_bytes<double>()));
}

template <class T>
double DiagPairs::exact_from(const DiagGaussians<T>& p, const DiagGaussians<T>& q, std::int64_t i,
                             std::int64_t j) const {
  double sum = 0;
  for (std::int64_t h = 0; h < d_; ++h) {
    double b = 0, inv_b_p = 0, lp = 0, inv_b = 0, lq = 0;
    diag_terms(p.param, p.scale(i, h), &b, &inv_b_p, &lp);
    diag_terms(q.param, q.scale(j, h), &b, &inv_b, &lq);
    const double a =
        (static_cast<double>(p.mean(i, h)) - static_cast<double>(q.mean(j, h))) * inv_b;
    sum += a * a + expm1_minus_x(2 * (lp - lq));
  }
  return 0.5 * sum;
}

double DiagPairs::exact(std::int64_t i, std::int64_t j) const {
  if (self_ && i == j) return 0;  // KL(p_i || p_i) = 0 by definition, whatever round-off says
  if (const auto* p = std::get_if<DiagGaussians<float>>(&p_in_))
    return exact_from(*p, std::get<DiagGaussians<float>>(q_in_), i, j);
  return exact_from(std::get<DiagGaussians<double>>(p_in_), std::get<DiagGaussians<double>>(q_in_),
                    i, j);
}

template <class U>
void DiagPairs::finish_row(std::int64_t i, std::int64_t j0, std::int64_t j1, const double* q,
                           U* out) const {
  const DiagFinishRow row{static_cast<double>(d_),
                          s_[static_cast<std::size_t>(i)],
                          abs_s_[static_cast<std::size_t>(i)],
                          tolerance_,
                          kernel_bound_,
                          kernel_abs_};
  std::int64_t marked = finish_diag_row(q, (self_ ? s_ : t_).data() + j0,
                                        (self_ ? abs_s_ : abs_t_).data() + j0, j1 - j0, row, out);
  for (std::int64_t j = 0; marked > 0 && j < j1 - j0; ++j) {
    if (std::isnan(out[j])) {
      out[j] = static_cast<U>(exact(i, j0 + j));
      --marked;
    }
  }
  if (float_kernel_) {  // pairs with a row outside the float kernel's range: the exact form
    const std::vector<char>& cols = self_ ? outside_p_ : outside_q_;
    const bool whole = outside_p_[static_cast<std::size_t>(i)] != 0;
    for (std::int64_t j = j0; j < j1; ++j) {
      if (whole || cols[static_cast<std::size_t>(j)]) out[j - j0] = static_cast<U>(exact(i, j));
    }
  }
  if (self_ && i >= j0 && i < j1) out[i - j0] = 0;
}

template <class U, class Buffer>
void DiagPairs::rows_in_passes(std::int64_t lo, std::int64_t hi, U* out, int threads,
                               std::int64_t pass_bytes, Buffer&& buffer) const {
  const std::int64_t rows = hi - lo, m = m_, d = d_;
  // Units of rows handed out to the workers as they come (a worker that starts late or is
  // descheduled on a busy machine leaves its share to the others): about four per worker, whole
  // tiles of the kernel, at most one pass of pass_bytes. With fewer rows than workers, units of
  // columns instead, in whole panels of the packed q.
  const DiagTile tile = float_kernel_ ? kernel_f_.tile : kernel_.tile;
  const std::int64_t panel = diag_panel_columns(tile.nr);
  const bool by_rows = rows >= threads;
  const std::int64_t pass =
      std::max<std::int64_t>(1, pass_bytes / (8 * std::max<std::int64_t>(m, 1)));
  const std::int64_t quarter = (rows + 4 * threads - 1) / (4 * threads);
  const std::int64_t chunk = std::min(pass, (quarter + tile.mr - 1) / tile.mr * tile.mr);
  const std::int64_t units = by_rows ? (rows + chunk - 1) / chunk : (m + panel - 1) / panel;
  std::atomic<std::int64_t> next{0};
  parallel_for(
      std::min<std::int64_t>(threads, units), threads, [&](int w, std::int64_t, std::int64_t) {
        for (std::int64_t u; (u = next.fetch_add(1, std::memory_order_relaxed)) < units;) {
          const std::int64_t i0 = by_rows ? lo + u * chunk : lo;
          const std::int64_t i1 = by_rows ? std::min(hi, i0 + chunk) : hi;
          const std::int64_t j0 = by_rows ? 0 : u * panel;
          const std::int64_t j1 = by_rows ? m : std::min(m, j0 + panel);
          const std::int64_t cols = std::max<std::int64_t>(j1 - j0, 1);
          const std::int64_t step = std::max<std::int64_t>(1, pass_bytes / (8 * cols));
          for (std::int64_t r0 = i0; r0 < i1; r0 += step) {
            const std::int64_t r1 = std::min(i1, r0 + step);
            U* target = out + (r0 - lo) * m + j0;
            // The kernel's Q and the finished KL: in place for double results, else in the worker's
            // buffer (rows of `cols`), then converted.
            double* q = nullptr;
            std::int64_t ldq = m;
            if constexpr (std::is_same_v<U, double>) {
              q = target;
            } else {
              q = buffer(w);
              ldq = cols;
            }
            if (float_kernel_) {
              diag_quadratic_loops_packed(kernel_f_, mu_f_.data() + r0 * d, v_f_.data() + r0 * d,
                                          r1 - r0, q_packed_f_.data(), m, j0, j1, d, q, ldq);
            } else {
              diag_quadratic_loops_packed(kernel_, mu_.data() + r0 * d, v_.data() + r0 * d, r1 - r0,
                                          q_packed_.data(), m, j0, j1, d, q, ldq);
            }
            for (std::int64_t i = r0; i < r1; ++i)
              finish_row(i, j0, j1, q + (i - r0) * ldq, target + (i - r0) * m);
          }
        }
      });
}

template <class U>
void DiagPairs::finish_tile(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols,
                            const double* q, std::int64_t ldq, U* out, std::int64_t ldo) const {
  const DiagFinishRow row{static_cast<double>(d_), 0, 0, tolerance_, kernel_bound_, kernel_abs_};
  const std::vector<double>& t = self_ ? s_ : t_;
  const std::vector<double>& abs_t = self_ ? abs_s_ : abs_t_;
  std::int64_t marked = finish_diag_tile(q, ldq, rows, cols, s_.data() + i0, abs_s_.data() + i0,
                                         t.data() + j0, abs_t.data() + j0, row, out, ldo);
  for (std::int64_t r = 0; marked > 0 && r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      if (std::isnan(out[r * ldo + c])) {
        out[r * ldo + c] = static_cast<U>(exact(i0 + r, j0 + c));
        --marked;
      }
    }
  }
  if (!self_) return;
  for (std::int64_t r = 0; r < rows; ++r) {
    if (i0 + r >= j0 && i0 + r < j0 + cols) out[r * ldo + i0 + r - j0] = 0;
  }
}

template <class U>
void DiagPairs::sym_block(std::int64_t lo, std::int64_t hi, U* out, int threads) const {
  const DiagSymKernel& kernel = sym_kernel_;
  const std::int64_t mr = kernel.tile.mr, nr = kernel.tile.nr, n = n_, m = m_, d = d_;
  const std::int64_t panels = (n + nr - 1) / nr;
  // Column blocks of panels that stay in L2 while the row groups pass over them.
  const std::int64_t per_block =
      std::max<std::int64_t>(1, kDiagSymBlockBytes / (3 * nr * std::max<std::int64_t>(d, 1) * 8));
  const std::int64_t blocks = (panels + per_block - 1) / per_block;
  const bool all = lo == 0 && hi == n;
  const std::int64_t g_lo = lo / mr, g_hi = (hi + mr - 1) / mr;
  // Row groups g over column blocks B, B-major: all rows, every group up to B's last panel, each
  // with B's panels from its own on, both directions; rows [lo, hi), the groups meeting them with
  // all of B, one direction. Tiles (one group, one panel), numbered in that order, are handed out
  // one at a time as they come: on a busy machine a worker that starts late, or is descheduled,
  // keeps at most one tile from the others. tiles[k] is the first tile of the k-th (B, g).
  std::vector<std::int64_t> tiles{0};
  std::vector<std::int64_t> group_block;  // B of each (B, g), and its g in `group`
  std::vector<std::int64_t> group;
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t end_panel = std::min(panels, (b + 1) * per_block);
    const std::int64_t groups = all ? std::min(g_hi, end_panel * nr / mr) : g_hi;
    for (std::int64_t g = all ? 0 : g_lo; g < groups; ++g) {
      const std::int64_t from = all ? std::max(b * per_block, g * mr / nr) : b * per_block;
      tiles.push_back(tiles.back() + end_panel - from);
      group_block.push_back(b);
      group.push_back(g);
    }
  }
  const std::int64_t count = tiles.back();
  std::atomic<std::int64_t> next{0};
  parallel_for(
      std::min<std::int64_t>(threads, count), threads, [&](int, std::int64_t, std::int64_t) {
        alignas(64) double c[kDiagSymMaxTile], ct[kDiagSymMaxTile], transposed[kDiagSymMaxTile];
        for (std::int64_t t; (t = next.fetch_add(1, std::memory_order_relaxed)) < count;) {
          const auto at = std::upper_bound(tiles.begin(), tiles.end(), t) - 1;
          const auto k = static_cast<std::size_t>(at - tiles.begin());
          const std::int64_t b = group_block[k], i0 = group[k] * mr;
          const std::int64_t r0 = std::max(i0, lo), r1 = std::min(i0 + mr, hi);
          const std::int64_t from = all ? std::max(b * per_block, i0 / nr) : b * per_block;
          const std::int64_t j0 = (from + t - *at) * nr, cols = std::min(nr, n - j0);
          // A tile on the diagonal whose rows are its whole panel holds both directions of each
          // of its pairs already: one direction, at 2/3 of the cost.
          const bool both = all && !(mr == nr && i0 == j0);
          diag_sym_tile(kernel, sym_panels_.data(), d, i0, j0, c, both ? ct : nullptr);
          finish_tile(r0, r1 - r0, j0, cols, c + (r0 - i0) * nr, nr, out + (r0 - lo) * m + j0, m);
          if (!both) continue;
          // Q(j0 + l, i0 + r) is ct[r * nr + l]: transposed into rows of j.
          for (std::int64_t r = 0; r < mr; ++r) {
            for (std::int64_t l = 0; l < nr; ++l)
              transposed[l * mr + r] = ct[r * nr + l];
          }
          finish_tile(j0, cols, i0, r1 - i0, transposed, mr, out + j0 * m + i0, m);
        }
      });
}

void DiagPairs::block(std::int64_t lo, std::int64_t hi, double* out, int threads) const {
  if (sym_) {
    sym_block(lo, hi, out, threads);
    return;
  }
  rows_in_passes(lo, hi, out, threads, kDiagPassBytes, [](int) { return nullptr; });
}

void DiagPairs::block(std::int64_t lo, std::int64_t hi, float* out, int threads) const {
  if (sym_) {
    sym_block(lo, hi, out, threads);
    return;
  }
  // No more than the block needs (a small call would clear megabytes otherwise), not
  // value-initialized: the kernel writes every entry before the finish reads it.
  const std::int64_t per_worker = std::min(float_buffer_values(m_), (hi - lo) * m_);
  Buffer<double> buffers;
  buffers.resize(static_cast<std::size_t>(threads * per_worker));
  rows_in_passes(lo, hi, out, threads, kDiagFloatPassBytes,
                 [&](int w) { return buffers.data() + w * per_worker; });
}

template std::int64_t DiagPairs::footprint<float>(std::int64_t, std::int64_t, std::int64_t, bool,
                                                  DiagKernelKind, int);
template std::int64_t DiagPairs::footprint<double>(std::int64_t, std::int64_t, std::int64_t, bool,
                                                   DiagKernelKind, int);
template DiagPairs::DiagPairs(const DiagGaussians<float>&, const DiagGaussians<float>*, double,
                              DiagKernelKind, int);
template DiagPairs::DiagPairs(const DiagGaussians<double>&, const DiagGaussians<double>*, double,
                              DiagKernelKind, int);

}  // namespace gausskl::cpu
