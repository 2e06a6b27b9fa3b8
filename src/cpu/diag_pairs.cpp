#include "cpu/diag_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/diag_quadratic.hpp"
#include "cpu/diag_quadratic_loops.hpp"
#include "cpu/diag_terms.hpp"
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

}  // namespace

template <class T>
DiagPairs::DiagPairs(const DiagGaussians<T>& p, const DiagGaussians<T>* q, double tolerance,
                     int threads)
    : n_(p.mean.shape[0]),
      m_(q ? q->mean.shape[0] : p.mean.shape[0]),
      d_(p.mean.shape[1]),
      self_(q == nullptr),
      tolerance_(tolerance),
      kernel_bound_(diag_quadratic_error_bound<double>(p.mean.shape[1])),
      kernel_(diag_kernel<double>()) {
  const std::int64_t d = d_;
  auto unpack = [&](const DiagGaussians<T>& g, std::int64_t rows, bool as_p, bool as_q) {
    std::vector<double>& mean = as_p ? mu_ : nu_;
    std::vector<double>& log_b = as_p ? log_b_p_ : log_b_q_;
    std::vector<double>& sum = as_p ? s_ : t_;
    std::vector<double>& abs_sum = as_p ? abs_s_ : abs_t_;
    mean.resize(static_cast<std::size_t>(rows * d));
    log_b.resize(mean.size());
    sum.resize(static_cast<std::size_t>(rows));
    abs_sum.resize(sum.size());
    if (as_p) v_.resize(mean.size());
    if (as_q) inv_b_.resize(mean.size());
    parallel_for(rows, threads, [&](int, std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) {
        CompensatedSum s;
        double a = 0;
        for (std::int64_t h = 0; h < d; ++h) {
          const std::size_t k = static_cast<std::size_t>(i * d + h);
          double b = 0, inv_b = 0, lb = 0;
          diag_terms(g.param, g.scale(i, h), &b, &inv_b, &lb);
          mean[k] = g.mean(i, h);
          log_b[k] = lb;
          if (as_p) v_[k] = b * b;
          if (as_q) inv_b_[k] = inv_b;
          s.add(2 * lb);
          a += std::abs(2 * lb);
        }
        sum[static_cast<std::size_t>(i)] = s.value();
        abs_sum[static_cast<std::size_t>(i)] = a;
      }
    });
  };
  unpack(p, n_, true, self_);
  if (!self_) unpack(*q, m_, false, true);
  const std::int64_t nr = kernel_.tile.nr;
  q_packed_.resize(static_cast<std::size_t>(diag_packed_q_size(m_, d, nr)));
  const double* nu = (self_ ? mu_ : nu_).data();
  // q's precisions, 1 / sigma^2, exist only panel by panel, in each worker's buffer.
  const std::int64_t panel = diag_panel_columns(nr);
  const int workers = static_cast<int>(std::max<std::int64_t>(threads, 1));
  std::vector<double> lam(static_cast<std::size_t>(workers * panel * d));
  parallel_for((m_ + panel - 1) / panel, workers, [&](int w, std::int64_t a, std::int64_t b) {
    double* lam_w = lam.data() + w * panel * d;
    for (std::int64_t j0 = a * panel; j0 < std::min(m_, b * panel); j0 += panel) {
      const std::int64_t cols = std::min(panel, m_ - j0);
      const double* inv_b = inv_b_.data() + j0 * d;
      for (std::int64_t k = 0; k < cols * d; ++k)
        lam_w[k] = inv_b[k] * inv_b[k];
      pack_diag_q_panels(nu + j0 * d, lam_w, cols, d, nr,
                         q_packed_.data() + diag_packed_q_offset(m_, d, nr, j0, 0));
    }
  });
}

template <class T>
std::int64_t DiagPairs::footprint(std::int64_t n, std::int64_t m, std::int64_t d, bool self,
                                  double /*tolerance*/, int threads) {
  // Per row of p: mean, variance, log sigma (and, when q = p, 1 / sigma) and the two sums; per
  // row of q: mean, 1 / sigma, log sigma and the two sums; q packed for the kernel; and, while
  // constructing, a panel of q's precisions per worker.
  const std::int64_t p_doubles = sat_add(sat_mul(n, sat_mul(self ? 4 : 3, d)), 2 * n);
  const std::int64_t q_doubles = self ? 0 : sat_add(sat_mul(m, sat_mul(3, d)), 2 * m);
  const std::int64_t packed = diag_packed_q_size(m, d, diag_kernel<double>().tile.nr);
  const std::int64_t doubles =
      sat_add(sat_add(p_doubles, q_doubles),
              sat_add(packed, sat_mul(sat_mul(std::max(threads, 1), d),
                                      diag_panel_columns(diag_kernel<double>().tile.nr))));
  return sat_add(sat_mul(8, doubles), sat_mul(threads, diag_quadratic_p_block_bytes<double>()));
}

double DiagPairs::exact(std::int64_t i, std::int64_t j) const {
  if (self_ && i == j) return 0;  // KL(p_i || p_i) = 0 by definition, whatever round-off says
  const double* mu = mu_.data() + i * d_;
  const double* lp = log_b_p_.data() + i * d_;
  const double* nu = (self_ ? mu_ : nu_).data() + j * d_;
  const double* lq = (self_ ? log_b_p_ : log_b_q_).data() + j * d_;
  const double* inv_b = inv_b_.data() + j * d_;
  double sum = 0;
  for (std::int64_t h = 0; h < d_; ++h) {
    const double a = (mu[h] - nu[h]) * inv_b[h];
    sum += a * a + expm1_minus_x(2 * (lp[h] - lq[h]));
  }
  return 0.5 * sum;
}

void DiagPairs::finish_row(std::int64_t i, std::int64_t j0, std::int64_t j1, double* at) const {
  const double d = static_cast<double>(d_);
  const double s = s_[static_cast<std::size_t>(i)], abs_s = abs_s_[static_cast<std::size_t>(i)];
  const double* t = (self_ ? s_ : t_).data() + j0;
  const double* abs_t = (self_ ? abs_s_ : abs_t_).data() + j0;
  const std::int64_t cols = j1 - j0;
  const double tolerance = tolerance_, kernel_bound = kernel_bound_;
  constexpr double kRescore = std::numeric_limits<double>::quiet_NaN();
  // Two passes so that the first, over every entry, has no call (and no count: GCC 12 then
  // gives up) in it and vectorizes: it keeps the entries its bound certifies and marks the
  // others NaN (the kernel never makes a NaN: its terms are non-negative), which the second
  // recomputes.
  for (std::int64_t j = 0; j < cols; ++j) {
    const double q = at[j];
    const double tj = t[j];
    const double two_kl = (q - d) - s + tj;
    // The kernel's bound on Q, three roundings of the subtraction, and the compensated sums.
    const double bound = kernel_bound * q + kUnit * (3 * (q + d + std::abs(s) + std::abs(tj)) +
                                                     2 * (abs_s + abs_t[j]));
    const double kl = 0.5 * two_kl;
    // Kept if within tolerance and if the bound is a small part of the value itself: a KL near
    // 0 (duplicates, near-duplicates) is recomputed, so it keeps its relative accuracy and
    // identical rows give exactly 0.
    // (& rather than &&: no branch, so the loop vectorizes.)
    const bool keep = (0.5 * bound <= tolerance * (std::abs(kl) + 1)) & (0.5 * bound <= 1e-2 * kl);
    at[j] = keep ? kl : kRescore;
  }
  for (std::int64_t j = 0; j < cols; ++j) {
    if (std::isnan(at[j])) at[j] = exact(i, j0 + j);
  }
  if (self_ && i >= j0 && i < j1) at[i - j0] = 0;
}

template <class U, class Buffer>
void DiagPairs::rows_in_passes(std::int64_t lo, std::int64_t hi, U* out, int threads,
                               std::int64_t pass_bytes, Buffer&& buffer) const {
  const std::int64_t rows = hi - lo, m = m_, d = d_;
  // Split rows over the workers; with fewer rows than workers, split columns instead, in whole
  // panels of the packed q.
  const std::int64_t panel = diag_panel_columns(kernel_.tile.nr);
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
                   diag_quadratic_loops_packed(kernel_, mu_.data() + r0 * d, v_.data() + r0 * d,
                                               r1 - r0, q_packed_.data(), m, j0, j1, d, q, ldq);
                   for (std::int64_t i = r0; i < r1; ++i) {
                     double* row = q + (i - r0) * ldq;  // entry j0 of row i
                     finish_row(i, j0, j1, row);
                     if constexpr (!std::is_same_v<U, double>) {
                       std::transform(row, row + (j1 - j0), target + (i - r0) * m,
                                      [](double x) { return static_cast<U>(x); });
                     }
                   }
                 }
               });
}

void DiagPairs::block(std::int64_t lo, std::int64_t hi, double* out, int threads) const {
  rows_in_passes(lo, hi, out, threads, kDiagPassBytes, [](int) { return nullptr; });
}

void DiagPairs::block(std::int64_t lo, std::int64_t hi, float* out, int threads) const {
  const std::int64_t per_worker = float_buffer_values(m_);
  std::vector<double> buffers(static_cast<std::size_t>(threads * per_worker));
  rows_in_passes(lo, hi, out, threads, kDiagFloatPassBytes,
                 [&](int w) { return buffers.data() + w * per_worker; });
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
