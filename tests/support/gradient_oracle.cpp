#include "support/gradient_oracle.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <variant>

namespace gausskl::test {
namespace {

using Real = long double;
using std::int64_t;

// A d x d matrix, row-major.
struct Mat {
  int64_t d;
  std::vector<Real> a;
  explicit Mat(int64_t n) : d(n), a(static_cast<std::size_t>(n * n), Real{0}) {}
  Real& operator()(int64_t r, int64_t c) { return a[r * d + c]; }
  Real operator()(int64_t r, int64_t c) const { return a[r * d + c]; }
};

Mat mul(const Mat& x, const Mat& y) {
  Mat out(x.d);
  for (int64_t r = 0; r < x.d; ++r)
    for (int64_t k = 0; k < x.d; ++k)
      for (int64_t c = 0; c < x.d; ++c)
        out(r, c) += x(r, k) * y(k, c);
  return out;
}

Mat transpose(const Mat& x) {
  Mat out(x.d);
  for (int64_t r = 0; r < x.d; ++r)
    for (int64_t c = 0; c < x.d; ++c)
      out(c, r) = x(r, c);
  return out;
}

Mat abs(const Mat& x) {
  Mat out = x;
  for (Real& v : out.a)
    v = std::fabs(v);
  return out;
}

// The inverse of a lower-triangular matrix, column by column by forward substitution.
Mat invert_lower(const Mat& l) {
  const int64_t d = l.d;
  Mat inv(d);
  for (int64_t c = 0; c < d; ++c)
    for (int64_t r = c; r < d; ++r) {
      Real s = r == c ? 1 : 0;
      for (int64_t k = c; k < r; ++k)
        s -= l(r, k) * inv(k, c);
      inv(r, c) = s / l(r, r);
    }
  return inv;
}

std::vector<Real> mul(const Mat& x, const std::vector<Real>& v) {
  std::vector<Real> out(static_cast<std::size_t>(x.d), Real{0});
  for (int64_t r = 0; r < x.d; ++r)
    for (int64_t c = 0; c < x.d; ++c)
      out[r] += x(r, c) * v[c];
  return out;
}

RefArray zeros(int64_t size) {
  const auto n = static_cast<std::size_t>(size);
  return {std::vector<Real>(n, 0), std::vector<Real>(n, 0), std::vector<Real>(n, 0),
          std::vector<Real>(n, 0)};
}

// Adds g times a row's value, and |g| times its magnitudes, at `at`.
void add(RefArray& out, int64_t at, Real g, Real value, Real terms, Real near, Real oracle = 0) {
  out.value[at] += g * value;
  out.terms[at] += std::fabs(g) * terms;
  out.near[at] += std::fabs(g) * near;
  out.oracle[at] += std::fabs(g) * oracle;
}

// ---- diagonal ----

struct DiagEntry {
  Real v, dv_dx, x;  // variance, its derivative with respect to the parameter, the parameter
};

DiagEntry diag_entry(DiagParam param, Real x) {
  switch (param) {
    case DiagParam::stddev:
      return {x * x, 2 * x, x};
    case DiagParam::var:
      return {x, 1, x};
    case DiagParam::logvar: {
      const Real v = std::exp(x);
      return {v, v, x};
    }
    case DiagParam::precision: {
      const Real v = 1 / x;
      return {v, -v * v, x};
    }
  }
  return {};
}

// v - w from the parameters' difference where both are given alike.
Real v_minus_w(DiagParam pp, const DiagEntry& p, DiagParam qp, const DiagEntry& q) {
  if (pp != qp) return p.v - q.v;
  switch (pp) {
    case DiagParam::stddev:
      return (p.x - q.x) * (p.x + q.x);
    case DiagParam::var:
      return p.x - q.x;
    case DiagParam::logvar:
      return q.v * std::expm1(p.x - q.x);
    case DiagParam::precision:
      return (q.x - p.x) / (p.x * q.x);
  }
  return 0;
}

template <class T>
void diag_backward(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::span<const T> grad,
                   RefGradients& out) {
  const int64_t d = p.mean.shape[1];
  const int64_t n = static_cast<int64_t>(grad.size());
  // q = N(0, I) as logvar 0 (w = 1, given alike only with a logvar p) or, for the difference,
  // as p's own parameterization at variance 1.
  for (int64_t i = 0; i < n; ++i) {
    const Real g = grad[i];
    const int64_t ip = p.mean.shape[0] == 1 ? 0 : i;
    const int64_t iq = q && q->mean.shape[0] == 1 ? 0 : i;
    for (int64_t h = 0; h < d; ++h) {
      const DiagParam pp = p.param;
      const DiagParam qp = q ? q->param : pp;
      const DiagEntry ep = diag_entry(pp, p.scale(ip, h));
      const Real unit = pp == DiagParam::logvar ? 0 : 1;  // p's parameter at variance 1
      const DiagEntry eq = diag_entry(qp, q ? Real{q->scale(iq, h)} : unit);
      const Real mu = p.mean(ip, h), nu = q ? Real{q->mean(iq, h)} : 0;
      const Real delta = mu - nu;
      const Real vmw = v_minus_w(pp, ep, qp, eq);
      const Real v = ep.v, w = eq.v;
      // dKL/dmu = delta / w; dKL/dv = 1/2 (1/w - 1/v); dKL/dw = 1/2 (1/w - (v + delta^2) / w^2).
      // Each value is a product or quotient of a few exactly-rounded long doubles.
      const Real g_mean = delta / w;
      add(out.p.mean, ip * d + h, g, g_mean, std::fabs(g_mean), std::fabs(g_mean));
      const Real g_v = vmw / (2 * v * w) * ep.dv_dx;
      add(out.p.scale, ip * d + h, g, g_v, std::fabs(ep.dv_dx) * (1 / w + 1 / v) / 2,
          std::fabs(g_v));
      if (!q) continue;
      add(out.q.mean, iq * d + h, g, -g_mean, std::fabs(g_mean), std::fabs(g_mean));
      const Real g_w = -(vmw + delta * delta) / (2 * w * w) * eq.dv_dx;
      add(out.q.scale, iq * d + h, g, g_w,
          std::fabs(eq.dv_dx) * (1 / w + (v + delta * delta) / (w * w)) / 2,
          std::fabs(eq.dv_dx) * (std::fabs(vmw) + delta * delta) / (2 * w * w));
    }
  }
}

// ---- full ----

// One side's factor of distribution i: L (exp applied to a log diagonal), and the raw diagonal.
struct FullRow {
  Mat l;
  std::vector<Real> raw;
  bool log_diagonal = false, packed = false;
};

template <class T>
FullRow full_row(const FullGaussians<T>* g, int64_t i, int64_t d) {
  FullRow f{Mat(d), std::vector<Real>(static_cast<std::size_t>(d), 0), false, false};
  if (!g) {  // N(0, I)
    for (int64_t k = 0; k < d; ++k)
      f.l(k, k) = 1;
    return f;
  }
  f.packed = g->param == FullParam::packed_scale_tril;
  f.log_diagonal = f.packed && g->log_diagonal;
  for (int64_t r = 0; r < d; ++r)
    for (int64_t c = 0; c <= r; ++c) {
      const Real x = f.packed ? Real{g->packed(i, r * (r + 1) / 2 + c)} : Real{g->scale(i, r, c)};
      if (c == r) f.raw[r] = x;
      f.l(r, c) = c == r && f.log_diagonal ? std::exp(x) : x;
    }
  return f;
}

// Adds row results into a side's scale gradient in its layout.
void add_scale(RefArray& out, const FullRow& f, int64_t at_row, int64_t d, Real g, const Mat& value,
               const Mat& terms, const Mat& near, const Mat& oracle) {
  const int64_t size = f.packed ? d * (d + 1) / 2 : d * d;
  for (int64_t r = 0; r < d; ++r)
    for (int64_t c = 0; c <= r; ++c) {
      const Real chain = c == r && f.log_diagonal ? f.l(r, r) : 1;
      const int64_t at = at_row * size + (f.packed ? r * (r + 1) / 2 + c : r * d + c);
      add(out, at, g, value(r, c) * chain, terms(r, c) * chain, near(r, c) * chain,
          oracle(r, c) * chain);
    }
}

template <class T>
void full_backward(const FullGaussians<T>& p, const FullGaussians<T>* q, std::span<const T> grad,
                   RefGradients& out) {
  const int64_t d = p.mean.shape[1];
  const int64_t n = static_cast<int64_t>(grad.size());
  for (int64_t i = 0; i < n; ++i) {
    const Real g = grad[i];
    const int64_t ip = p.mean.shape[0] == 1 ? 0 : i;
    const int64_t iq = q && q->mean.shape[0] == 1 ? 0 : i;
    const FullRow fp = full_row(&p, ip, d), fq = full_row(q, iq, d);
    std::vector<Real> delta(static_cast<std::size_t>(d));
    for (int64_t k = 0; k < d; ++k)
      delta[k] = Real{p.mean(ip, k)} - (q ? Real{q->mean(iq, k)} : 0);
    // D = Lp - Lq, its diagonal from the log difference where both diagonals are logs.
    Mat dm(d);
    for (int64_t r = 0; r < d; ++r)
      for (int64_t c = 0; c <= r; ++c)
        dm(r, c) = fp.l(r, c) - fq.l(r, c);
    if (fp.log_diagonal && fq.log_diagonal) {
      for (int64_t k = 0; k < d; ++k)
        dm(k, k) = fq.l(k, k) * std::expm1(fp.raw[k] - fq.raw[k]);
    }
    const Mat li = invert_lower(fq.l), lpi = invert_lower(fp.l);
    const Mat lit = transpose(li);
    const Mat t_inv = mul(lit, li);
    // S - T = D Lp^T + Lq D^T.
    Mat s_minus_t = mul(dm, transpose(fp.l));
    const Mat lq_dt = mul(fq.l, transpose(dm));
    for (std::size_t k = 0; k < s_minus_t.a.size(); ++k)
      s_minus_t.a[k] += lq_dt.a[k];
    const Mat g_p = mul(mul(t_inv, s_minus_t), transpose(lpi));
    Mat inner = s_minus_t;
    for (int64_t r = 0; r < d; ++r)
      for (int64_t c = 0; c < d; ++c)
        inner(r, c) += delta[r] * delta[c];
    Mat g_q = mul(mul(t_inv, inner), lit);
    for (Real& x : g_q.a)
      x = -x;
    const std::vector<Real> g_mean = mul(t_inv, delta);

    // Term magnitudes, of y = Li delta, M = Li Lp and N = Li D as computed by a substitution
    // (whose terms are those of |Li| |b|, not |Li b|), then of the products with Li^T.
    const Mat ali = abs(li), alit = abs(lit);
    std::vector<Real> abs_delta(delta.size());
    for (std::size_t k = 0; k < delta.size(); ++k)
      abs_delta[k] = std::fabs(delta[k]);
    const std::vector<Real> ay = mul(ali, abs_delta);
    const Mat am = mul(ali, abs(fp.l)), an = mul(ali, abs(dm));
    const std::vector<Real> mean_terms = mul(alit, ay);
    Mat terms_p = mul(alit, am), near_p = mul(alit, an);
    Mat yy(d);
    for (int64_t r = 0; r < d; ++r)
      for (int64_t c = 0; c < d; ++c)
        yy(r, c) = ay[r] * ay[c];
    Mat mm = mul(am, transpose(am)), nn = mul(an, transpose(an));
    for (std::size_t k = 0; k < mm.a.size(); ++k) {
      mm.a[k] += yy.a[k];
      nn.a[k] += yy.a[k] + an.a[k];
    }
    Mat terms_q = mul(alit, mm), near_q = mul(alit, nn);
    for (int64_t k = 0; k < d; ++k) {
      terms_p(k, k) += 1 / fp.l(k, k);
      near_p(k, k) += an(k, k) / fp.l(k, k);
      terms_q(k, k) += 1 / fq.l(k, k);
      near_q(k, k) += an(k, k) / fq.l(k, k);
    }
    // The oracle's own rounding: 2^-60 of the magnitudes of its products (T^{-1} (S - T)
    // Lp^{-T} and T^{-1} (S - T + delta delta^T) Lq^{-T}); a value that is exactly 0 in the
    // kernels' forms need not be in these.
    const Real ulp = std::ldexp(Real{1}, -60);
    const Mat abs_inner = abs(inner);
    const Mat floor_p = mul(mul(abs(t_inv), abs(s_minus_t)), abs(transpose(lpi)));
    const Mat floor_q = mul(mul(abs(t_inv), abs_inner), alit);
    const std::vector<Real> floor_mean = mul(abs(t_inv), abs_delta);
    Mat oracle_p = floor_p, oracle_q = floor_q;
    for (Real& x : oracle_p.a)
      x *= ulp;
    for (Real& x : oracle_q.a)
      x *= ulp;
    for (int64_t k = 0; k < d; ++k) {
      const Real oracle = ulp * floor_mean[k];
      add(out.p.mean, ip * d + k, g, g_mean[k], mean_terms[k], mean_terms[k], oracle);
      if (q) add(out.q.mean, iq * d + k, g, -g_mean[k], mean_terms[k], mean_terms[k], oracle);
    }
    add_scale(out.p.scale, fp, ip, d, g, g_p, terms_p, near_p, oracle_p);
    if (q) add_scale(out.q.scale, fq, iq, d, g, g_q, terms_q, near_q, oracle_q);
  }
}

template <class T>
int64_t scale_size(const Gaussians<T>& g) {
  if (const auto* diag = std::get_if<DiagGaussians<T>>(&g.variant())) {
    return diag->scale.shape[0] * diag->scale.shape[1];
  }
  const auto& full = std::get<FullGaussians<T>>(g.variant());
  const int64_t n = full.mean.shape[0], d = full.mean.shape[1];
  return full.param == FullParam::packed_scale_tril ? n * d * (d + 1) / 2 : n * d * d;
}

}  // namespace

template <class T>
RefGradients reference_backward(const Gaussians<T>& p, const Gaussians<T>* q,
                                std::span<const T> grad) {
  RefGradients out;
  out.p = {zeros(p.n() * p.d()), zeros(scale_size(p))};
  if (q) out.q = {zeros(q->n() * q->d()), zeros(scale_size(*q))};
  if (const auto* pd = std::get_if<DiagGaussians<T>>(&p.variant())) {
    diag_backward(*pd, q ? &std::get<DiagGaussians<T>>(q->variant()) : nullptr, grad, out);
  } else {
    full_backward(std::get<FullGaussians<T>>(p.variant()),
                  q ? &std::get<FullGaussians<T>>(q->variant()) : nullptr, grad, out);
  }
  return out;
}

template <class T>
PackedBatch<T> pack(int64_t n, int64_t d, const std::vector<double>& mean,
                    const std::vector<double>& tril, bool log_diagonal) {
  PackedBatch<T> b{n, d, log_diagonal, {mean.begin(), mean.end()}, {}};
  b.packed.reserve(static_cast<std::size_t>(n * d * (d + 1) / 2));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t r = 0; r < d; ++r)
      for (int64_t c = 0; c <= r; ++c) {
        const double x = tril[(i * d + r) * d + c];
        b.packed.push_back(static_cast<T>(c == r && log_diagonal ? std::log(x) : x));
      }
  return b;
}

template <class U>
double gradient_error(std::span<const U> got, const RefArray& ref, Measure measure) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (got.size() != ref.value.size()) return inf;
  double worst = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const Real value = ref.value[k];
    const Real floor = measure == Measure::terms ? ref.terms[k] : ref.near[k];
    if (!std::isfinite(static_cast<double>(got[k]))) return inf;
    const Real diff = std::fabs(Real{got[k]} - value) - ref.oracle[k];
    if (diff <= 0) continue;
    worst = std::max(worst, static_cast<double>(diff / (std::fabs(value) + floor)));
  }
  return worst;
}

namespace {

// op -> row -> column -> largest error, per measure.
using ErrorTable = std::map<std::string, std::map<std::string, std::map<std::string, double>>>;

ErrorTable& table(Measure measure) {
  static ErrorTable t[2];
  return t[measure == Measure::terms ? 0 : 1];
}

// Prints one table per op and measure after the last test.
class GradientErrorReport : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const Measure measure : {Measure::terms, Measure::near}) {
      const char* floor = measure == Measure::terms ? "terms" : "near";
      for (const auto& [op, rows] : table(measure)) {
        std::set<std::string> columns;
        for (const auto& [row, cells] : rows)
          for (const auto& [column, error] : cells)
            columns.insert(column);
        std::printf("\n%s: largest |got - ref| / (|ref| + %s)\n  %-10s", op.c_str(), floor, "");
        for (const auto& column : columns)
          std::printf(" %10s", column.c_str());
        for (const auto& [row, cells] : rows) {
          std::printf("\n  %-10s", row.c_str());
          for (const auto& column : columns) {
            const auto it = cells.find(column);
            if (it == cells.end()) {
              std::printf(" %10s", "-");
            } else {
              std::printf(" %10.2e", it->second);
            }
          }
        }
        std::printf("\n");
      }
    }
  }
};

[[maybe_unused]] auto* const registered =
    ::testing::AddGlobalTestEnvironment(new GradientErrorReport);

}  // namespace

void record_gradient_error(const std::string& op, Measure measure, const std::string& row,
                           const std::string& column, double error) {
  double& w = table(measure)[op][row][column];
  w = std::max(w, error);
}

template double gradient_error(std::span<const float>, const RefArray&, Measure);
template double gradient_error(std::span<const double>, const RefArray&, Measure);
template RefGradients reference_backward(const Gaussians<float>&, const Gaussians<float>*,
                                         std::span<const float>);
template RefGradients reference_backward(const Gaussians<double>&, const Gaussians<double>*,
                                         std::span<const double>);
template PackedBatch<float> pack(int64_t, int64_t, const std::vector<double>&,
                                 const std::vector<double>&, bool);
template PackedBatch<double> pack(int64_t, int64_t, const std::vector<double>&,
                                  const std::vector<double>&, bool);

}  // namespace gausskl::test
