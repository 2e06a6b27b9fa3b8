#include "cpu/diag_pairs_backward/uniform.hpp"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "cpu/common/parallel.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {

template <class T>
bool uniform_grad(const T* grad, std::int64_t n, std::int64_t m, double& g) noexcept {
  if (n <= 0 || m <= 0) return false;
  const bool square = n == m && n > 1;
  const T value = square ? grad[1] : grad[0];
  // Counts of differing entries, over ranges without the diagonal: loops that vectorize, one
  // row at a time so that a grad that is not uniform costs about one row.
  const auto differing = [value](const T* x, std::int64_t count) {
    std::int64_t bad = 0;
    for (std::int64_t j = 0; j < count; ++j)
      bad += x[j] != value;
    return bad;
  };
  for (std::int64_t i = 0; i < n; ++i) {
    const T* row = grad + i * m;
    const std::int64_t bad =
        square ? differing(row, i) + differing(row + i + 1, m - i - 1) : differing(row, m);
    if (bad != 0) return false;
  }
  g = static_cast<double>(value);
  return true;
}

namespace {

// The closed forms on dimensions [h0, h0 + w): every formula is per dimension, so ranges of h
// are independent (and their values do not depend on how d is split). `buffer` holds 14 w.
template <class T>
void uniform_range(const CentredSides<T>& sides, double g, const T* grad, const Gradients<T>& dp,
                   const Gradients<T>& dq, std::int64_t h0, std::int64_t w,
                   double* buffer) noexcept {
  const bool self = sides.self;
  const std::int64_t n = sides.p_at_p.n(), m = sides.q_at_p.n(), d = sides.p_at_p.d();
  const bool want_p = !dp.mean.empty() || !dp.scale.empty();
  const bool want_q = !self && (!dq.mean.empty() || !dq.scale.empty());
  // With q = p the diagonal pairs KL(p_i || p_i) = 0 have zero gradient: grad_ii never matters.
  const bool diagonal = !self && n == m && n > 1 && grad != nullptr;
  std::fill(buffer, buffer + 5 * w, 0.0);
  // Per dimension: L, then a; the mean m, C and V of p's rows; then row buffers.
  double *lam_sum = buffer, *lam_mean = lam_sum + w, *mean = lam_mean + w;
  double *spread = mean + w, *var_sum = spread + w;
  double *mu = var_sum + w, *v = mu + w, *ilv = v + w, *dv = ilv + w;  // row of p
  double *nu = dv + w, *lam = nu + w, *dw = lam + w;                   // row of q
  double *gmu = dw + w, *gvar = gmu + w;

  for (std::int64_t j = 0; j < m; ++j) {
    sides.q_at_q.read(j, h0, w, nu, nullptr, lam, nullptr);
    for (std::int64_t h = 0; h < w; ++h) {
      lam_sum[h] += lam[h];
      lam_mean[h] += lam[h] * nu[h];
    }
  }
  for (std::int64_t h = 0; h < w; ++h)
    lam_mean[h] /= lam_sum[h];
  // p's means are centred at their mean, so sum mu^2 - N m^2 has no cancellation (m ~ 0).
  for (std::int64_t i = 0; i < n; ++i) {
    sides.p_at_p.read(i, h0, w, mu, v, nullptr, nullptr);
    for (std::int64_t h = 0; h < w; ++h) {
      mean[h] += mu[h];
      spread[h] += mu[h] * mu[h];
      var_sum[h] += v[h];
    }
  }
  const auto big_n = static_cast<double>(n), big_m = static_cast<double>(m);
  for (std::int64_t h = 0; h < w; ++h) {
    mean[h] /= big_n;
    spread[h] -= big_n * mean[h] * mean[h];
  }

  const double half = 0.5 * g;
  // The q side of a row whose nu, lam are read, stored (add false) or added to gmu, gvar; the
  // choice is a template argument so that each loop vectorizes.
  const auto q_terms = [&](auto add) {
    for (std::int64_t h = 0; h < w; ++h) {
      const double dev = nu[h] - mean[h];
      const double mean_term = g * big_n * lam[h] * dev;
      const double var_term =
          half * lam[h] * (big_n - lam[h] * (var_sum[h] + spread[h] + big_n * dev * dev));
      if constexpr (add) {
        gmu[h] += mean_term;
        gvar[h] += var_term;
      } else {
        gmu[h] = mean_term;
        gvar[h] = var_term;
      }
    }
  };
  // grad_ii - g times the gradient of KL(p_i || q_i) with respect to p_i or q_i (rows read).
  const auto diagonal_pair = [&](std::int64_t i, bool p_side) {
    const double delta = static_cast<double>(grad[i * m + i]) - g;
    if (delta == 0) return;
    for (std::int64_t h = 0; h < w; ++h) {
      const double diff = mu[h] - nu[h];
      if (p_side) {
        gmu[h] += delta * lam[h] * diff;
        gvar[h] += 0.5 * delta * (lam[h] - ilv[h]);
      } else {
        gmu[h] -= delta * lam[h] * diff;
        gvar[h] += 0.5 * delta * lam[h] * (1.0 - lam[h] * (v[h] + diff * diff));
      }
    }
  };
  if (want_p) {
    for (std::int64_t i = 0; i < n; ++i) {
      sides.p_at_q.read(i, h0, w, mu, v, ilv, dv);
      for (std::int64_t h = 0; h < w; ++h) {
        gmu[h] = g * lam_sum[h] * (mu[h] - lam_mean[h]);
        gvar[h] = half * (lam_sum[h] - big_m * ilv[h]);
      }
      if (self) {
        std::copy(mu, mu + w, nu);
        std::copy(ilv, ilv + w, lam);
        q_terms(std::true_type());
      }
      if (diagonal) {
        sides.q_at_q.read(i, h0, w, nu, nullptr, lam, nullptr);
        diagonal_pair(i, true);
      }
      store_gradients(dp, d, i, h0, w, gmu, gvar, dv);
    }
  }
  if (want_q) {
    for (std::int64_t j = 0; j < m; ++j) {
      sides.q_at_p.read(j, h0, w, nu, nullptr, lam, dw);
      q_terms(std::false_type());
      if (diagonal) {
        sides.p_at_p.read(j, h0, w, mu, v, ilv, nullptr);
        diagonal_pair(j, false);
      }
      store_gradients(dq, d, j, h0, w, gmu, gvar, dw);
    }
  }
}

}  // namespace

template <class T>
void pairwise_backward_uniform(const CentredSides<T>& sides, double g, const T* grad,
                               const Gradients<T>& dp, const Gradients<T>& dq, int workers) {
  const std::int64_t d = sides.p_at_p.d();
  // Each worker takes a range of dimensions, in pieces of kBackwardChunkH.
  const std::int64_t piece = std::min(d, kBackwardChunkH);
  std::vector<double> buffer(static_cast<std::size_t>(14 * piece * workers));
  parallel_for(d, workers, [&](int worker, std::int64_t begin, std::int64_t end) {
    for (std::int64_t h0 = begin; h0 < end; h0 += piece) {
      uniform_range(sides, g, grad, dp, dq, h0, std::min(piece, end - h0),
                    buffer.data() + 14 * piece * worker);
    }
  });
}

#define GAUSSKL_INSTANTIATE(T)                                                        \
  template bool uniform_grad(const T*, std::int64_t, std::int64_t, double&) noexcept; \
  template void pairwise_backward_uniform(const CentredSides<T>&, double, const T*,   \
                                          const Gradients<T>&, const Gradients<T>&, int);
GAUSSKL_INSTANTIATE(float)
GAUSSKL_INSTANTIATE(double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
