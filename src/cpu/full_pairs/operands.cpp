#include "cpu/full_pairs/operands.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/common/parallel.hpp"
#include "cpu/common/saturating.hpp"
#include "cpu/full_pairs/gemm.hpp"
#include "cpu/full_pairs/mean_terms.hpp"

namespace gausskl::cpu {
namespace {

using ld = long double;
constexpr double kUnit = 0x1p-53;
constexpr ld kUnitLd = 0x1p-64L;  // x87 extended precision (64-bit significand)
static_assert(std::numeric_limits<ld>::digits == 64, "x87 long double expected");

// The largest rho (bound on ||W L - I||_2) for which a column keeps the fast path; the bound's
// inverse term is 2.1 rho relative, which needs rho << 1.
constexpr double kMaxRho = 1e-3;

double gamma(std::int64_t n, ld unit) {
  const ld x = static_cast<ld>(n) * unit;
  return static_cast<double>(x / (1 - x));
}

// Long-double scratch of one q: W = L^{-1}, W rounded to double, P = W' W.
std::int64_t q_scratch_size(std::int64_t d) {
  return 3 * d * d;
}

double squared_norm(const double* x, std::int64_t n) {
  double s = 0;
  for (std::int64_t k = 0; k < n; ++k)
    s += x[k] * x[k];
  return s;
}

// sum_k 2 log L_kk in long double, rounded once; *abs gets sum_k |2 log L_kk|.
double log_det(const Prepared& g, double* abs) {
  ld s = 0;
  double a = 0;
  for (std::int64_t k = 0; k < g.d; ++k) {
    s += 2 * static_cast<ld>(g.log_diag[k]);
    a += std::abs(2 * g.log_diag[k]);
  }
  *abs = a;
  return static_cast<double>(s);
}

}  // namespace

FullOperands::FullOperands(const PreparedBatch& q, std::int64_t m, const PreparedBatch* p,
                           std::int64_t n, double tolerance, int threads)
    : n_(p ? n : m),
      m_(m),
      d_(q.layout().d),
      kp_(full_gemm_depth(d_ * (d_ + 1) / 2)),
      tri_(d_ * (d_ + 1) / 2),
      self_(p == nullptr),
      tolerance_(tolerance),
      // Three more roundings than the GEMM's own: a, b (each rounded once from long double)
      // and one to spare.
      gemm_bound_(gamma(full_gemm_roundings(kp_) + 3, kUnit)),
      ld_bound_(gamma(2 * d_ + 2, kUnitLd)),
      mean_bound_(gamma(d_ + 1, kUnit)),
      sum_bound_(gamma(d_, kUnit)),
      a_(static_cast<std::size_t>(n_ * kp_), 0.0),
      b_(static_cast<std::size_t>(m_ * kp_), 0.0),
      mu_t_(static_cast<std::size_t>((n_ + kFullLanes - 1) / kFullLanes * kFullLanes * d_), 0.0),
      nu_(static_cast<std::size_t>(m_ * d_)),
      w_(static_cast<std::size_t>(m_ * tri_)),
      row_terms_(static_cast<std::size_t>(n_)),
      col_terms_(static_cast<std::size_t>(m_)) {
  const std::int64_t d = d_;
  const std::int64_t vech = tri_;

  // q_j: b_j, W_j, nu_j, t_j and the ingredients of the bound.
  const int workers =
      static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, m_)));
  std::vector<ld> scratch(static_cast<std::size_t>(workers * q_scratch_size(d)));
  parallel_for(m_, workers, [&](int w, std::int64_t lo, std::int64_t hi) {
    ld* wl = scratch.data() + w * q_scratch_size(d);  // W = L^{-1}, long double
    ld* wd = wl + d * d;                              // W rounded to double
    ld* pl = wd + d * d;                              // P = W' W
    for (std::int64_t j = lo; j < hi; ++j) {
      const Prepared g = q.get(j);
      const double* l = g.base;
      ColTerms& ct = col_terms_[static_cast<std::size_t>(j)];
      // W = L^{-1} column by column (forward substitution), then rounded to double.
      std::fill(wl, wl + d * d, ld{0});
      for (std::int64_t k = 0; k < d; ++k) {
        wl[k * d + k] = 1 / static_cast<ld>(l[k * d + k]);
        for (std::int64_t i = k + 1; i < d; ++i) {
          ld s = 0;
          for (std::int64_t t = k; t < i; ++t)
            s -= static_cast<ld>(l[i * d + t]) * wl[t * d + k];
          wl[i * d + k] = s / static_cast<ld>(l[i * d + i]);
        }
      }
      double w_fro2 = 0, l_fro2 = 0;
      for (std::int64_t k = 0; k < d * d; ++k) {
        wd[k] = static_cast<double>(wl[k]);
        w_fro2 += static_cast<double>(wd[k] * wd[k]);
        l_fro2 += l[k] * l[k];
      }
      double* wj = w_.data() + j * tri_;
      for (std::int64_t k = 0, at = 0; k < d; ++k)
        for (std::int64_t h = 0; h <= k; ++h)
          wj[at++] = static_cast<double>(wd[k * d + h]);
      // R = W L - I in long double (both lower triangular): rho bounds ||R||_2 by ||R||_F plus
      // the rounding of computing R, gamma'_{d+1} || |W| |L| ||_F <= gamma'_{d+1} |W|_F |L|_F.
      ld r_fro2 = 0;
      for (std::int64_t i = 0; i < d; ++i) {
        for (std::int64_t k = 0; k <= i; ++k) {
          ld s = i == k ? ld{-1} : ld{0};
          for (std::int64_t t = k; t <= i; ++t)
            s += wd[i * d + t] * static_cast<ld>(l[t * d + k]);
          r_fro2 += s * s;
        }
      }
      const double rho = 1.01 * (std::sqrt(static_cast<double>(r_fro2)) +
                                 gamma(d + 1, kUnitLd) * std::sqrt(w_fro2) * std::sqrt(l_fro2));
      // P = W' W (W lower: P_hk = sum_{t >= max(h, k)} W_th W_tk).
      for (std::int64_t h = 0; h < d; ++h) {
        for (std::int64_t k = 0; k <= h; ++k) {
          ld s = 0;
          for (std::int64_t t = h; t < d; ++t)
            s += wd[t * d + h] * wd[t * d + k];
          pl[h * d + k] = pl[k * d + h] = s;
        }
      }
      double nu_abs = 0;
      for (std::int64_t h = 0; h < d; ++h) {
        nu_[static_cast<std::size_t>(j * d + h)] = g.mean[h];
        nu_abs += std::abs(g.mean[h]);
      }
      double* b = b_.data() + j * kp_;
      double p_inf = 0;
      for (std::int64_t h = 0, at = 0; h < d; ++h) {
        double row_abs = 0;
        for (std::int64_t k = 0; k < d; ++k)
          row_abs += std::abs(static_cast<double>(pl[h * d + k]));
        p_inf = std::max(p_inf, row_abs);
        for (std::int64_t k = 0; k <= h; ++k)
          b[at++] = (h == k ? 1 : 2) * static_cast<double>(pl[h * d + k]);
      }
      ct.t = log_det(g, &ct.abs_t);
      ct.norm_p = std::sqrt(squared_norm(b, vech));
      ct.p_inf = 1.01 * p_inf;  // >= ||P||_2 of the exact inverse too, as rho <= 1e-3
      ct.w_fro = 1.01 * std::sqrt(w_fro2);
      ct.w_fro2 = w_fro2;
      ct.rho = rho;
      const double all = ct.t + ct.norm_p + ct.p_inf + w_fro2 + nu_abs;
      ct.exact = !(rho <= kMaxRho) || !std::isfinite(all);
    }
  });

  // p_i: a_i, its mean in its group's lanes, s_i and the ingredients of the bound.
  const PreparedBatch& pp = p ? *p : q;
  parallel_for(n_, threads, [&](int, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      const Prepared g = pp.get(i);
      double* a = a_.data() + i * kp_;
      double* mu_t = mu_t_.data() + i / kFullLanes * kFullLanes * d + i % kFullLanes;
      for (std::int64_t h = 0; h < d; ++h)
        mu_t[h * kFullLanes] = g.mean[h];
      ld trace = 0;
      for (std::int64_t h = 0, at = 0; h < d; ++h) {
        for (std::int64_t k = 0; k <= h; ++k) {
          ld s = 0;
          if (g.tri) {
            for (std::int64_t t = 0; t <= k; ++t)
              s += static_cast<ld>(g.base[h * d + t]) * g.base[k * d + t];
          } else if (h == k) {
            s += static_cast<ld>(g.base[h]) * g.base[h];
          }
          a[at++] = static_cast<double>(s);
        }
        if (g.tri) {
          for (std::int64_t t = 0; t <= h; ++t)
            trace += static_cast<ld>(g.base[h * d + t]) * g.base[h * d + t];
        } else {
          trace += static_cast<ld>(g.base[h]) * g.base[h];
        }
      }
      RowTerms& rt = row_terms_[static_cast<std::size_t>(i)];
      rt.s = log_det(g, &rt.abs_s);
      rt.norm_s = std::sqrt(squared_norm(a, vech));
      rt.trace = 1.01 * static_cast<double>(trace);
    }
  });
}

std::int64_t FullOperands::footprint(std::int64_t n, std::int64_t m, std::int64_t d) {
  const std::int64_t tri = d * (d + 1) / 2;
  const std::int64_t kp = full_gemm_depth(tri);
  // a_ and mu_t_ (n rounded up to a group) per p; b_, nu_ and w_ per q.
  const std::int64_t groups = sat_add(n, kFullLanes - 1) / kFullLanes * kFullLanes;
  const std::int64_t doubles = sat_add(sat_add(sat_mul(n, kp), sat_mul(groups, d)),
                                       sat_mul(m, sat_add(sat_add(kp, d), tri)));
  const std::int64_t terms = sat_add(sat_mul(n, static_cast<std::int64_t>(sizeof(RowTerms))),
                                     sat_mul(m, static_cast<std::int64_t>(sizeof(ColTerms))));
  return sat_add(sat_mul(8, doubles), terms);
}

std::int64_t FullOperands::build_scratch(std::int64_t d, int threads) {
  // Each worker's long-double scratch.
  return sat_mul(sat_mul(threads, q_scratch_size(d)), static_cast<std::int64_t>(sizeof(ld)));
}

double FullOperands::finish(std::int64_t i, std::int64_t j, double trace, double quad,
                            double dist2) const {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const ColTerms& ct = col_terms_[static_cast<std::size_t>(j)];
  if (ct.exact || (self_ && i == j)) return nan;  // the diagonal: exactly 0, by the exact formula
  const RowTerms& rt = row_terms_[static_cast<std::size_t>(i)];
  const double d = static_cast<double>(d_);
  const double two_kl = ((trace + quad) - (rt.s + d)) + ct.t;
  const double gemm = gemm_bound_ * rt.norm_s * ct.norm_p;
  const double e = mean_bound_ * ct.w_fro * (1.01 * std::sqrt(dist2));
  const double mean = sum_bound_ * 1.01 * quad + e * (2 * std::sqrt(1.01 * quad) + e);
  const double ld_terms = ld_bound_ * (2 * (ct.w_fro2 + ct.p_inf) * rt.trace + rt.abs_s + ct.abs_t);
  const double scale = std::abs(trace) + quad;
  const double inverse = 2.1 * ct.rho * (scale + gemm + mean + ld_terms + kUnit * scale);
  const double logs = std::abs(rt.s) + std::abs(ct.t);
  const double finish = kUnit * logs + 4 * kUnit * (scale + d + logs);
  const double bound = 1.01 * (gemm + mean + ld_terms + inverse + finish);
  const double kl = 0.5 * two_kl;
  // Kept if within tolerance and if the bound is a small part of the value itself (as in
  // diag_pairs/plan.cpp); NaN anywhere fails both tests.
  const bool keep = 0.5 * bound <= tolerance_ * (std::abs(kl) + 1) && 0.5 * bound <= 1e-2 * kl;
  return keep ? kl : nan;
}

void FullOperands::finish_group(std::int64_t group, std::int64_t i0, std::int64_t i1,
                                std::int64_t j0, std::int64_t j1, double* out,
                                std::int64_t ldo) const {
  // The mean part of a chunk of columns at a time, on the stack.
  constexpr std::int64_t kChunk = 32;
  double quad[kChunk * kFullLanes], dist2[kChunk * kFullLanes];
  const double* mu_t = mu_t_.data() + group * kFullLanes * d_;
  const std::int64_t base = group * kFullLanes;
  for (std::int64_t c0 = j0; c0 < j1; c0 += kChunk) {
    const std::int64_t cols = std::min(kChunk, j1 - c0);
    full_mean_terms(mu_t, d_, nu_.data() + c0 * d_, w_.data() + c0 * tri_, cols, quad, dist2);
    for (std::int64_t i = i0; i < i1; ++i) {
      const std::int64_t l = i - base;
      double* row = out + (i - i0) * ldo + (c0 - j0);
      for (std::int64_t c = 0; c < cols; ++c)
        row[c] = finish(i, c0 + c, row[c], quad[c * kFullLanes + l], dist2[c * kFullLanes + l]);
    }
  }
}

void FullOperands::rows(std::int64_t i0, std::int64_t i1, std::int64_t j0, std::int64_t j1,
                        double* out, std::int64_t ldo) const {
  full_gemm(a_.data() + i0 * kp_, i1 - i0, b_.data() + j0 * kp_, j1 - j0, kp_, out, ldo);
  for (std::int64_t g = i0 / kFullLanes; g * kFullLanes < i1; ++g) {
    const std::int64_t lo = std::max(i0, g * kFullLanes);
    const std::int64_t hi = std::min(i1, (g + 1) * kFullLanes);
    finish_group(g, lo, hi, j0, j1, out + (lo - i0) * ldo, ldo);
  }
}

}  // namespace gausskl::cpu
