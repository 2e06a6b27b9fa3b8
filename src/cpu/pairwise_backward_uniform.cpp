#include "cpu/pairwise_backward_uniform.hpp"

#include <vector>

namespace gausskl::cpu {

template <class T>
bool uniform_grad(const T* grad, std::int64_t n, std::int64_t m, double& g) noexcept {
  if (n <= 0 || m <= 0) return false;
  const bool square = n == m && n > 1;
  const T value = square ? grad[1] : grad[0];
  for (std::int64_t i = 0; i < n; ++i) {
    const T* row = grad + i * m;
    for (std::int64_t j = 0; j < m; ++j) {
      if (row[j] != value && !(square && i == j)) return false;
    }
  }
  g = static_cast<double>(value);
  return true;
}

namespace {

// Per-dimension sums over one side's rows, in double.
struct SideSums {
  std::vector<double> lam, lam_mean;      // q side: sum lam, sum lam nu
  std::vector<double> mean, spread, var;  // p side: mean of mu, sum (mu - mean)^2, sum v
};

SideSums sums_of(const DiagSide& p, const DiagSide& q) {
  const std::int64_t d = p.d;
  SideSums s;
  s.lam.assign(d, 0.0);
  s.lam_mean.assign(d, 0.0);
  s.mean.assign(d, 0.0);
  s.spread.assign(d, 0.0);
  s.var.assign(d, 0.0);
  for (std::int64_t j = 0; j < q.n; ++j) {
    const double* lam = q.lam.data() + j * d;
    const double* nu = q.mean.data() + j * d;
    for (std::int64_t h = 0; h < d; ++h) {
      s.lam[h] += lam[h];
      s.lam_mean[h] += lam[h] * nu[h];
    }
  }
  for (std::int64_t i = 0; i < p.n; ++i) {
    const double* mu = p.mean.data() + i * d;
    const double* v = p.var.data() + i * d;
    for (std::int64_t h = 0; h < d; ++h) {
      s.mean[h] += mu[h];
      s.var[h] += v[h];
    }
  }
  for (std::int64_t h = 0; h < d; ++h)
    s.mean[h] /= static_cast<double>(p.n);
  for (std::int64_t i = 0; i < p.n; ++i) {
    const double* mu = p.mean.data() + i * d;
    for (std::int64_t h = 0; h < d; ++h)
      s.spread[h] += (mu[h] - s.mean[h]) * (mu[h] - s.mean[h]);
  }
  // lam_mean becomes the weighted mean a: mu - a then has no cancellation beyond its own.
  for (std::int64_t h = 0; h < d; ++h)
    s.lam_mean[h] /= s.lam[h];
  return s;
}

}  // namespace

template <class T>
void pairwise_backward_uniform(const DiagSide& p, const DiagSide* q_or_null, double g,
                               const T* grad, const Gradients<T>& dp, const Gradients<T>& dq) {
  const bool self = q_or_null == nullptr;
  const DiagSide& q = self ? p : *q_or_null;
  const std::int64_t n = p.n, m = q.n, d = p.d;
  const SideSums s = sums_of(p, q);
  const bool want_p = !dp.mean.empty() || !dp.scale.empty();
  const bool want_q = !self && (!dq.mean.empty() || !dq.scale.empty());
  // With q = p the diagonal pairs KL(p_i || p_i) = 0 have zero gradient: grad_ii never matters.
  const bool diagonal = !self && n == m && n > 1;
  const double half = 0.5 * g;
  std::vector<double> gmu(d), gvar(d);
  // The p side of row i (self: plus the q side of the same row).
  const auto p_row = [&](std::int64_t i) {
    const double* mu = p.mean.data() + i * d;
    const double* v = p.var.data() + i * d;
    for (std::int64_t h = 0; h < d; ++h) {
      gmu[h] = g * s.lam[h] * (mu[h] - s.lam_mean[h]);
      gvar[h] = half * (s.lam[h] - static_cast<double>(m) / v[h]);
    }
  };
  const auto q_row = [&](std::int64_t j, bool add) {
    const double* nu = q.mean.data() + j * d;
    const double* lam = q.lam.data() + j * d;
    const auto big_n = static_cast<double>(n);
    for (std::int64_t h = 0; h < d; ++h) {
      const double dev = nu[h] - s.mean[h];
      const double mean_term = g * big_n * lam[h] * dev;
      const double var_term =
          half * lam[h] * (big_n - lam[h] * (s.var[h] + s.spread[h] + big_n * dev * dev));
      gmu[h] = add ? gmu[h] + mean_term : mean_term;
      gvar[h] = add ? gvar[h] + var_term : var_term;
    }
  };
  // grad_ii - g times the gradient of KL(p_i || q_i) with respect to p_i (or q_i).
  const auto diagonal_pair = [&](std::int64_t i, bool p_side) {
    const double delta = static_cast<double>(grad[i * m + i]) - g;
    if (delta == 0) return;
    const double* mu = p.mean.data() + i * d;
    const double* v = p.var.data() + i * d;
    const double* nu = q.mean.data() + i * d;
    const double* lam = q.lam.data() + i * d;
    for (std::int64_t h = 0; h < d; ++h) {
      const double diff = mu[h] - nu[h];
      if (p_side) {
        gmu[h] += delta * lam[h] * diff;
        gvar[h] += 0.5 * delta * (lam[h] - 1.0 / v[h]);
      } else {
        gmu[h] -= delta * lam[h] * diff;
        gvar[h] += 0.5 * delta * lam[h] * (1.0 - lam[h] * (v[h] + diff * diff));
      }
    }
  };
  if (want_p || self) {
    for (std::int64_t i = 0; i < n; ++i) {
      p_row(i);
      if (self) q_row(i, true);
      if (diagonal) diagonal_pair(i, true);
      store_gradients(p, i, 0, d, gmu.data(), gvar.data(), dp);
    }
  }
  if (want_q) {
    for (std::int64_t j = 0; j < m; ++j) {
      q_row(j, false);
      if (diagonal) diagonal_pair(j, false);
      store_gradients(q, j, 0, d, gmu.data(), gvar.data(), dq);
    }
  }
}

#define GAUSSKL_INSTANTIATE(T)                                                                \
  template bool uniform_grad(const T*, std::int64_t, std::int64_t, double&) noexcept;         \
  template void pairwise_backward_uniform(const DiagSide&, const DiagSide*, double, const T*, \
                                          const Gradients<T>&, const Gradients<T>&);
GAUSSKL_INSTANTIATE(float)
GAUSSKL_INSTANTIATE(double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
