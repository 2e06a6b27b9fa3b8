#include "cpu/pair/prepare.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/common/diag_terms.hpp"
#include "cpu/common/parallel.hpp"
#include "cpu/pair/linalg.hpp"
#include "gausskl/families.hpp"

namespace gausskl::cpu {
namespace {

// Q, L and log|I + V^T V| for V = B^{-1} U (see pair/layout.hpp). Both factorizations are
// Householder QRs: forming V^T V would square the condition number, and a factor much larger
// than the diagonal (|V|^2 ~ 1e10) would lose every digit of the small directions.
void prepare_low_rank_terms(const Layout& lay, double* slot, double* scratch) {
  const std::int64_t d = lay.d, r = lay.r, k = lay.k;
  const double* inv_b = slot + lay.inv;
  const double* u = slot + lay.factor;
  double* v = scratch;                  // [d*r], then its QR
  double* stacked = v + d * r;          // [(r+k)*k]: [R^T; I_k], then its QR
  double* tau = stacked + (r + k) * k;  // [r]
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t c = 0; c < r; ++c)
      v[i * r + c] = u[i * r + c] * inv_b[i];
  }
  householder_qr(v, d, r, tau);
  householder_q(v, d, r, tau, slot + lay.basis);
  // R is k x r (upper trapezoidal); [R^T; I_k] = Q3 R3 gives R3^T R3 = R R^T + I, so L = R3^T.
  for (std::int64_t c = 0; c < r; ++c) {
    for (std::int64_t j = 0; j < k; ++j)
      stacked[c * k + j] = j <= c ? v[j * r + c] : 0.0;
  }
  for (std::int64_t i = 0; i < k; ++i) {
    for (std::int64_t j = 0; j < k; ++j)
      stacked[(r + i) * k + j] = i == j ? 1.0 : 0.0;
  }
  householder_qr(stacked, r + k, k, tau);
  double* l = slot + lay.chol_c;
  double logdet = 0;
  for (std::int64_t i = 0; i < k; ++i) {
    for (std::int64_t j = 0; j < k; ++j)
      l[i * k + j] = j <= i ? stacked[j * k + i] : 0.0;
    logdet += 2 * std::log(std::abs(l[i * k + i]));
  }
  slot[lay.logdet_c] = logdet;
}

// B^{-1} and sum_{i>k} (B^{-1})_{ik}^2 for a triangular base.
void prepare_inverse(const Layout& lay, double* slot) {
  const std::int64_t d = lay.d;
  double* inv = slot + lay.inv;
  invert_lower(slot + lay.base, d, inv);
  double* tail = slot + lay.inv_tail;
  for (std::int64_t k = 0; k < d; ++k) {
    double s = 0;
    for (std::int64_t i = k + 1; i < d; ++i)
      s += inv[i * d + k] * inv[i * d + k];
    tail[k] = s;
  }
}

template <class T>
void copy_mean(const View<T, 2>& mean, std::int64_t n, double* out) {
  for (std::int64_t h = 0; h < mean.shape[1]; ++h)
    out[h] = mean(n, h);
}

template <class T>
void prepare_family(const DiagGaussians<T>& g, std::int64_t n, const Layout& lay, double* slot,
                    double*, const Factoring&, FactorFailure&) {
  copy_mean(g.mean, n, slot + lay.mean);
  for (std::int64_t h = 0; h < lay.d; ++h) {
    diag_terms(g.param, g.scale(n, h), slot + lay.base + h, slot + lay.inv + h,
               slot + lay.log_diag + h);
  }
}

template <class T>
void prepare_family(const LowRankGaussians<T>& g, std::int64_t n, const Layout& lay, double* slot,
                    double* scratch, const Factoring&, FactorFailure&) {
  copy_mean(g.mean, n, slot + lay.mean);
  for (std::int64_t h = 0; h < lay.d; ++h) {
    diag_terms(DiagParam::var, g.cov_diag(n, h), slot + lay.base + h, slot + lay.inv + h,
               slot + lay.log_diag + h);
    if (lay.r > 0) slot[lay.var + h] = g.cov_diag(n, h);
    for (std::int64_t k = 0; k < lay.r; ++k)
      slot[lay.factor + h * lay.r + k] = g.cov_factor(n, h, k);
  }
  if (lay.r > 0) prepare_low_rank_terms(lay, slot, scratch);
}

// Precision P: factor the reversed matrix J P J = M M^T (J reverses the order), so that
// P = U U^T with U = J M J upper triangular and Sigma = P^{-1} = U^{-T} U^{-1}; the lower
// triangular J M^{-T} J is then Sigma's Cholesky factor, without ever forming Sigma.
template <class T>
bool factor_precision(const View<T, 3>& s, std::int64_t n, std::int64_t d, double* base,
                      double* scratch, double add, FactorFailure& fail) {
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j <= i; ++j)
      scratch[i * d + j] = s(n, d - 1 - i, d - 1 - j) + (i == j ? add : 0.0);
  }
  double pivot_value = 0;
  const std::int64_t bad = cholesky_lower(scratch, d, &pivot_value);
  if (bad >= 0) {
    fail = {n, d - 1 - bad, pivot_value};
    return false;
  }
  invert_lower(scratch, d, base);  // base temporarily holds M^{-1}
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j <= i; ++j)
      scratch[i * d + j] = base[(d - 1 - j) * d + (d - 1 - i)];
  }
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j < d; ++j)
      base[i * d + j] = j <= i ? scratch[i * d + j] : 0;
  }
  return true;
}

// Cholesky of the lower triangle of a covariance, plus `add` on its diagonal, into base.
template <class T>
bool factor_covariance(const View<T, 3>& s, std::int64_t n, std::int64_t d, double* base,
                       double add, FactorFailure& fail) {
  for (std::int64_t i = 0; i < d; ++i) {
    for (std::int64_t j = 0; j < d; ++j)
      base[i * d + j] = j <= i ? s(n, i, j) + (i == j ? add : 0.0) : 0.0;
  }
  double pivot_value = 0;
  const std::int64_t bad = cholesky_lower(base, d, &pivot_value);
  if (bad >= 0) fail = {n, bad, pivot_value};
  return bad < 0;
}

template <class T>
void prepare_family(const FullGaussians<T>& g, std::int64_t n, const Layout& lay, double* slot,
                    double* scratch, const Factoring& factoring, FactorFailure& fail) {
  const std::int64_t d = lay.d;
  copy_mean(g.mean, n, slot + lay.mean);
  double* base = slot + lay.base;
  if (g.param == FullParam::scale_tril) {
    const std::int64_t stride = g.scale.strides[2];
    for (std::int64_t i = 0; i < d; ++i) {
      const T* row = &g.scale(n, i, 0);
      double* out = base + i * d;
      for (std::int64_t j = 0; j <= i; ++j)
        out[j] = row[j * stride];
      std::fill(out + i + 1, out + d, 0.0);
    }
  } else if (g.param == FullParam::packed_scale_tril) {
    // Row i of L is packed entries i (i + 1) / 2 .. i (i + 1) / 2 + i. With log_diagonal the
    // diagonal's logs are the inputs themselves: kept exact, not log(exp(x)).
    const std::int64_t stride = g.packed.strides[1];
    for (std::int64_t i = 0; i < d; ++i) {
      const T* row = &g.packed(n, i * (i + 1) / 2);
      double* out = base + i * d;
      for (std::int64_t j = 0; j <= i; ++j)
        out[j] = row[j * stride];
      std::fill(out + i + 1, out + d, 0.0);
      if (g.log_diagonal) {
        slot[lay.log_diag + i] = out[i];
        out[i] = std::exp(out[i]);
      }
    }
  } else {
    auto factor = [&](double add) {
      return g.param == FullParam::covariance
                 ? factor_covariance(g.scale, n, d, base, add, fail)
                 : factor_precision(g.scale, n, d, base, scratch, add, fail);
    };
    // The jitter is a second attempt only: matrices that factor as given stay as given.
    if (!factor(0.0)) {
      if (!(factoring.jitter > 0) || !factor(factoring.jitter)) return;
      fail = {};
      if (factoring.jittered) factoring.jittered->fetch_add(1, std::memory_order_relaxed);
    }
  }
  const bool logs_given = g.param == FullParam::packed_scale_tril && g.log_diagonal;
  for (std::int64_t k = 0; k < d && !logs_given; ++k)
    slot[lay.log_diag + k] = std::log(base[k * d + k]);
  if (lay.with_inverse) prepare_inverse(lay, slot);
}

}  // namespace

template <class T>
Layout layout_for(const Gaussians<T>& g, bool with_inverse) {
  const BatchDescription family = describe(g);
  return Layout(g.d(), family.rank, family.dense, with_inverse);
}

template <class T>
Layout q_layout_for(const Gaussians<T>& p, const Gaussians<T>& q) {
  return layout_for(q, !describe(p).dense);
}

template <class T>
FactorFailure prepare_one(const Gaussians<T>& g, std::int64_t n, const Layout& layout, double* slot,
                          double* scratch, const Factoring& factoring) {
  FactorFailure fail;
  std::visit(
      [&](const auto& family) {
        prepare_family(family, n, layout, slot, scratch, factoring, fail);
      },
      g.variant());
  return fail;
}

template <class T>
FactorFailure prepare_range(const Gaussians<T>& g, std::int64_t begin, std::int64_t end,
                            PreparedBatch& out, int threads, const Factoring& factoring) {
  const Layout& lay = out.layout();
  const std::int64_t scratch_size = prepare_scratch_size(lay);
  const int workers = std::max<int>(1, std::min<std::int64_t>(threads, end - begin));
  std::vector<double> scratch(static_cast<std::size_t>(workers * scratch_size));
  std::vector<FactorFailure> failures(static_cast<std::size_t>(workers));
  parallel_for(end - begin, workers, [&](int w, std::int64_t lo, std::int64_t hi) {
    FactorFailure& my_fail = failures[static_cast<std::size_t>(w)];
    for (std::int64_t k = lo; k < hi && my_fail.index < 0; ++k) {
      my_fail =
          prepare_one(g, begin + k, lay, out.slot(k), scratch.data() + w * scratch_size, factoring);
    }
  });
  // Workers own increasing index ranges and stop at their first failure, so the first
  // failure found is the lowest index.
  for (const FactorFailure& f : failures) {
    if (f.index >= 0) return f;
  }
  return {};
}

PreparedBatch standard_normal(std::int64_t d) {
  PreparedBatch batch(Layout(d, 0, false, false), 1);
  const Layout& lay = batch.layout();
  double* slot = batch.slot(0);
  for (std::int64_t h = 0; h < d; ++h) {
    slot[lay.mean + h] = 0;
    slot[lay.base + h] = 1;
    slot[lay.inv + h] = 1;
    slot[lay.log_diag + h] = 0;
  }
  return batch;
}

#define GAUSSKL_INSTANTIATE(T)                                                                     \
  template Layout layout_for<T>(const Gaussians<T>&, bool);                                        \
  template Layout q_layout_for<T>(const Gaussians<T>&, const Gaussians<T>&);                       \
  template FactorFailure prepare_one<T>(const Gaussians<T>&, std::int64_t, const Layout&, double*, \
                                        double*, const Factoring&);                                \
  template FactorFailure prepare_range<T>(const Gaussians<T>&, std::int64_t, std::int64_t,         \
                                          PreparedBatch&, int, const Factoring&);
GAUSSKL_INSTANTIATE(float)
GAUSSKL_INSTANTIATE(double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
