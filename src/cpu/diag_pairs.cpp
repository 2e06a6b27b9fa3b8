#include "cpu/diag_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "cpu/diag_quadratic.hpp"
#include "cpu/diag_quadratic_loops.hpp"
#include "cpu/diag_row_terms.hpp"
#include "cpu/diag_terms.hpp"
#include "cpu/finish_diag.hpp"
#include "cpu/parallel.hpp"
#include "cpu/saturating.hpp"
#include "cpu/stable.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {
namespace {

constexpr double kUnit = std::numeric_limits<double>::epsilon() / 2;

// Neumaier's compensated sum: error <= 2u sum |x| + O(D u^2), not D u sum |x|.
struct CompensatedSum {
  double sum = 0, carry = 0;
  void add(double x) {
    const double t = sum + x;
    carry += std::abs(sum) >= std::abs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
  }
  double value() const { return sum + carry; }
};

// Whether a mean and log sigma keep every term of the float kernel within the range where its
// bound holds: sigma in [2^-20, 2^20] (variances and precisions in [2^-40, 2^40]; the test on
// log sigma is a hair inside that) and means within 2^20 make each term below 2^84 and each
// v lam a normal float, so nothing overflows and only terms far below the +1 of the tolerance's
// |KL| + 1 can underflow (kernel_abs_ covers them).
bool in_float_kernel_range(double mean, double log_sigma) {
  return std::abs(mean) <= 0x1p20 && std::abs(log_sigma) <= 13.8;  // 20 log 2 = 13.86
}

// The double kernel's bound relative to the computed Q, with the roundings of its operands (v
// within 2u, lam = (1 / sigma)^2 within 6u; each term is non-negative, so they bound the term's).
double double_kernel_bound(std::int64_t d) {
  const double c = diag_quadratic_error_bound<double>(d) + 8 * 0x1p-53;
  return c / (1 - c);
}

// The float kernel's bound relative to Q, with the roundings of v and lam to float (each term is
// non-negative, so each operand's relative rounding u bounds the term's), as a bound relative to
// the computed Q: c / (1 - c).
double float_kernel_bound(std::int64_t d) {
  const double c = diag_quadratic_error_bound<float>(d) + 2.5 * 0x1p-24;
  return c / (1 - c);
}

}  // namespace

bool DiagPairs::float_kernel_allowed(double tolerance, std::int64_t d) {
  return tolerance >= kDiagFloatKernelMargin * float_kernel_bound(d);
}

template <class T>
DiagPairs::DiagPairs(const DiagGaussians<T>& p, const DiagGaussians<T>* q, double tolerance,
                     int threads)
    : n_(p.mean.shape[0]),
      m_(q ? q->mean.shape[0] : p.mean.shape[0]),
      d_(p.mean.shape[1]),
      self_(q == nullptr),
      tolerance_(tolerance),
      kernel_bound_(0),
      kernel_(diag_kernel<double>()),
      kernel_f_(diag_kernel<float>()),
      p_in_(p),
      q_in_(q ? *q : p) {
  if (std::is_same_v<T, float> && float_kernel_allowed(tolerance, d_)) {
    float_kernel_ = unpack(p, true, true, threads) && (self_ || unpack(*q, false, true, threads));
    if (!float_kernel_) {  // a value out of the float kernel's range: the double kernel
      std::vector<float>().swap(mu_f_);
      std::vector<float>().swap(v_f_);
    }
  }
  if (!float_kernel_) {
    unpack(p, true, false, threads);
    if (!self_) unpack(*q, false, false, threads);
  }
  if (float_kernel_) {
    kernel_bound_ = float_kernel_bound(d_);
    // A square (mu - nu)^2 below the smallest float (2^-149) is lost or rounded absolutely, and
    // lam <= 2^40 scales that to below 2^-108 per term, a few roundings each: 2^-100 per h.
    kernel_abs_ = static_cast<double>(d_) * 0x1p-100;
    pack_q(q ? *q : p, q_packed_f_, kernel_f_.tile.nr, threads);
  } else {
    kernel_bound_ = double_kernel_bound(d_);
    pack_q(q ? *q : p, q_packed_, kernel_.tile.nr, threads);
  }
}

template <class T>
bool DiagPairs::unpack(const DiagGaussians<T>& g, bool as_p, bool in_float, int threads) {
  const std::int64_t d = d_, rows = g.mean.shape[0];
  std::vector<double>& sum = as_p ? s_ : t_;
  std::vector<double>& abs_sum = as_p ? abs_s_ : abs_t_;
  const std::size_t values = static_cast<std::size_t>(rows * d);
  sum.resize(static_cast<std::size_t>(rows));
  abs_sum.resize(sum.size());
  if (as_p && in_float) {
    mu_f_.resize(values);
    v_f_.resize(values);
  } else if (as_p) {
    mu_.resize(values);
    v_.resize(values);
  }
  const int workers = std::max(threads, 1);
  std::vector<char> in_range(static_cast<std::size_t>(workers), 1);
  parallel_for(rows, workers, [&](int w, std::int64_t lo, std::int64_t hi) {
    // A row's scale parameters, log sigma and variances, for diag_row_terms.
    std::vector<double> buffer(static_cast<std::size_t>(3 * d));
    double* const x = buffer.data();
    double* const log_sigma = x + d;
    double* const variance = log_sigma + d;
    bool fits = true;
    for (std::int64_t i = lo; i < hi; ++i) {
      for (std::int64_t h = 0; h < d; ++h)
        x[h] = g.scale(i, h);
      diag_row_terms(g.param, x, d, log_sigma, as_p ? variance : nullptr);
      CompensatedSum s;
      double a = 0;
      for (std::int64_t h = 0; h < d; ++h) {
        const std::size_t k = static_cast<std::size_t>(i * d + h);
        const double mu = g.mean(i, h);
        if (as_p && in_float) {
          mu_f_[k] = static_cast<float>(mu);
          v_f_[k] = static_cast<float>(variance[h]);
        } else if (as_p) {
          mu_[k] = mu;
          v_[k] = variance[h];
        }
        if (in_float) fits &= in_float_kernel_range(mu, log_sigma[h]);
        s.add(2 * log_sigma[h]);
        a += std::abs(2 * log_sigma[h]);
      }
      sum[static_cast<std::size_t>(i)] = s.value();
      abs_sum[static_cast<std::size_t>(i)] = a;
    }
    if (!fits) in_range[static_cast<std::size_t>(w)] = 0;
  });
  return std::all_of(in_range.begin(), in_range.end(), [](char c) { return c != 0; });
}

template <class T, class U>
void DiagPairs::pack_q(const DiagGaussians<T>& q, std::vector<U>& packed, std::int64_t nr,
                       int threads) const {
  const std::int64_t d = d_, m = m_;
  packed.resize(static_cast<std::size_t>(diag_packed_q_size(m, d, nr)));
  // q's means and precisions (1 / sigma^2) in U exist only panel by panel, in each worker's
  // buffer.
  const std::int64_t panel = diag_panel_columns(nr);
  const int workers = std::max(threads, 1);
  std::vector<U> buffers(static_cast<std::size_t>(workers * 2 * panel * d));
  parallel_for((m + panel - 1) / panel, workers, [&](int w, std::int64_t a, std::int64_t b) {
    U* nu_w = buffers.data() + w * 2 * panel * d;
    U* lam_w = nu_w + panel * d;
    for (std::int64_t j0 = a * panel; j0 < std::min(m, b * panel); j0 += panel) {
      const std::int64_t cols = std::min(panel, m - j0);
      for (std::int64_t c = 0; c < cols; ++c) {
        for (std::int64_t h = 0; h < d; ++h) {
          const double inv_b = diag_inv_sigma(q.param, q.scale(j0 + c, h));
          nu_w[c * d + h] = static_cast<U>(q.mean(j0 + c, h));
          lam_w[c * d + h] = static_cast<U>(inv_b * inv_b);
        }
      }
      pack_diag_q_panels(nu_w, lam_w, cols, d, nr,
                         packed.data() + diag_packed_q_offset(m, d, nr, j0, 0));
    }
  });
}

template <class T>
std::int64_t DiagPairs::footprint(std::int64_t n, std::int64_t m, std::int64_t d, bool self,
                                  double tolerance, int threads) {
  // The two sums per row of p and of q; the kernel's operands: p's means and variances and q
  // packed; and, while packing, a panel of q's means and precisions per worker. The float
  // kernel's arrays are released before the double kernel's are made, so the larger of the two
  // layouts bounds both.
  const std::int64_t workers = std::max(threads, 1);
  // (and, while unpacking, a row of parameters, log sigma and variances per worker).
  const std::int64_t sums =
      sat_mul(8, sat_add(sat_add(2 * n, self ? 0 : 2 * m), sat_mul(workers, sat_mul(3, d))));
  auto layout = [&](std::int64_t bytes, std::int64_t nr) {
    const std::int64_t p_values = sat_mul(n, sat_mul(2, d));
    const std::int64_t packed = diag_packed_q_size(m, d, nr);
    const std::int64_t panels = sat_mul(sat_mul(workers, 2 * d), diag_panel_columns(nr));
    return sat_mul(bytes, sat_add(sat_add(p_values, packed), panels));
  };
  std::int64_t own = layout(8, diag_kernel<double>().tile.nr);
  if (std::is_same_v<T, float> && float_kernel_allowed(tolerance, d))
    own = std::max(own, layout(4, diag_kernel<float>().tile.nr));
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
  if (self_ && i >= j0 && i < j1) out[i - j0] = 0;
}

template <class U, class Buffer>
void DiagPairs::rows_in_passes(std::int64_t lo, std::int64_t hi, U* out, int threads,
                               std::int64_t pass_bytes, Buffer&& buffer) const {
  const std::int64_t rows = hi - lo, m = m_, d = d_;
  // Split rows over the workers; with fewer rows than workers, split columns instead, in whole
  // panels of the packed q.
  const std::int64_t panel =
      diag_panel_columns(float_kernel_ ? kernel_f_.tile.nr : kernel_.tile.nr);
  const bool by_rows = rows >= threads;
  parallel_for(by_rows ? rows : (m + panel - 1) / panel, threads,
               [&](int w, std::int64_t a, std::int64_t b) {
                 const std::int64_t i0 = by_rows ? lo + a : lo, i1 = by_rows ? lo + b : hi;
                 const std::int64_t j0 = by_rows ? 0 : a * panel;
                 const std::int64_t j1 = by_rows ? m : std::min(m, b * panel);
                 const std::int64_t cols = std::max<std::int64_t>(j1 - j0, 1);
                 const std::int64_t pass = std::max<std::int64_t>(1, pass_bytes / (8 * cols));
                 for (std::int64_t r0 = i0; r0 < i1; r0 += pass) {
                   const std::int64_t r1 = std::min(i1, r0 + pass);
                   U* target = out + (r0 - lo) * m + j0;
                   // The kernel's Q and the finished KL: in place for double results, else in
                   // the worker's buffer (rows of `cols`), then converted.
                   double* q = nullptr;
                   std::int64_t ldq = m;
                   if constexpr (std::is_same_v<U, double>) {
                     q = target;
                   } else {
                     q = buffer(w);
                     ldq = cols;
                   }
                   if (float_kernel_) {
                     diag_quadratic_loops_packed(kernel_f_, mu_f_.data() + r0 * d,
                                                 v_f_.data() + r0 * d, r1 - r0, q_packed_f_.data(),
                                                 m, j0, j1, d, q, ldq);
                   } else {
                     diag_quadratic_loops_packed(kernel_, mu_.data() + r0 * d, v_.data() + r0 * d,
                                                 r1 - r0, q_packed_.data(), m, j0, j1, d, q, ldq);
                   }
                   for (std::int64_t i = r0; i < r1; ++i)
                     finish_row(i, j0, j1, q + (i - r0) * ldq, target + (i - r0) * m);
                 }
               });
}

void DiagPairs::block(std::int64_t lo, std::int64_t hi, double* out, int threads) const {
  rows_in_passes(lo, hi, out, threads, kDiagPassBytes, [](int) { return nullptr; });
}

void DiagPairs::block(std::int64_t lo, std::int64_t hi, float* out, int threads) const {
  // No more than the block needs (a small call would clear megabytes otherwise), not
  // value-initialized: the kernel writes every entry before the finish reads it.
  const std::int64_t per_worker = std::min(float_buffer_values(m_), (hi - lo) * m_);
  const std::unique_ptr<double[]> buffers(
      new double[static_cast<std::size_t>(threads * per_worker)]);
  rows_in_passes(lo, hi, out, threads, kDiagFloatPassBytes,
                 [&](int w) { return buffers.get() + w * per_worker; });
}

template std::int64_t DiagPairs::footprint<float>(std::int64_t, std::int64_t, std::int64_t, bool,
                                                  double, int);
template std::int64_t DiagPairs::footprint<double>(std::int64_t, std::int64_t, std::int64_t, bool,
                                                   double, int);
template DiagPairs::DiagPairs(const DiagGaussians<float>&, const DiagGaussians<float>*, double,
                              int);
template DiagPairs::DiagPairs(const DiagGaussians<double>&, const DiagGaussians<double>*, double,
                              int);

}  // namespace gausskl::cpu
