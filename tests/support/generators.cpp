#include "support/generators.hpp"

#include <cmath>
#include <stdexcept>

namespace gausskl::test {
namespace {

using Real = long double;
using std::int64_t;

double log_uniform(Rng& rng, double lo, double hi) {
  return std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(rng));
}

std::vector<double> random_means(Rng& rng, int64_t n, int64_t d, double offset) {
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> mean(n * d);
  for (double& m : mean)
    m = offset + normal(rng);
  return mean;
}

DiagSpec random_diag(Rng& rng, int64_t n, int64_t d, const GenOptions& o) {
  DiagSpec s{n, d, random_means(rng, n, d, o.mean_offset), std::vector<double>(n * d)};
  for (double& x : s.stddev)
    x = log_uniform(rng, o.scale_min, o.scale_max);
  return s;
}

FullSpec random_full(Rng& rng, int64_t n, int64_t d, const GenOptions& o) {
  FullSpec s{n, d, random_means(rng, n, d, o.mean_offset), std::vector<double>(n * d * d, 0.0)};
  std::normal_distribution<double> normal(0, 1);
  const double off = 0.3 / std::sqrt(static_cast<double>(d));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t r = 0; r < d; ++r) {
      double* row = &s.tril[(i * d + r) * d];
      const double sr = log_uniform(rng, o.scale_min, o.scale_max);
      for (int64_t c = 0; c < r; ++c)
        row[c] = sr * off * normal(rng);
      row[r] = sr;
    }
  return s;
}

LowRankSpec random_lowrank(Rng& rng, int64_t n, int64_t d, const GenOptions& o) {
  const int64_t r = o.rank;
  LowRankSpec s{n,
                d,
                r,
                random_means(rng, n, d, o.mean_offset),
                std::vector<double>(n * d * r),
                std::vector<double>(n * d)};
  std::normal_distribution<double> normal(0, 1);
  const double w = o.factor_scale / std::sqrt(static_cast<double>(r));
  for (int64_t i = 0; i < n * d; ++i) {
    const double sd = log_uniform(rng, o.scale_min, o.scale_max);
    s.diag[i] = sd * sd;
    for (int64_t k = 0; k < r; ++k)
      s.factor[i * r + k] = sd * w * normal(rng);
  }
  return s;
}

void perturb(Rng& rng, std::vector<double>& values, double rel) {
  std::uniform_real_distribution<double> u(-1, 1);
  for (double& x : values)
    x *= 1 + rel * u(rng);
}

// Copies `width` consecutive values per row.
std::vector<double> pick(const std::vector<double>& v, int64_t width,
                         const std::vector<int64_t>& rows) {
  std::vector<double> out;
  out.reserve(rows.size() * width);
  for (const int64_t i : rows)
    out.insert(out.end(), &v[i * width], &v[i * width] + width);
  return out;
}

}  // namespace

Spec random_spec(Rng& rng, Family family, int64_t n, int64_t d, const GenOptions& options) {
  switch (family) {
    case Family::diag:
      return random_diag(rng, n, d, options);
    case Family::full:
      return random_full(rng, n, d, options);
    case Family::lowrank:
      return random_lowrank(rng, n, d, options);
  }
  throw std::logic_error("unknown family");
}

Spec perturbed(Rng& rng, const Spec& spec, double rel) {
  Spec out = spec;
  std::visit(
      [&](auto& s) {
        perturb(rng, s.mean, rel);
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, DiagSpec>) perturb(rng, s.stddev, rel);
        if constexpr (std::is_same_v<S, FullSpec>) perturb(rng, s.tril, rel);
        if constexpr (std::is_same_v<S, LowRankSpec>) {
          perturb(rng, s.factor, rel);
          perturb(rng, s.diag, rel);
        }
      },
      out);
  return out;
}

Spec take_rows(const Spec& spec, const std::vector<int64_t>& rows) {
  const int64_t n = static_cast<int64_t>(rows.size());
  return std::visit(
      [&](const auto& s) -> Spec {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, DiagSpec>) {
          return DiagSpec{n, s.d, pick(s.mean, s.d, rows), pick(s.stddev, s.d, rows)};
        } else if constexpr (std::is_same_v<S, FullSpec>) {
          return FullSpec{n, s.d, pick(s.mean, s.d, rows), pick(s.tril, s.d * s.d, rows)};
        } else {
          return LowRankSpec{n,
                             s.d,
                             s.r,
                             pick(s.mean, s.d, rows),
                             pick(s.factor, s.d * s.r, rows),
                             pick(s.diag, s.d, rows)};
        }
      },
      spec);
}

std::vector<Data> all_data() {
  return {Data::random, Data::adversarial, Data::near_duplicate_1e4, Data::near_duplicate_1e8,
          Data::identical};
}

std::string name(Data data) {
  switch (data) {
    case Data::random:
      return "random";
    case Data::adversarial:
      return "adversarial";
    case Data::near_duplicate_1e4:
      return "near-duplicate 1e-4";
    case Data::near_duplicate_1e8:
      return "near-duplicate 1e-8";
    case Data::identical:
      return "identical";
  }
  return "?";
}

bool q_derived_from_p(Data data) {
  return data != Data::random && data != Data::adversarial;
}

std::pair<Spec, Spec> make_specs(Rng& rng, Data data, Family fp, Family fq, int64_t n, int64_t m,
                                 int64_t d, int64_t rank) {
  GenOptions options = data == Data::random ? GenOptions{} : kAdversarial;
  options.rank = rank;
  Spec p = random_spec(rng, fp, n, d, options);
  switch (data) {
    case Data::random:
    case Data::adversarial: {
      Spec q = random_spec(rng, fq, m, d, options);
      return {std::move(p), std::move(q)};
    }
    case Data::near_duplicate_1e4: {
      Spec q = perturbed(rng, p, 1e-4);
      return {std::move(p), std::move(q)};
    }
    case Data::near_duplicate_1e8: {
      Spec q = perturbed(rng, p, 1e-8);
      return {std::move(p), std::move(q)};
    }
    case Data::identical:
      return {p, p};
  }
  throw std::logic_error("unknown data");
}

std::vector<Layout> all_layouts() {
  std::vector<Layout> out;
  for (const DiagParam p :
       {DiagParam::stddev, DiagParam::var, DiagParam::logvar, DiagParam::precision})
    out.push_back({Family::diag, p, FullParam::scale_tril});
  for (const FullParam p :
       {FullParam::scale_tril, FullParam::covariance, FullParam::precision_matrix})
    out.push_back({Family::full, DiagParam::stddev, p});
  for (const Layout& packed : packed_layouts())
    out.push_back(packed);
  out.push_back({Family::lowrank});
  return out;
}

std::vector<Layout> packed_partners() {
  std::vector<Layout> out = {layout_of(Family::diag), layout_of(Family::full)};
  for (const Layout& packed : packed_layouts())
    out.push_back(packed);
  out.push_back(layout_of(Family::lowrank));
  return out;
}

std::vector<Layout> packed_layouts() {
  return {{Family::full, DiagParam::stddev, FullParam::packed_scale_tril, false},
          {Family::full, DiagParam::stddev, FullParam::packed_scale_tril, true}};
}

Layout layout_of(Family family) {
  for (const Layout& layout : all_layouts()) {
    if (layout.family == family) return layout;
  }
  return {};
}

std::vector<Layout> family_layouts() {
  return {{Family::diag}, {Family::full}, {Family::lowrank}};
}

std::string name(Family family) {
  switch (family) {
    case Family::diag:
      return "diag";
    case Family::full:
      return "full";
    case Family::lowrank:
      return "lowrank";
  }
  return "?";
}

std::string pair_name(Family p, Family q) {
  return name(p) + "/" + name(q);
}

std::string name(const Layout& layout) {
  switch (layout.family) {
    case Family::diag: {
      constexpr const char* names[] = {"std", "var", "logvar", "precision"};
      return "diag/" + std::string(names[static_cast<int>(layout.diag)]);
    }
    case Family::full: {
      constexpr const char* names[] = {"scale_tril", "covariance", "precision_matrix",
                                       "packed_scale_tril"};
      return "full/" + std::string(names[static_cast<int>(layout.full)]) +
             (layout.log_diagonal ? "/log_diagonal" : "");
    }
    case Family::lowrank:
      return "lowrank";
  }
  return "?";
}

template <class T>
DiagBatch<T> make_diag(const DiagSpec& spec, DiagParam param) {
  DiagBatch<T> b{spec.n, spec.d, param, {spec.mean.begin(), spec.mean.end()}, {}};
  b.scale.reserve(spec.stddev.size());
  for (const double s : spec.stddev) {
    const Real v = Real{s} * s;
    switch (param) {
      case DiagParam::stddev:
        b.scale.push_back(static_cast<T>(s));
        break;
      case DiagParam::var:
        b.scale.push_back(static_cast<T>(v));
        break;
      case DiagParam::logvar:
        b.scale.push_back(static_cast<T>(std::log(v)));
        break;
      case DiagParam::precision:
        b.scale.push_back(static_cast<T>(1 / v));
        break;
    }
  }
  return b;
}

template <class T>
FullBatch<T> make_full(const FullSpec& spec, FullParam param, bool log_diagonal) {
  const int64_t d = spec.d;
  if (param == FullParam::packed_scale_tril) {
    FullBatch<T> b{spec.n, d, param, {spec.mean.begin(), spec.mean.end()}, {}, log_diagonal};
    b.scale.reserve(spec.n * d * (d + 1) / 2);
    for (int64_t i = 0; i < spec.n; ++i)
      for (int64_t r = 0; r < d; ++r)
        for (int64_t c = 0; c <= r; ++c) {
          const Real x = spec.tril[(i * d + r) * d + c];
          b.scale.push_back(static_cast<T>(c == r && log_diagonal ? std::log(x) : x));
        }
    return b;
  }
  FullBatch<T> b{spec.n,
                 d,
                 param,
                 {spec.mean.begin(), spec.mean.end()},
                 std::vector<T>(spec.tril.size(), T{0})};
  for (int64_t i = 0; i < spec.n; ++i) {
    const double* l = &spec.tril[i * d * d];
    T* out = &b.scale[i * d * d];
    std::vector<Real> m(d * d, Real{0});  // the lower triangle of what is emitted
    switch (param) {
      case FullParam::scale_tril:
      case FullParam::packed_scale_tril:  // returned above
        for (int64_t r = 0; r < d; ++r)
          for (int64_t c = 0; c <= r; ++c)
            m[r * d + c] = l[r * d + c];
        break;
      case FullParam::covariance:
        for (int64_t r = 0; r < d; ++r)
          for (int64_t c = 0; c <= r; ++c)
            for (int64_t k = 0; k <= c; ++k)
              m[r * d + c] += Real{l[r * d + k]} * l[c * d + k];
        break;
      case FullParam::precision_matrix: {
        // (L L^T)^{-1} = X^T X with X = L^{-1}, lower triangular, by forward substitution.
        std::vector<Real> x(d * d, Real{0});
        for (int64_t c = 0; c < d; ++c)
          for (int64_t r = c; r < d; ++r) {
            Real sum = r == c ? 1 : 0;
            for (int64_t k = c; k < r; ++k)
              sum -= Real{l[r * d + k]} * x[k * d + c];
            x[r * d + c] = sum / l[r * d + r];
          }
        for (int64_t r = 0; r < d; ++r)
          for (int64_t c = 0; c <= r; ++c)
            for (int64_t k = r; k < d; ++k)
              m[r * d + c] += x[k * d + r] * x[k * d + c];
        break;
      }
    }
    for (int64_t r = 0; r < d; ++r)
      for (int64_t c = 0; c <= r; ++c) {
        out[r * d + c] = static_cast<T>(m[r * d + c]);
        if (param != FullParam::scale_tril) out[c * d + r] = out[r * d + c];
      }
  }
  return b;
}

template <class T>
LowRankBatch<T> make_lowrank(const LowRankSpec& spec) {
  return {spec.n,
          spec.d,
          spec.r,
          {spec.mean.begin(), spec.mean.end()},
          {spec.factor.begin(), spec.factor.end()},
          {spec.diag.begin(), spec.diag.end()}};
}

template <class T>
Batch<T> make_batch(const Spec& spec, const Layout& layout) {
  switch (layout.family) {
    case Family::diag:
      return {make_diag<T>(std::get<DiagSpec>(spec), layout.diag)};
    case Family::full:
      return {make_full<T>(std::get<FullSpec>(spec), layout.full, layout.log_diagonal)};
    case Family::lowrank:
      return {make_lowrank<T>(std::get<LowRankSpec>(spec))};
  }
  throw std::logic_error("unknown family");
}

#define GAUSSKL_INSTANTIATE(T)                                          \
  template DiagBatch<T> make_diag<T>(const DiagSpec&, DiagParam);       \
  template FullBatch<T> make_full<T>(const FullSpec&, FullParam, bool); \
  template LowRankBatch<T> make_lowrank<T>(const LowRankSpec&);         \
  template Batch<T> make_batch<T>(const Spec&, const Layout&);
GAUSSKL_INSTANTIATE(float)
GAUSSKL_INSTANTIATE(double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::test
