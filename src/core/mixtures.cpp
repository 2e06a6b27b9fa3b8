// KL between Gaussian mixtures (gausskl/mixtures.hpp): validated once, then each pair of
// mixtures reduced to the engine's all-pairs matrices between their components and a weighted
// log-sum-exp (the same terms, in the same order, as python/gausskl/_mixtures.py).
//
// With B the Bhattacharyya distance, beta that of the pair with the means set to 0 and l = log
// det Sigma, log int f_a h_b + H(f_a) = c - 2 B + beta + (l_a - l_b) / 4, c = D (1 - log 2) / 2:
// no constant of size D cancels, and nothing underflows (docs/mixtures.md).
#include "gausskl/mixtures.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/validate.hpp"
#include "cpu/backend.hpp"
#include "gausskl/families.hpp"
#include "gausskl/ops.hpp"

namespace gausskl {
namespace {

using detail::fail;
using detail::show;
using Matrix = std::vector<double>;  // row-major blocks [C, K]

template <class T, int R>
View<T, R> rows_of(View<T, R> v, std::int64_t first, std::int64_t count) {
  if (v.data == nullptr) return v;  // a view the family does not use
  v.data += first * v.strides[0];
  v.shape[0] = count;
  return v;
}

// Rows [first, first + count) of g; with `mean`, that mean in place of g's.
template <class T>
Gaussians<T> rows_of(const Gaussians<T>& g, std::int64_t first, std::int64_t count,
                     const View<T, 2>* mean = nullptr) {
  return std::visit(
      [&](auto family) -> Gaussians<T> {
        family.mean = mean ? *mean : rows_of(family.mean, first, count);
        if constexpr (requires { family.cov_factor; }) {
          family.cov_factor = rows_of(family.cov_factor, first, count);
          family.cov_diag = rows_of(family.cov_diag, first, count);
        } else {
          family.scale = rows_of(family.scale, first, count);
          if constexpr (requires { family.packed; }) {
            family.packed = rows_of(family.packed, first, count);
          }
        }
        return family;
      },
      g.variant());
}

// log-sum-exp of n terms (-inf for none or all -inf).
double lse(const double* x, std::int64_t n) {
  double top = -std::numeric_limits<double>::infinity();
  for (std::int64_t i = 0; i < n; ++i)
    top = std::max(top, x[i]);
  if (!std::isfinite(top)) return top;
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i)
    sum += std::exp(x[i] - top);
  return top + std::log(sum);
}

// sum_a w_a x_a, a zero weight contributing 0 whatever x_a is.
double weighted_sum(const double* log_w, const std::vector<double>& x) {
  double s = 0;
  for (std::size_t a = 0; a < x.size(); ++a) {
    const double w = std::exp(log_w[a]);
    if (w > 0) s += w * x[a];
  }
  return s;
}

// One batch of mixtures, validated: its log weights [M * C] and log-determinants [M * C].
template <class T>
struct Side {
  const Mixtures<T>* m;
  std::vector<double> log_w, logdet;
};

template <class T>
std::vector<double> log_weights(const char* op, const char* name, const Mixtures<T>& m) {
  const std::int64_t count = m.count(), c = m.c();
  const double tol = std::is_same_v<T, float>
                         ? 1e-6
                         : 16.0 * static_cast<double>(c) * std::numeric_limits<double>::epsilon();
  const std::string given = std::string(name) + (m.logits ? ".logits" : ".weights");
  std::vector<double> out(static_cast<std::size_t>(count * c));
  for (std::int64_t i = 0; i < count; ++i) {
    double sum = 0;
    for (std::int64_t a = 0; a < c; ++a) {
      const double v = m.weights(i, a);
      const std::string where = " at mixture " + show(i) + ", component " + show(a);
      if (!std::isfinite(v)) fail(op, given + " must be finite, found " + show(v) + where);
      if (!m.logits && v < 0) fail(op, given + " must be non-negative, found " + show(v) + where);
      sum += v;
      out[static_cast<std::size_t>(i * c + a)] = m.logits ? v : std::log(v);
    }
    if (m.logits) {
      const double norm = lse(out.data() + i * c, c);
      for (std::int64_t a = 0; a < c; ++a)
        out[static_cast<std::size_t>(i * c + a)] -= norm;
    } else if (!(std::abs(sum - 1.0) <= tol)) {
      fail(op, given + " must sum to 1 over the components (within " + show(tol) + "), found " +
                   show(sum) + " for mixture " + show(i));
    }
  }
  return out;
}

// Re-raises an error about component row r as one naming its mixture and component.
[[noreturn]] void about_component(const char* op, const char* name, const InputError& e,
                                  std::int64_t c) {
  std::string text = e.what();
  const std::string tag = "[" + e.op() + "] ";
  if (text.starts_with(tag)) text.erase(0, tag.size());
  // The checks name the batch p; here it is f or g.
  if (text.starts_with("p.")) text.replace(0, 1, name);
  const std::int64_t r = e.index();
  throw InputError(
      e.kind(), op,
      text + " (" + name + "'s mixture " + show(r / c) + ", component " + show(r % c) + ")", name,
      r);
}

template <class T>
Side<T> prepare_side(const char* op, const char* name, const Mixtures<T>& m,
                     const Options& options) {
  const std::int64_t count = m.count(), c = m.c();
  if (c < 1) fail(op, std::string(name) + " must have at least one component, found C = 0");
  if (m.components.n() != detail::checked_mul(op, count, c, "M * C")) {
    fail(op, std::string(name) + ".components must have M * C = " + show(count) + " * " + show(c) +
                 " rows (mixture m's component a at row m * C + a), found " +
                 show(m.components.n()));
  }
  Side<T> side{&m, log_weights(op, name, m), {}};
  side.logdet.resize(static_cast<std::size_t>(count * c));
  std::atomic<std::int64_t> jittered{0};
  cpu::FactorFailure failed;
  try {
    detail::validate(op, "p", m.components, options.threads);
    failed = cpu::logdets(m.components, side.logdet.data(), {options.jitter, &jittered});
  } catch (const InputError& e) {
    if (e.index() >= 0) about_component(op, name, e, c);
    throw;
  } catch (const std::bad_alloc&) {
    detail::fail_workspace(op, m.components.d(), m.components.n());
  }
  if (failed.index >= 0) {
    const NotPositiveDefiniteError e(op, "p", describe(m.components).scale_param, failed.index,
                                     failed.pivot, show(failed.value));
    about_component(op, name, e, c);
  }
  if (options.on_jitter && jittered.load() > 0) options.on_jitter(name, jittered.load());
  return side;
}

// The blocks one pair of mixtures needs, computed by the engine.
struct Blocks {
  Matrix kl, bhat, bhat0;  // [C, K]: KL(f_a || g_b), B, beta
};

enum Need : unsigned { kKl = 1, kBhat = 2 };

// The engine's blocks between the components of two mixtures, with the calls' options.
template <class T>
class Pair {
 public:
  Pair(std::int64_t d, const Options& options) : options_(options) {
    options_.progress = nullptr;
    options_.on_jitter = nullptr;  // reported once, by prepare_side
    zeros_.assign(static_cast<std::size_t>(d), T(0));
  }

  // The blocks of f's mixture i against its own components (g = nullptr) or g's mixture j.
  Blocks blocks(const Side<T>& f, std::int64_t i, const Side<T>* g, std::int64_t j,
                unsigned need) const {
    const std::int64_t c = f.m->c(), k = g ? g->m->c() : c;
    // Mixture `at`'s n components of `side`, with zero_means all means 0 (a stride-0 view).
    const auto rows = [&](const Side<T>& side, std::int64_t at, std::int64_t n, bool zero_means) {
      const View<T, 2> zero{zeros_.data(), {n, side.m->components.d()}, {0, 1}};
      return rows_of(side.m->components, at * n, n, zero_means ? &zero : nullptr);
    };
    Blocks out;
    const auto run = [&](Matrix& m, Divergence kind, bool zero_means) {
      m.resize(static_cast<std::size_t>(c * k));
      Options o = options_;
      o.divergence = kind;
      if (!g) {
        pairwise(rows(f, i, c, zero_means), std::span<double>(m), o);
      } else {
        pairwise(rows(f, i, c, zero_means), rows(*g, j, k, zero_means), std::span<double>(m), o);
      }
    };
    if (need & kKl) run(out.kl, Divergence::kl, false);
    if (need & kBhat) {
      run(out.bhat, Divergence::bhattacharyya, false);
      run(out.bhat0, Divergence::bhattacharyya, true);
    }
    return out;
  }

 private:
  Options options_;
  std::vector<T> zeros_;
};

// What each method needs of the f-f and f-g blocks.
unsigned self_need(MixtureMethod m, bool bounds) {
  if (bounds) return kKl | kBhat;
  switch (m) {
    case MixtureMethod::variational:
      return kKl;
    case MixtureMethod::upper_bound:
      return kBhat;
    case MixtureMethod::lower_bound:
      return kKl;
    case MixtureMethod::product:
      return kBhat;
    case MixtureMethod::matched:
      return 0;
  }
  return 0;
}
unsigned cross_need(MixtureMethod m, bool bounds) {
  if (bounds) return kKl | kBhat;
  switch (m) {
    case MixtureMethod::variational:
    case MixtureMethod::upper_bound:
    case MixtureMethod::matched:
      return kKl;
    case MixtureMethod::lower_bound:
    case MixtureMethod::product:
      return kBhat;
  }
  return 0;
}

// The terms of one pair of mixtures: f's weights lw [C] and log-determinants lf [C], h's (the
// other side) lh_w [K] and lh [K].
struct Terms {
  std::int64_t c, k, d;
  const double *lw, *lf, *hw, *lh;
  const Blocks& self;   // f against f
  const Blocks& cross;  // f against h
};

// LSE_b(hw_b - KL(f_a || h_b)) per a (own: f against itself).
std::vector<double> variational_part(const Terms& t, bool own) {
  const std::int64_t k = own ? t.c : t.k;
  const double* w = own ? t.lw : t.hw;
  const Matrix& kl = own ? t.self.kl : t.cross.kl;
  std::vector<double> out(static_cast<std::size_t>(t.c)), x(static_cast<std::size_t>(k));
  for (std::int64_t a = 0; a < t.c; ++a) {
    for (std::int64_t b = 0; b < k; ++b)
      x[b] = w[b] - kl[a * k + b];
    out[a] = lse(x.data(), k);
  }
  return out;
}

// LSE_b(hw_b - 2 B + beta + (l_a - l_b) / 4) per a: log int f_a h + H(f_a) - c (Jensen), or with
// product, LSE_b(hw_b - l_b / 4 - 2 B + beta).
std::vector<double> overlap_part(const Terms& t, bool own, bool product) {
  const std::int64_t k = own ? t.c : t.k;
  const double* w = own ? t.lw : t.hw;
  const double* l = own ? t.lf : t.lh;
  const Blocks& blk = own ? t.self : t.cross;
  std::vector<double> out(static_cast<std::size_t>(t.c)), x(static_cast<std::size_t>(k));
  for (std::int64_t a = 0; a < t.c; ++a) {
    for (std::int64_t b = 0; b < k; ++b) {
      const double core = -2.0 * blk.bhat[a * k + b] + blk.bhat0[a * k + b];
      x[b] = product ? (w[b] - 0.25 * l[b]) + core : w[b] + core + 0.25 * (t.lf[a] - l[b]);
    }
    out[a] = lse(x.data(), k);
  }
  return out;
}

double lower_bound(const Terms& t) {
  const double c = 0.5 * static_cast<double>(t.d) * (1.0 - std::log(2.0));
  std::vector<double> x = variational_part(t, true);
  const std::vector<double> j = overlap_part(t, false, false);
  for (std::size_t a = 0; a < x.size(); ++a)
    x[a] = x[a] - c - j[a];
  return std::max(weighted_sum(t.lw, x), 0.0);
}

double upper_bound(const Terms& t) {
  double entropy_side = 0;  // one component: H(f) is its own, min(c + J, 0) = 0
  if (t.c > 1) {
    const double c = 0.5 * static_cast<double>(t.d) * (1.0 - std::log(2.0));
    std::vector<double> j = overlap_part(t, true, false);
    for (double& v : j)
      v += c;
    entropy_side = std::min(weighted_sum(t.lw, j), 0.0);
  }
  return std::max(entropy_side - weighted_sum(t.lw, variational_part(t, false)), 0.0);
}

double method_value(MixtureMethod method, const Terms& t) {
  switch (method) {
    case MixtureMethod::upper_bound:
      return upper_bound(t);
    case MixtureMethod::lower_bound:
      return lower_bound(t);
    case MixtureMethod::variational: {
      std::vector<double> x = variational_part(t, true);
      const std::vector<double> y = variational_part(t, false);
      for (std::size_t a = 0; a < x.size(); ++a)
        x[a] -= y[a];
      return weighted_sum(t.lw, x);
    }
    case MixtureMethod::product: {
      std::vector<double> x = overlap_part(t, true, true);
      const std::vector<double> y = overlap_part(t, false, true);
      for (std::size_t a = 0; a < x.size(); ++a)
        x[a] -= y[a];
      return weighted_sum(t.lw, x);
    }
    case MixtureMethod::matched: {
      std::vector<double> x(static_cast<std::size_t>(t.c));
      for (std::int64_t a = 0; a < t.c; ++a) {
        double best = std::numeric_limits<double>::infinity();
        for (std::int64_t b = 0; b < t.k; ++b)
          best = std::min(best, t.cross.kl[a * t.k + b] - t.hw[b]);
        x[a] = best + t.lw[a];
      }
      return weighted_sum(t.lw, x);
    }
  }
  return 0;
}

// Calls emit(m, terms) for every pair of mixtures m < max(M_f, M_g).
template <class T, class Emit>
void run_pairs(const char* op, const Mixtures<T>& f, const Mixtures<T>& g, MixtureMethod method,
               bool bounds, std::size_t outputs, const Options& options, Emit&& emit) {
  check_options(op, options);
  if (options.divergence != Divergence::kl) {
    fail(op, "options.divergence must be kl (the default): the method chooses the divergences");
  }
  const bool same = &f == &g;
  const Side<T> fs = prepare_side(op, "f", f, options);
  const std::optional<Side<T>> gs_own =
      same ? std::nullopt : std::optional(prepare_side(op, "g", g, options));
  const Side<T>& gs = same ? fs : *gs_own;
  if (f.components.d() != g.components.d()) {
    fail(op, "f and g must have the same dimension, found D = " + show(f.components.d()) +
                 " and D = " + show(g.components.d()));
  }
  const std::int64_t mf = f.count(), mg = g.count();
  if (mf != mg && mf != 1 && mg != 1) {
    fail(op, "f and g must have the same number of mixtures, or one of them 1, found M = " +
                 show(mf) + " and M = " + show(mg));
  }
  const std::int64_t n = std::max(mf, mg);
  detail::check_size(op, "out", outputs, n);
  const Pair<T> pair(f.components.d(), options);
  const unsigned own = self_need(method, bounds), other = cross_need(method, bounds);
  std::optional<Blocks> self;  // f's mixture's blocks against itself (with M_f = 1, once)
  const std::int64_t c = f.c(), k = g.c(), d = f.components.d();
  for (std::int64_t m = 0; m < n; ++m) {
    const std::int64_t i = mf == 1 ? 0 : m, j = mg == 1 ? 0 : m;
    if (mf > 1 || !self) self = pair.blocks(fs, i, nullptr, 0, own | (same ? other : 0));
    const Blocks cross = same ? Blocks{} : pair.blocks(fs, i, &gs, j, other);
    const Terms t{c,
                  k,
                  d,
                  fs.log_w.data() + i * c,
                  fs.logdet.data() + i * c,
                  gs.log_w.data() + j * k,
                  gs.logdet.data() + j * k,
                  *self,
                  same ? *self : cross};
    emit(m, t);
    if (options.progress) options.progress(m + 1, n);
  }
}

template <class T>
void mixture_kl_impl(const Mixtures<T>& f, const Mixtures<T>& g, MixtureMethod method,
                     std::span<double> out, const Options& options) {
  run_pairs("mixture_kl", f, g, method, false, out.size(), options,
            [&](std::int64_t m, const Terms& t) { out[m] = method_value(method, t); });
}

template <class T>
void bounds_impl(const Mixtures<T>& f, const Mixtures<T>& g, std::span<double> lower,
                 std::span<double> upper, const Options& options) {
  const char* op = "mixture_kl_bounds";
  if (lower.size() != upper.size()) {
    fail(op, "lower and upper must have the same size, found " + show(lower.size()) + " and " +
                 show(upper.size()));
  }
  run_pairs(op, f, g, MixtureMethod::variational, true, lower.size(), options,
            [&](std::int64_t m, const Terms& t) {
              lower[m] = lower_bound(t);
              upper[m] = upper_bound(t);
            });
}

}  // namespace

void mixture_kl(const Mixtures<float>& f, const Mixtures<float>& g, MixtureMethod method,
                std::span<double> out, const Options& options) {
  mixture_kl_impl(f, g, method, out, options);
}
void mixture_kl(const Mixtures<double>& f, const Mixtures<double>& g, MixtureMethod method,
                std::span<double> out, const Options& options) {
  mixture_kl_impl(f, g, method, out, options);
}
void mixture_kl_bounds(const Mixtures<float>& f, const Mixtures<float>& g, std::span<double> lower,
                       std::span<double> upper, const Options& options) {
  bounds_impl(f, g, lower, upper, options);
}
void mixture_kl_bounds(const Mixtures<double>& f, const Mixtures<double>& g,
                       std::span<double> lower, std::span<double> upper, const Options& options) {
  bounds_impl(f, g, lower, upper, options);
}

}  // namespace gausskl
