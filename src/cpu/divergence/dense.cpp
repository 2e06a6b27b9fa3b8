#include "cpu/divergence/dense.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/common/diag_terms.hpp"
#include "cpu/divergence/jacobi.hpp"
#include "cpu/divergence/scalar.hpp"
#include "cpu/divergence/w2_trace.hpp"
#include "cpu/pair/linalg.hpp"

namespace gausskl::cpu {
namespace {

// Below this fraction of the magnitude of its log-determinants, a pair's log term has lost more
// than 6 digits to cancellation (a near-duplicate): the spectral form computes it instead.
constexpr double kNearDuplicate = 1e-6;

// wasserstein2: up to this d every pair by the polar form (exact and as cheap as OpenBLAS at
// these sizes). Up to kW2PolarMaxD, where the polar form is cheap, the trace form's value is
// kept if its error bounds are within kW2Exact of it (the error bar of every kind), else the polar
// form computes it; above, a pair whose square roots may have lost more than kW2Roots goes by the
// singular values.
constexpr std::int64_t kW2PolarAlways = 8;
constexpr std::int64_t kW2PolarMaxD = 128;
constexpr double kW2Exact = 1e-12, kW2Roots = 1e-10;

// A slot's flags (its last double).
constexpr int kFull = 1, kSingular = 2;

// A slot's parts: mean [d], L [d*d], Sigma [d*d], log det, flags.
struct Slot {
  double *mean, *l, *cov, *logdet, *flags;
  Slot(std::int64_t d, double* s)
      : mean(s),
        l(s + d),
        cov(s + d + d * d),
        logdet(s + d + 2 * d * d),
        flags(s + d + 2 * d * d + 1) {}
};

// Sigma = L L^T, both triangles.
void cov_from_factor(const double* l, std::int64_t d, double* cov) {
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k <= j; ++k)
        s += l[i * d + k] * l[j * d + k];
      cov[i * d + j] = cov[j * d + i] = s;
    }
  }
}

double squared_norm(const double* x, std::int64_t n) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i)
    s += x[i] * x[i];
  return s;
}

template <class T>
void prepare_family(const DiagGaussians<T>& g, std::int64_t n, const Slot& s, std::int64_t d,
                    double*, const Factoring&, FactorFailure&, bool, int) {
  *s.flags = 0;
  std::fill(s.l, s.l + d * d, 0.0);
  std::fill(s.cov, s.cov + d * d, 0.0);
  double logdet = 0;
  for (std::int64_t h = 0; h < d; ++h) {
    double b = 0, inv = 0, log_b = 0;
    diag_terms(g.param, g.scale(n, h), &b, &inv, &log_b);
    s.mean[h] = g.mean(n, h);
    s.l[h * d + h] = b;
    s.cov[h * d + h] = g.param == DiagParam::var ? static_cast<double>(g.scale(n, h)) : b * b;
    logdet += 2 * log_b;
  }
  *s.logdet = logdet;
}

template <class T>
void prepare_family(const FullGaussians<T>& g, std::int64_t n, const Slot& s, std::int64_t d,
                    double* scratch, const Factoring& factoring, FactorFailure& fail, bool w2,
                    int blas_threads) {
  *s.flags = kFull;
  if (w2 && g.param == FullParam::covariance && factoring.jitter == 0) {
    // wasserstein2: OpenBLAS's Cholesky, and a singular covariance accepted (w2_trace.hpp).
    for (std::int64_t i = 0; i < d; ++i) {
      s.mean[i] = g.mean(n, i);
      for (std::int64_t j = 0; j <= i; ++j)
        s.cov[i * d + j] = s.cov[j * d + i] = g.scale(n, i, j);
    }
    bool singular = false;
    const double eps = std::numeric_limits<T>::epsilon();
    fail = w2_factor(s.cov, d, eps, s.l, &singular, scratch, blas_threads);
    if (fail.indefinite) {
      fail.index = n;
      return;
    }
    double logdet = 0;
    for (std::int64_t k = 0; k < d && !singular; ++k)
      logdet += 2 * std::log(s.l[k * d + k]);
    *s.logdet = singular ? -HUGE_VAL : logdet;
    if (singular) *s.flags = kFull | kSingular;
    return;
  }
  // The library's own preparation (every parameterization, the jitter), then L's copy.
  const Layout lay(d, 0, true, false);
  double* slot = scratch;
  fail = prepare_one(Gaussians<T>(g), n, lay, slot, scratch + lay.size, factoring);
  if (fail.index >= 0) return;
  const Prepared prep = lay.view(slot);
  std::copy(prep.mean, prep.mean + d, s.mean);
  std::copy(prep.base, prep.base + d * d, s.l);
  double logdet = 0;
  for (std::int64_t k = 0; k < d; ++k)
    logdet += 2 * prep.log_diag[k];
  *s.logdet = logdet;
  if (g.param == FullParam::covariance && factoring.jitter == 0) {  // Sigma as given
    for (std::int64_t i = 0; i < d; ++i) {
      for (std::int64_t j = 0; j <= i; ++j)
        s.cov[i * d + j] = s.cov[j * d + i] = g.scale(n, i, j);
    }
  } else {
    cov_from_factor(s.l, d, s.cov);
  }
}

template <class T>
void prepare_family(const LowRankGaussians<T>& g, std::int64_t n, const Slot& s, std::int64_t d,
                    double*, const Factoring&, FactorFailure& fail, bool, int) {
  *s.flags = 0;
  const std::int64_t r = g.cov_factor.shape[2];
  for (std::int64_t i = 0; i < d; ++i) {
    s.mean[i] = g.mean(n, i);
    for (std::int64_t j = 0; j <= i; ++j) {
      double v = i == j ? static_cast<double>(g.cov_diag(n, i)) : 0.0;
      for (std::int64_t k = 0; k < r; ++k)
        v += static_cast<double>(g.cov_factor(n, i, k)) * g.cov_factor(n, j, k);
      s.cov[i * d + j] = s.cov[j * d + i] = v;
      s.l[i * d + j] = v;
    }
  }
  double pivot = 0;
  const std::int64_t bad = cholesky_lower(s.l, d, &pivot);
  if (bad >= 0) {
    fail = {n, bad, pivot};
    return;
  }
  double logdet = 0;
  for (std::int64_t k = 0; k < d; ++k)
    logdet += 2 * std::log(s.l[k * d + k]);
  *s.logdet = logdet;
}

// The mixed covariance a Sigma_1 + b Sigma_2 (lower triangle) into m, factored; its log det into
// *logdet and |L_m^-1 delta|^2 into *quad. Returns the failing pivot, or -1.
std::int64_t factor_mixed(const DenseGaussian& p, const DenseGaussian& q, double a, double b,
                          const double* delta, double* m, double* y, double* logdet, double* quad,
                          double* pivot) {
  const std::int64_t d = p.d;
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j <= i; ++j)
      m[i * d + j] = a * p.cov[i * d + j] + b * q.cov[i * d + j];
  }
  const std::int64_t bad = cholesky_lower(m, d, pivot);
  if (bad >= 0) return bad;
  double ld = 0;
  for (std::int64_t k = 0; k < d; ++k)
    ld += 2 * std::log(m[k * d + k]);
  *logdet = ld;
  std::copy(delta, delta + d, y);
  solve_lower(m, d, d, y);
  *quad = squared_norm(y, d);
  return -1;
}

// E = L_2^-1 Sigma_1 L_2^-T - I into e [d*d] (eigenvalues on its diagonal afterwards), the
// eigenvectors into v, and z = V^T L_2^-1 delta into z.
void spectrum(const DenseGaussian& p, const DenseGaussian& q, const double* delta, double* nmat,
              double* e, double* v, double* y, double* z) {
  const std::int64_t d = p.d;
  // N = L_2^-1 (L_1 - L_2), column by column (lower triangular).
  for (std::int64_t c = 0; c < d; ++c) {
    for (std::int64_t i = 0; i < d; ++i)
      y[i] = i >= c ? p.l[i * d + c] - q.l[i * d + c] : 0.0;
    solve_lower(q.l, d, d, y);
    for (std::int64_t i = 0; i < d; ++i)
      nmat[i * d + c] = y[i];
  }
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) {
      double s = nmat[i * d + j] + nmat[j * d + i];
      for (std::int64_t k = 0; k <= j; ++k)
        s += nmat[i * d + k] * nmat[j * d + k];
      e[i * d + j] = e[j * d + i] = s;
    }
  }
  jacobi_eigen(e, d, v);
  for (std::int64_t i = 0; i < d; ++i)
    y[i] = delta[i];
  solve_lower(q.l, d, d, y);
  for (std::int64_t k = 0; k < d; ++k) {
    double s = 0;
    for (std::int64_t i = 0; i < d; ++i)
      s += v[i * d + k] * y[i];
    z[k] = s;
  }
}

bool identical(const DenseGaussian& p, const DenseGaussian& q) {
  const std::int64_t d = p.d;
  return std::equal(p.mean, p.mean + d, q.mean) && std::equal(p.l, p.l + d * d, q.l);
}

double wasserstein2(const DenseGaussian& p, const DenseGaussian& q, const double* delta,
                    double* scratch) {
  const std::int64_t d = p.d;
  double* c = scratch;
  double* y = c + d * d;
  double* u = y + d * d;
  // C = L_2^T L_1.
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j < d; ++j) {
      double s = 0;
      for (std::int64_t k = std::max(i, j); k < d; ++k)
        s += q.l[k * d + i] * p.l[k * d + j];
      c[i * d + j] = s;
    }
  }
  polar_factor(c, y, u, d);
  double sum = squared_norm(delta, d);
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j < d; ++j) {
      double s = p.l[i * d + j];
      for (std::int64_t k = 0; k <= i; ++k)
        s -= q.l[i * d + k] * u[k * d + j];
      sum += s * s;
    }
  }
  return divergence_of_sum(sum);
}

}  // namespace

std::int64_t dense_prepare_scratch(std::int64_t d, bool w2) {
  const Layout lay(d, 0, true, false);
  const std::int64_t own = lay.size + prepare_scratch_size(lay);
  return w2 ? std::max(own, w2_factor_scratch(d)) : own;
}

template <class T>
FactorFailure dense_prepare(const Gaussians<T>& g, std::int64_t n, double* slot, double* scratch,
                            const Factoring& factoring, bool w2, int blas_threads) {
  FactorFailure fail;
  const std::int64_t d = g.d();
  const Slot s(d, slot);
  std::visit(
      [&](const auto& family) {
        prepare_family(family, n, s, d, scratch, factoring, fail, w2, blas_threads);
      },
      g.variant());
  return fail;
}

DenseGaussian dense_view(std::int64_t d, const double* slot) {
  DenseGaussian g;
  g.d = d;
  g.mean = slot;
  g.l = slot + d;
  g.cov = slot + d + d * d;
  g.logdet = slot[d + 2 * d * d];
  const int flags = static_cast<int>(slot[d + 2 * d * d + 1]);
  g.full = (flags & kFull) != 0;
  g.singular = (flags & kSingular) != 0;
  return g;
}

namespace {

// For a symmetric kind, whether (q, p) is the pair's canonical order (its distributions' numbers
// compared), so that swapping p and q gives the same bits.
bool swap_for_symmetry(const DenseGaussian& p, const DenseGaussian& q) {
  const std::int64_t d = p.d;
  if (!std::equal(p.mean, p.mean + d, q.mean)) {
    return std::lexicographical_compare(q.mean, q.mean + d, p.mean, p.mean + d);
  }
  return std::lexicographical_compare(q.l, q.l + d * d, p.l, p.l + d * d);
}

}  // namespace

double dense_pair(const DivergenceConfig& config, const DenseGaussian& p_in,
                  const DenseGaussian& q_in, double* scratch, FactorFailure& fail) noexcept {
  const std::int64_t d = p_in.d;
  const Divergence kind = config.kind;
  if (identical(p_in, q_in)) return 0;
  const bool swap = is_symmetric(kind) && swap_for_symmetry(p_in, q_in);
  const DenseGaussian& p = swap ? q_in : p_in;
  const DenseGaussian& q = swap ? p_in : q_in;
  double* m = scratch;    // [d*d]
  double* e = m + d * d;  // [d*d]
  double* v = e + d * d;  // [d*d]
  double* y = v + d * d;  // [d]
  double* delta = y + d;  // [d]
  for (std::int64_t i = 0; i < d; ++i)
    delta[i] = p.mean[i] - q.mean[i];
  if (kind == Divergence::wasserstein2) {
    const bool by_trace = p.singular || q.singular || (p.full && q.full && d > kW2PolarAlways);
    if (!by_trace) return wasserstein2(p, q, delta, scratch);
    const W2Terms t = w2_trace(p, q, delta, scratch, config.blas_threads);
    const double value = t.mean + t.trace;
    const bool small = d <= kW2PolarMaxD;
    if (t.trace >= 0 && (small ? t.root_error + t.cancel_error <= kW2Exact * value
                               : t.root_error <= kW2Roots * value)) {
      return divergence_of_sum(value);
    }
    if (small && !p.singular && !q.singular) return wasserstein2(p, q, delta, scratch);
    const double trace = w2_trace_svd(p, q, scratch, config.blas_threads);
    return divergence_of_sum(t.mean + (trace >= 0 ? trace : std::max(t.trace, 0.0)));
  }

  const bool renyi = kind == Divergence::renyi;
  const double alpha = config.alpha, beta = 1 - alpha;
  // The direct form: the mixed covariance factored.
  double logdet = 0, quad = 0, pivot = 0;
  const double a = renyi ? beta : 0.5, b = renyi ? alpha : 0.5;
  const std::int64_t bad = factor_mixed(p, q, a, b, delta, m, y, &logdet, &quad, &pivot);
  if (bad >= 0 && renyi) {
    fail.pivot = bad;
    fail.value = pivot;
    return -1;
  }
  double value = HUGE_VAL, log_part = 0, magnitude = 0;
  if (bad < 0) {
    if (renyi) {  // alpha/2 d^T S_a^-1 d + (log det S_a - beta log det S_1 - alpha log det S_2) / 2
                  // beta
      log_part = logdet - beta * p.logdet - alpha * q.logdet;
      magnitude = std::abs(logdet) + std::abs(beta * p.logdet) + std::abs(alpha * q.logdet);
      value = 0.5 * alpha * quad + log_part / (2 * beta);
    } else {  // 1/8 d^T S^-1 d + (log det S - (log det S_1 + log det S_2) / 2) / 2
      log_part = logdet - 0.5 * (p.logdet + q.logdet);
      magnitude = std::abs(logdet) + 0.5 * (std::abs(p.logdet) + std::abs(q.logdet));
      value = 0.125 * quad + 0.5 * log_part;
    }
  }
  if (bad >= 0 || !(std::abs(log_part) >= kNearDuplicate * magnitude)) {
    // The spectral form (near-duplicates).
    double* z = delta + d;  // [d], scratch's last
    double* nmat = m;
    spectrum(p, q, delta, nmat, e, v, y, z);
    double sum = 0;
    bool ok = true;
    for (std::int64_t k = 0; k < d && ok; ++k) {
      const double mu = e[k * d + k], z2 = z[k] * z[k];
      if (!(mu > -1)) {
        ok = false;
      } else if (renyi) {
        const double mixed = 1 + beta * mu;
        if (!(mixed > 0)) {
          ok = false;
        } else {
          sum += 0.5 * alpha * z2 / mixed + renyi_variance_term(mu, std::log1p(mu), beta);
        }
      } else {
        sum += 0.25 * z2 / (2 + mu) + 0.5 * log_cosh(0.5 * std::log1p(mu));
      }
    }
    if (ok) value = sum;
  }
  value = divergence_of_sum(value);
  return kind == Divergence::hellinger ? -std::expm1(-value) : value;
}

template FactorFailure dense_prepare<float>(const Gaussians<float>&, std::int64_t, double*, double*,
                                            const Factoring&, bool, int);
template FactorFailure dense_prepare<double>(const Gaussians<double>&, std::int64_t, double*,
                                             double*, const Factoring&, bool, int);

}  // namespace gausskl::cpu
