#include "core/reference.hpp"

#include <algorithm>
#include <cmath>
#include <variant>
#include <vector>

namespace gausskl::reference {
namespace {

using Real = long double;
using std::int64_t;

// A D x D matrix, row-major.
struct Matrix {
  int64_t d = 0;
  std::vector<Real> a;

  explicit Matrix(int64_t n) : d(n), a(n * n, Real{0}) {}
  Real& operator()(int64_t r, int64_t c) { return a[r * d + c]; }
  Real operator()(int64_t r, int64_t c) const { return a[r * d + c]; }
};

struct Dense {
  std::vector<Real> mean;
  Matrix cov;
};

template <class T>
std::vector<Real> mean_of(const View<T, 2>& mean, int64_t i) {
  std::vector<Real> m(mean.shape[1]);
  for (int64_t h = 0; h < mean.shape[1]; ++h)
    m[h] = mean(i, h);
  return m;
}

// The lower Cholesky factor L of A = L L^T, by dot products (Cholesky-Crout), reading only the
// lower triangle of A. Entries of a row left of its first nonzero stay zero in L, so the loops
// start there: diagonal inputs cost O(D^2), not O(D^3).
struct Cholesky {
  Matrix l;
  std::vector<int64_t> first;  // first nonzero column of each row of L

  explicit Cholesky(const Matrix& a) : l(a.d), first(a.d) {
    const int64_t d = a.d;
    for (int64_t r = 0; r < d; ++r) {
      first[r] = r;
      for (int64_t c = r - 1; c >= 0; --c)
        if (a(r, c) != 0) first[r] = c;
      for (int64_t c = first[r]; c <= r; ++c) {
        Real s = a(r, c);
        for (int64_t k = std::max(first[r], first[c]); k < c; ++k)
          s -= l(r, k) * l(c, k);
        l(r, c) = c < r ? s / l(c, c) : std::sqrt(s);
      }
    }
  }

  // Overwrites x with L^{-1} x, where x[k] = 0 for k < from.
  void solve(std::vector<Real>& x, int64_t from = 0) const {
    for (int64_t r = from; r < l.d; ++r) {
      Real s = x[r];
      for (int64_t k = std::max(from, first[r]); k < r; ++k)
        s -= l(r, k) * x[k];
      x[r] = s / l(r, r);
    }
  }

  Real log_det() const {
    Real s = 0;
    for (int64_t k = 0; k < l.d; ++k)
      s += 2 * std::log(l(k, k));
    return s;
  }
};

template <class T>
Dense densify(const DiagGaussians<T>& g, int64_t i) {
  const int64_t d = g.mean.shape[1];
  Dense out{mean_of(g.mean, i), Matrix(d)};
  for (int64_t h = 0; h < d; ++h) {
    const Real s = g.scale(i, h);
    switch (g.param) {
      case DiagParam::stddev:
        out.cov(h, h) = s * s;
        break;
      case DiagParam::var:
        out.cov(h, h) = s;
        break;
      case DiagParam::logvar:
        out.cov(h, h) = std::exp(s);
        break;
      case DiagParam::precision:
        out.cov(h, h) = 1 / s;
        break;
    }
  }
  return out;
}

template <class T>
Dense densify(const FullGaussians<T>& g, int64_t i) {
  const int64_t d = g.mean.shape[1];
  Dense out{mean_of(g.mean, i), Matrix(d)};
  Matrix lower(d);  // the lower triangle of the given matrix, mirrored where symmetric
  const bool packed = g.param == FullParam::packed_scale_tril;
  for (int64_t r = 0; r < d; ++r)
    for (int64_t c = 0; c <= r; ++c) {
      if (packed) {
        const Real x = g.packed(i, r * (r + 1) / 2 + c);
        lower(r, c) = c == r && g.log_diagonal ? std::exp(x) : x;
      } else {
        lower(r, c) = g.scale(i, r, c);
      }
      if (g.param != FullParam::scale_tril && !packed) lower(c, r) = lower(r, c);
    }
  switch (g.param) {
    case FullParam::scale_tril:
    case FullParam::packed_scale_tril:
      for (int64_t r = 0; r < d; ++r)
        for (int64_t c = 0; c < d; ++c)
          for (int64_t k = 0; k <= std::min(r, c); ++k)
            out.cov(r, c) += lower(r, k) * lower(c, k);
      break;
    case FullParam::covariance:
      out.cov = lower;
      break;
    case FullParam::precision_matrix: {
      // P = L L^T, so P^{-1} = X^T X with X = L^{-1}, whose column c is L^{-1} e_c.
      const Cholesky chol(lower);
      Matrix x(d);
      for (int64_t c = 0; c < d; ++c) {
        std::vector<Real> e(d, Real{0});
        e[c] = 1;
        chol.solve(e, c);
        for (int64_t r = c; r < d; ++r)
          x(r, c) = e[r];
      }
      for (int64_t r = 0; r < d; ++r)
        for (int64_t c = 0; c < d; ++c)
          for (int64_t k = std::max(r, c); k < d; ++k)
            out.cov(r, c) += x(k, r) * x(k, c);
      break;
    }
  }
  return out;
}

template <class T>
Dense densify(const LowRankGaussians<T>& g, int64_t i) {
  const int64_t d = g.mean.shape[1];
  const int64_t rank = g.cov_factor.shape[2];
  Dense out{mean_of(g.mean, i), Matrix(d)};
  for (int64_t r = 0; r < d; ++r) {
    for (int64_t c = 0; c < d; ++c)
      for (int64_t k = 0; k < rank; ++k)
        out.cov(r, c) += Real{g.cov_factor(i, r, k)} * Real{g.cov_factor(i, c, k)};
    out.cov(r, r) += g.cov_diag(i, r);
  }
  return out;
}

template <class T>
Dense densify(const Gaussians<T>& g, int64_t i) {
  return std::visit([i](const auto& family) { return densify(family, i); }, g.variant());
}

// 2 KL(p || q) = tr(T^{-1} S) + (mu_p - mu_q)^T T^{-1} (mu_p - mu_q) - D + log|T| - log|S|,
// with tr(T^{-1} S) = |L_T^{-1} L_S|_F^2, summed by columns of L_S, and the quadratic form
// = |L_T^{-1} (mu_p - mu_q)|^2.
Real kl_dense(const Dense& p, const Dense& q) {
  const int64_t d = p.cov.d;
  const Cholesky s(p.cov);
  const Cholesky t(q.cov);

  Real trace = 0;
  std::vector<Real> x(d);
  for (int64_t c = 0; c < d; ++c) {
    for (int64_t r = 0; r < d; ++r)
      x[r] = s.l(r, c);
    t.solve(x, c);
    for (int64_t r = c; r < d; ++r)
      trace += x[r] * x[r];
  }

  for (int64_t h = 0; h < d; ++h)
    x[h] = p.mean[h] - q.mean[h];
  t.solve(x);
  Real quad = 0;
  for (const Real v : x)
    quad += v * v;

  return (trace + quad - static_cast<Real>(d) + t.log_det() - s.log_det()) / 2;
}

// The orthogonal polar factor u of c [d*d] (c = u h, h symmetric positive semi-definite: the u
// maximizing tr(u^T c)), by one-sided Jacobi rotations of c's columns until they are orthogonal,
// c y = x s, then u = x y^T. c is overwritten.
std::vector<Real> polar(std::vector<Real>& c, int64_t d) {
  std::vector<Real> y(d * d, Real{0}), u(d * d, Real{0});
  for (int64_t i = 0; i < d; ++i)
    y[i * d + i] = 1;
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p < d; ++p)
      for (int64_t q = p + 1; q < d; ++q) {
        Real a = 0, b = 0, g = 0;
        for (int64_t k = 0; k < d; ++k) {
          a += c[k * d + p] * c[k * d + p];
          b += c[k * d + q] * c[k * d + q];
          g += c[k * d + p] * c[k * d + q];
        }
        if (!(std::abs(g) > 0x1p-64L * std::sqrt(a) * std::sqrt(b))) continue;
        rotated = true;
        const Real zeta = (b - a) / (2 * g);
        const Real t = (zeta >= 0 ? 1 : -1) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
        const Real cs = 1 / std::sqrt(1 + t * t), sn = t * cs;
        for (int64_t k = 0; k < d; ++k) {
          const Real x = c[k * d + p], z = c[k * d + q];
          c[k * d + p] = cs * x - sn * z;
          c[k * d + q] = sn * x + cs * z;
          const Real yp = y[k * d + p], yq = y[k * d + q];
          y[k * d + p] = cs * yp - sn * yq;
          y[k * d + q] = sn * yp + cs * yq;
        }
      }
    if (!rotated) break;
  }
  for (int64_t k = 0; k < d; ++k) {
    Real s = 0;
    for (int64_t i = 0; i < d; ++i)
      s += c[i * d + k] * c[i * d + k];
    s = std::sqrt(s);
    for (int64_t i = 0; i < d; ++i)
      c[i * d + k] = s > 0 ? c[i * d + k] / s : 0;
  }
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < d; ++j)
      for (int64_t k = 0; k < d; ++k)
        u[i * d + j] += c[i * d + k] * y[j * d + k];
  return u;
}

// The quadratic form |L^-1 delta|^2 and log det of a Sigma_1 + b Sigma_2; NaN when that is not
// positive definite.
struct Mixed {
  Real quad, log_det;
};
Mixed mixed(const Dense& p, const Dense& q, Real a, Real b) {
  const int64_t d = p.cov.d;
  Matrix m(d);
  for (int64_t r = 0; r < d; ++r)
    for (int64_t c = 0; c < d; ++c)
      m(r, c) = a * p.cov(r, c) + b * q.cov(r, c);
  const Cholesky chol(m);
  for (int64_t k = 0; k < d; ++k) {  // positive definite: every pivot > 0 (else sqrt gave NaN)
    if (!(chol.l(k, k) > 0)) return {NAN, NAN};
  }
  std::vector<Real> x(d);
  for (int64_t h = 0; h < d; ++h)
    x[h] = p.mean[h] - q.mean[h];
  chol.solve(x);
  Real quad = 0;
  for (const Real v : x)
    quad += v * v;
  return {quad, chol.log_det()};
}

bool is_diagonal(const Matrix& m) {
  for (int64_t r = 0; r < m.d; ++r)
    for (int64_t c = 0; c < m.d; ++c)
      if (r != c && m(r, c) != 0) return false;
  return true;
}

Real divergence_dense(Divergence kind, Real alpha, const Dense& p, const Dense& q) {
  const int64_t d = p.cov.d;
  switch (kind) {
    case Divergence::kl:
      return kl_dense(p, q);
    case Divergence::jeffreys:
      return kl_dense(p, q) + kl_dense(q, p);
    case Divergence::bhattacharyya:
    case Divergence::hellinger: {
      const Mixed m = mixed(p, q, Real{0.5}, Real{0.5});
      const Real b = m.quad / 8 +
                     (m.log_det - (Cholesky(p.cov).log_det() + Cholesky(q.cov).log_det()) / 2) / 2;
      return kind == Divergence::hellinger ? -std::expm1(-b) : b;
    }
    case Divergence::renyi: {
      const Mixed m = mixed(p, q, 1 - alpha, alpha);
      const Real log_ratio =
          m.log_det - (1 - alpha) * Cholesky(p.cov).log_det() - alpha * Cholesky(q.cov).log_det();
      return alpha / 2 * m.quad - log_ratio / (2 * (alpha - 1));
    }
    case Divergence::wasserstein2: {
      if (is_diagonal(p.cov) && is_diagonal(q.cov)) {  // sum of delta^2 + (s1 - s2)^2
        Real sum = 0;
        for (int64_t h = 0; h < d; ++h) {
          const Real delta = p.mean[h] - q.mean[h];
          const Real ds = std::sqrt(p.cov(h, h)) - std::sqrt(q.cov(h, h));
          sum += delta * delta + ds * ds;
        }
        return sum;
      }
      // tr(S_1 + S_2 - 2 (S_2^1/2 S_1 S_2^1/2)^1/2) = min over orthogonal U of |L_1 - L_2 U|_F^2
      // (the trace form cancels to nothing on near-duplicates even in long double), U the
      // polar factor of L_2^T L_1.
      const Cholesky l1(p.cov), l2(q.cov);
      std::vector<Real> c(d * d, Real{0});
      for (int64_t i = 0; i < d; ++i)
        for (int64_t j = 0; j < d; ++j)
          for (int64_t k = 0; k < d; ++k)
            c[i * d + j] += l2.l(k, i) * l1.l(k, j);
      const std::vector<Real> u = polar(c, d);
      Real sum = 0;
      for (int64_t h = 0; h < d; ++h) {
        const Real delta = p.mean[h] - q.mean[h];
        sum += delta * delta;
      }
      for (int64_t i = 0; i < d; ++i)
        for (int64_t j = 0; j < d; ++j) {
          Real e = l1.l(i, j);
          for (int64_t k = 0; k < d; ++k)
            e -= l2.l(i, k) * u[k * d + j];
          sum += e * e;
        }
      return sum;
    }
  }
  return NAN;
}

}  // namespace

template <class T>
long double divergence(Divergence kind, long double alpha, const Gaussians<T>& p, std::int64_t i,
                       const Gaussians<T>& q, std::int64_t j) {
  return divergence_dense(kind, alpha, densify(p, i), densify(q, j));
}

template <class T>
long double kl(const Gaussians<T>& p, std::int64_t i, const Gaussians<T>& q, std::int64_t j) {
  return kl_dense(densify(p, i), densify(q, j));
}

template <class T>
long double kl_standard_normal(const Gaussians<T>& p, std::int64_t i) {
  const int64_t d = p.d();
  Dense q{std::vector<Real>(d, Real{0}), Matrix(d)};
  for (int64_t h = 0; h < d; ++h)
    q.cov(h, h) = 1;
  return kl_dense(densify(p, i), q);
}

template long double kl(const Gaussians<float>&, std::int64_t, const Gaussians<float>&,
                        std::int64_t);
template long double kl(const Gaussians<double>&, std::int64_t, const Gaussians<double>&,
                        std::int64_t);
template long double divergence(Divergence, long double, const Gaussians<float>&, std::int64_t,
                                const Gaussians<float>&, std::int64_t);
template long double divergence(Divergence, long double, const Gaussians<double>&, std::int64_t,
                                const Gaussians<double>&, std::int64_t);
template <class T>
void moments(const View<T, 2>& x, std::vector<long double>& mean,
             std::vector<long double>& scatter) {
  const int64_t n = x.shape[0], d = x.shape[1];
  mean.assign(d, Real{0});
  scatter.assign(d * d, Real{0});
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < d; ++j)
      mean[j] += static_cast<Real>(x(r, j));
  }
  for (int64_t j = 0; j < d; ++j)
    mean[j] /= static_cast<Real>(n);
  std::vector<Real> c(d);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < d; ++j)
      c[j] = static_cast<Real>(x(r, j)) - mean[j];
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = 0; j < d; ++j)
        scatter[i * d + j] += c[i] * c[j];
    }
  }
}

template void moments(const View<float, 2>&, std::vector<long double>&, std::vector<long double>&);
template void moments(const View<double, 2>&, std::vector<long double>&, std::vector<long double>&);
template long double kl_standard_normal(const Gaussians<float>&, std::int64_t);
template long double kl_standard_normal(const Gaussians<double>&, std::int64_t);

}  // namespace gausskl::reference
