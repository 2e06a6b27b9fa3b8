#include "cpu/divergence/diag.hpp"

#include <cmath>

#include "cpu/common/diag_terms.hpp"
#include "cpu/divergence/diag_simd.hpp"
#include "cpu/divergence/scalar.hpp"

namespace gausskl::cpu {
namespace {

struct Scale {
  double sigma, inv, log;  // sigma, 1 / sigma, log sigma
};

Scale scale_of(DiagParam param, double x) {
  Scale s{0, 0, 0};
  diag_terms(param, x, &s.sigma, &s.inv, &s.log);
  return s;
}

// sigma_1 - sigma_2, exact to a few ulps of itself when both sides have the same
// parameterization (near-duplicates keep their relative accuracy): the inputs' own difference,
// or a form of it without a difference of rounded square roots; else the rounded sigmas'.
double sigma_difference(DiagParam pp, double x1, const Scale& s1, DiagParam pq, double x2,
                        const Scale& s2) {
  if (pp != pq) return s1.sigma - s2.sigma;
  switch (pp) {
    case DiagParam::stddev:
      return x1 - x2;
    case DiagParam::var:  // (v1 - v2) / (sigma_1 + sigma_2)
      return (x1 - x2) / (s1.sigma + s2.sigma);
    case DiagParam::logvar:  // e^{(l1 + l2) / 4} 2 sinh((l1 - l2) / 4): odd in the swap, bitwise
      return std::exp(0.25 * (x1 + x2)) * 2 * std::sinh(0.25 * (x1 - x2));
    case DiagParam::precision:  // (P2 - P1) sigma_1 sigma_2 / (sqrt P1 + sqrt P2)
      return (x2 - x1) * (s1.sigma * s2.sigma) / (s1.inv + s2.inv);
  }
  return s1.sigma - s2.sigma;
}

// log(sigma_1 / sigma_2), exact to a few ulps of itself when both sides have the same
// parameterization and are close: 2 atanh((a - b) / (a + b)) = log(a / b) of the inputs' own
// difference, not a difference of two rounded logs (which, for sigma ~ 1e3 and a ratio
// 1 + 1e-8, keeps only 7 digits). atanh is ill-conditioned near 1, so beyond a ratio of 3
// (|x| >= 1/2), where the logs' difference is as large as the logs, that difference. Odd in the
// swap of p and q, bitwise (|x| is symmetric).
double log_ratio(DiagParam pp, double x1, const Scale& s1, DiagParam pq, double x2,
                 const Scale& s2) {
  if (pp == pq && pp != DiagParam::logvar) {
    const double x = (x1 - x2) / (x1 + x2);
    if (std::abs(x) < 0.5) {
      switch (pp) {
        case DiagParam::stddev:
          return 2 * std::atanh(x);
        case DiagParam::var:
          return std::atanh(x);
        default:  // precision
          return -std::atanh(x);
      }
    }
  }
  if (pp == pq && pp == DiagParam::logvar) return 0.5 * (x1 - x2);
  return s1.log - s2.log;
}

}  // namespace

template <class T>
std::int64_t divergence_diag_rows_ref(const DiagGaussians<T>& p, const DiagGaussians<T>& q,
                                      const DivergenceConfig& config, std::int64_t lo,
                                      std::int64_t hi, double* out, std::int64_t* dim,
                                      double* value) noexcept {
  const std::int64_t d = p.mean.shape[1];
  const bool p_once = p.mean.shape[0] == 1, q_once = q.mean.shape[0] == 1;
  const Divergence kind = config.kind;
  const double alpha = config.alpha, beta = 1 - alpha;
  for (std::int64_t i = lo; i < hi; ++i) {
    const std::int64_t ip = p_once ? 0 : i, iq = q_once ? 0 : i;
    double sum = 0;
    for (std::int64_t h = 0; h < d; ++h) {
      const double x1 = p.scale(ip, h), x2 = q.scale(iq, h);
      const Scale s1 = scale_of(p.param, x1), s2 = scale_of(q.param, x2);
      const double delta = static_cast<double>(p.mean(ip, h)) - static_cast<double>(q.mean(iq, h));
      const double t = log_ratio(p.param, x1, s1, q.param, x2, s2);  // log(sigma_1 / sigma_2)
      switch (kind) {
        case Divergence::kl: {  // not dispatched here (the KL kernels), kept for completeness
          const double z = delta * s2.inv;
          sum += 0.5 * (z * z + std::expm1(2 * t) - 2 * t);
          break;
        }
        case Divergence::jeffreys: {
          const double z1 = delta * s1.inv, z2 = delta * s2.inv;
          sum += 0.5 * (z1 * z1 + z2 * z2 + jeffreys_variance_term(2 * t));
          break;
        }
        case Divergence::bhattacharyya:
        case Divergence::hellinger: {
          // 1/4 delta^2 / (v1 + v2) + 1/2 log((v1 + v2) / (2 sigma_1 sigma_2)), the latter
          // = 1/2 log cosh(log(sigma_1 / sigma_2)). The sum of variances by the larger one
          // factored out, so that neither overflows.
          const double big = s1.sigma > s2.sigma ? s1.sigma : s2.sigma;
          const double a = s1.sigma / big, b = s2.sigma / big, z = delta / big;
          sum += 0.25 * z * z / (a * a + b * b) + 0.5 * log_cosh(t);
          break;
        }
        case Divergence::wasserstein2: {
          const double ds = sigma_difference(p.param, x1, s1, q.param, x2, s2);
          sum += delta * delta + ds * ds;
          break;
        }
        case Divergence::renyi: {
          // Mixed variance over v_q: alpha + beta v_p / v_q = 1 + beta mu, mu = v_p / v_q - 1.
          const double r = 2 * t, mu = std::expm1(r);
          const double mixed = 1 + beta * mu;
          if (!(mixed > 0)) {
            *dim = h;
            *value = mixed * s2.sigma * s2.sigma;  // the mixed variance, the pivot of its factor
            return i;
          }
          const double z = delta * s2.inv;
          sum += 0.5 * alpha * z * z / mixed + renyi_variance_term(mu, r, beta);
          break;
        }
      }
    }
    sum = divergence_of_sum(sum);
    out[i - lo] = kind == Divergence::hellinger ? -std::expm1(-sum) : sum;
  }
  return -1;
}

template <class T>
std::int64_t divergence_diag_rows(const DiagGaussians<T>& p, const DiagGaussians<T>& q,
                                  const DivergenceConfig& config, std::int64_t lo, std::int64_t hi,
                                  double* out, std::int64_t* dim, double* value) noexcept {
  if (config.kind == Divergence::kl)
    return divergence_diag_rows_ref(p, q, config, lo, hi, out, dim, value);
  for (std::int64_t from = lo; from < hi;) {
    const std::int64_t left =
        divergence_diag_rows_simd(p, q, config.kind, config.alpha, from, hi, out + (from - lo));
    if (left < 0) return -1;
    // A row the kernel leaves to the scalar form: its failure, or its value.
    if (divergence_diag_rows_ref(p, q, config, left, left + 1, out + (left - lo), dim, value) >= 0)
      return left;
    from = left + 1;
  }
  return -1;
}

#define GAUSSKL_INSTANTIATE(name, T)                                                          \
  template std::int64_t name<T>(const DiagGaussians<T>&, const DiagGaussians<T>&,             \
                                const DivergenceConfig&, std::int64_t, std::int64_t, double*, \
                                std::int64_t*, double*) noexcept;
GAUSSKL_INSTANTIATE(divergence_diag_rows, float)
GAUSSKL_INSTANTIATE(divergence_diag_rows, double)
GAUSSKL_INSTANTIATE(divergence_diag_rows_ref, float)
GAUSSKL_INSTANTIATE(divergence_diag_rows_ref, double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
