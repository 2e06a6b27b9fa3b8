// gausskl::kl_backward and kl_standard_normal_backward (gausskl/gradients.hpp): the gradient
// oracle itself against finite differences of the long-double reference KL, then the public
// operations against the oracle (every diagonal parameterization on each side, scale_tril, N = 1
// broadcasting, strided views, float and double, p = q), and their input rules.
//
// Error measures (support/gradient_oracle.hpp): per entry, e / (|ref| + terms) with terms the
// size of the textbook formula's terms, and for pairs given alike e / (|ref| + near), near the
// terms of the difference forms (0 at p = q), e = |got - ref| less the oracle's own error bound.
// Bars: 1e-13 for double outputs (the computation is in double, a few dozen roundings at most,
// measured ~5e-15), 1.2e-7 for float outputs (their rounding, 2^-24 = 6e-8 relative).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/reference.hpp"
#include "gausskl/gradients.hpp"
#include "gausskl/ops.hpp"
#include "support/batches.hpp"
#include "support/expect.hpp"
#include "support/generators.hpp"
#include "support/gradient_oracle.hpp"
#include "support/oracle.hpp"

namespace gausskl::test {
namespace {

constexpr DiagParam kParams[] = {DiagParam::stddev, DiagParam::var, DiagParam::logvar,
                                 DiagParam::precision};

std::string param_text(DiagParam p) {  // (a std::string, to build labels with +)
  return param_name(p);
}

template <class T>
constexpr double bar() {
  return std::is_same_v<T, double> ? 1e-13 : 1.2e-7;
}

template <class T>
std::vector<T> upstream(std::int64_t n) {
  std::vector<T> g(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    g[i] = static_cast<T>((i % 2 ? -1.0 : 1.0) * (0.5 + 0.25 * i));
  return g;
}

// ---- the oracle against finite differences ----

// dL/dx of L = sum_i grad_i KL_ref(p_i || q_i) by the fourth-order central difference
// (-f(x + 2h) + 8 f(x + h) - 8 f(x - h) + f(x - 2h)) / 12h, in long double, with h a power of
// two 2^-12 below x (2^-16 for |x| < 2^-4) so that every x + k h is exact in double: truncation
// ~h^4 f^(5) ~ 1e-15 relative. Its rounding: the reference's KL carries ~2^-63 of its terms
// (of the size of 1 + |L| here), and the difference adds ~18 roundings of max |f|, all divided
// by 12 h: `bound` is 2^-56 (1 + max |f|) / h, generous.
struct Difference {
  long double value, bound;
};

Difference finite_difference(double& x, const std::function<long double()>& loss) {
  const double scale = std::max(std::fabs(x), 0x1p-4);
  const double h = std::ldexp(1.0, std::ilogb(scale) - 12);
  const double x0 = x;
  long double f[4], largest = 0;
  const double steps[4] = {2 * h, h, -h, -2 * h};
  for (int k = 0; k < 4; ++k) {
    x = x0 + steps[k];
    f[k] = loss();
    largest = std::max(largest, std::fabs(f[k]));
  }
  x = x0;
  return {(-f[0] + 8 * f[1] - 8 * f[2] + f[3]) / (12 * static_cast<long double>(h)),
          std::ldexp(1.0L, -56) * (1 + largest) / h};
}

// Every entry of every array of both sides: the oracle within 1e-9 of the finite difference
// against (|ref| + terms), beyond the difference's rounding bound: far above its own error and
// far below any wrong formula, factor or sign.
void check_oracle(std::vector<std::vector<double>*> p_arrays,
                  std::vector<std::vector<double>*> q_arrays, const RefGradients& ref,
                  const std::function<long double()>& loss, const std::string& label) {
  const RefArray* refs[] = {&ref.p.mean, &ref.p.scale, &ref.q.mean, &ref.q.scale};
  std::vector<std::vector<double>*> arrays = p_arrays;
  arrays.insert(arrays.end(), q_arrays.begin(), q_arrays.end());
  for (std::size_t a = 0; a < arrays.size(); ++a) {
    std::vector<double>& values = *arrays[a];
    ASSERT_EQ(values.size(), refs[a]->value.size()) << label;
    for (std::size_t k = 0; k < values.size(); ++k) {
      const Difference fd = finite_difference(values[k], loss);
      const long double want = refs[a]->value[k];
      EXPECT_LE(std::fabs(fd.value - want) - fd.bound,
                1e-9L * (std::fabs(want) + refs[a]->terms[k]))
          << label << " array " << a << " entry " << k << ": oracle " << static_cast<double>(want)
          << ", finite difference " << static_cast<double>(fd.value);
    }
  }
}

template <class T>
long double loss_of(const Gaussians<T>& p, const Gaussians<T>* q, const std::vector<T>& grad) {
  long double sum = 0;
  for (std::size_t i = 0; i < grad.size(); ++i) {
    const auto ip = p.n() == 1 ? 0 : static_cast<std::int64_t>(i);
    const auto iq = q && q->n() == 1 ? 0 : static_cast<std::int64_t>(i);
    sum += grad[i] * (q ? reference::kl(p, ip, *q, iq) : reference::kl_standard_normal(p, ip));
  }
  return sum;
}

TEST(GradientOracle, DiagonalAgreesWithFiniteDifferencesOfReference) {
  Rng rng(111);
  for (const bool broadcast_p : {false, true}) {
    const auto [ps, qs] =
        make_specs(rng, Data::random, Family::diag, Family::diag, broadcast_p ? 1 : 3, 3, 4);
    const std::vector<double> grad = upstream<double>(3);
    for (const DiagParam pp : kParams) {
      DiagBatch<double> p = make_diag<double>(std::get<DiagSpec>(ps), pp);
      {
        const Gaussians<double> pg(p.view());
        const RefGradients ref = reference_backward<double>(pg, nullptr, grad);
        check_oracle(
            {&p.mean, &p.scale}, {}, ref,
            [&] { return loss_of<double>(Gaussians<double>(p.view()), nullptr, grad); },
            "p " + param_text(pp) + " q N(0, I)");
      }
      for (const DiagParam qp : kParams) {
        DiagBatch<double> q = make_diag<double>(std::get<DiagSpec>(qs), qp);
        const Gaussians<double> pg(p.view()), qg(q.view());
        const RefGradients ref = reference_backward<double>(pg, &qg, grad);
        const auto loss = [&] {
          const Gaussians<double> qv(q.view());
          return loss_of<double>(Gaussians<double>(p.view()), &qv, grad);
        };
        check_oracle(
            {&p.mean, &p.scale}, {&q.mean, &q.scale}, ref, loss,
            "p " + param_text(pp) + " q " + param_text(qp) + (broadcast_p ? " p N = 1" : ""));
      }
    }
  }
}

TEST(GradientOracle, FullAgreesWithFiniteDifferencesOfReference) {
  Rng rng(112);
  const std::int64_t d = 3;
  const auto [ps, qs] = make_specs(rng, Data::random, Family::full, Family::full, 3, 1, d);
  const FullSpec& pspec = std::get<FullSpec>(ps);
  const FullSpec& qspec = std::get<FullSpec>(qs);
  const std::vector<double> grad = upstream<double>(3);
  // Forms: 0 scale_tril, 1 packed, 2 packed with log diagonals. For scale_tril the entries above
  // the diagonal are perturbed too: KL does not read them, and the oracle gives them 0.
  struct Side {
    FullBatch<double> tril;
    PackedBatch<double> packed;
    int form;
    FullGaussians<double> view() const { return form ? packed.view() : tril.view(); }
    std::vector<double>* scale() { return form ? &packed.packed : &tril.scale; }
    std::vector<double>* mean() { return form ? &packed.mean : &tril.mean; }
  };
  const auto make = [](const FullSpec& spec, int form) {
    Side s{{}, {}, form};
    if (form == 0) {
      s.tril = make_full<double>(spec, FullParam::scale_tril);
    } else {
      s.packed = pack<double>(spec.n, spec.d, spec.mean, spec.tril, form == 2);
    }
    return s;
  };
  for (int fp = 0; fp < 3; ++fp) {
    Side p = make(pspec, fp);
    {
      const Gaussians<double> pg(p.view());
      const RefGradients ref = reference_backward<double>(pg, nullptr, grad);
      check_oracle(
          {p.mean(), p.scale()}, {}, ref,
          [&] { return loss_of<double>(Gaussians<double>(p.view()), nullptr, grad); },
          "full p form " + std::to_string(fp) + " q N(0, I)");
    }
    for (int fq = 0; fq < 3; ++fq) {
      Side q = make(qspec, fq);  // N = 1: broadcast, its gradients summed
      const Gaussians<double> pg(p.view()), qg(q.view());
      const RefGradients ref = reference_backward<double>(pg, &qg, grad);
      const auto loss = [&] {
        const Gaussians<double> qv(q.view());
        return loss_of<double>(Gaussians<double>(p.view()), &qv, grad);
      };
      check_oracle({p.mean(), p.scale()}, {q.mean(), q.scale()}, ref, loss,
                   "full p form " + std::to_string(fp) + " q form " + std::to_string(fq));
    }
  }
}

// ---- the public operations against the oracle ----

template <class T>
struct Result {
  std::vector<T> p_mean, p_scale, q_mean, q_scale;
};

template <class T>
std::int64_t scale_elements(const Gaussians<T>& g) {
  if (const auto* diag = std::get_if<DiagGaussians<T>>(&g.variant())) {
    return diag->scale.shape[0] * diag->scale.shape[1];
  }
  const auto& full = std::get<FullGaussians<T>>(g.variant());
  return full.scale.shape[0] * full.scale.shape[1] * full.scale.shape[2];
}

// kl_backward (q given) or kl_standard_normal_backward into every gradient.
template <class T>
Result<T> backward(const Gaussians<T>& p, const Gaussians<T>* q, const std::vector<T>& grad,
                   const Options& options = {}) {
  Result<T> r{std::vector<T>(p.n() * p.d()), std::vector<T>(scale_elements(p)), {}, {}};
  if (q) {
    r.q_mean.resize(q->n() * q->d());
    r.q_scale.resize(scale_elements(*q));
    kl_backward(p, *q, grad, Gradients<T>{r.p_mean, r.p_scale}, Gradients<T>{r.q_mean, r.q_scale},
                options);
  } else {
    kl_standard_normal_backward(p, grad, Gradients<T>{r.p_mean, r.p_scale}, options);
  }
  return r;
}

template <class T>
void check(const Gaussians<T>& p, const Gaussians<T>* q, bool alike, bool exact_zero,
           const std::string& label) {
  const std::int64_t n = q ? broadcast_rows(p.n(), q->n()) : p.n();
  const std::vector<T> grad = upstream<T>(n);
  const RefGradients ref = reference_backward(p, q, std::span<const T>(grad));
  const Result<T> got = backward(p, q, grad);
  const std::pair<const std::vector<T>*, const RefArray*> arrays[] = {{&got.p_mean, &ref.p.mean},
                                                                      {&got.p_scale, &ref.p.scale},
                                                                      {&got.q_mean, &ref.q.mean},
                                                                      {&got.q_scale, &ref.q.scale}};
  const char* names[] = {"p.mean", "p.scale", "q.mean", "q.scale"};
  const std::string column = std::is_same_v<T, float> ? "f32" : "f64";
  for (int k = 0; k < (q ? 4 : 2); ++k) {
    const std::span<const T> values(*arrays[k].first);
    const double error = gradient_error(values, *arrays[k].second, Measure::terms);
    record_gradient_error("kl_backward", Measure::terms, names[k], column, error);
    EXPECT_LE(error, bar<T>()) << label << " " << names[k];
    if (alike) {
      const double near = gradient_error(values, *arrays[k].second, Measure::near);
      record_gradient_error("kl_backward", Measure::near, names[k], column, near);
      EXPECT_LE(near, bar<T>()) << label << " " << names[k] << " (near)";
    }
    if (exact_zero) {
      for (const T x : values)
        ASSERT_EQ(x, T(0)) << label << " " << names[k];
    }
  }
}

template <class T>
void check_diag(Rng& rng, Data data, std::int64_t n_p, std::int64_t n_q, std::int64_t d) {
  const auto [ps, qs] = make_specs(rng, data, Family::diag, Family::diag, n_p, n_q, d);
  for (const DiagParam pp : kParams) {
    const DiagBatch<T> p = make_diag<T>(std::get<DiagSpec>(ps), pp);
    const Gaussians<T> pg(p.view());
    const std::string label = name(data) + " p " + param_text(pp);
    check<T>(pg, nullptr, true, false, label + " q N(0, I)");
    for (const DiagParam qp : kParams) {
      const DiagBatch<T> q = make_diag<T>(std::get<DiagSpec>(qs), qp);
      const Gaussians<T> qg(q.view());
      check<T>(pg, &qg, pp == qp, data == Data::identical && pp == qp,
               label + " q " + param_text(qp));
    }
  }
}

TEST(KlBackward, DiagonalEveryParameterizationOnAllData) {
  Rng rng(113);
  for (const Data data : all_data()) {
    check_diag<float>(rng, data, 6, 6, 5);
    check_diag<double>(rng, data, 6, 6, 5);
  }
  // D up to 256, and N = 1 on either side.
  check_diag<float>(rng, Data::adversarial, 3, 3, 256);
  check_diag<double>(rng, Data::near_duplicate_1e8, 3, 3, 256);
  check_diag<double>(rng, Data::adversarial, 1, 7, 9);
  check_diag<float>(rng, Data::random, 7, 1, 9);
}

template <class T>
void check_full(Rng& rng, Data data, std::int64_t n_p, std::int64_t n_q, std::int64_t d) {
  const auto [ps, qs] = make_specs(rng, data, Family::full, Family::full, n_p, n_q, d);
  const FullBatch<T> p = make_full<T>(std::get<FullSpec>(ps), FullParam::scale_tril);
  const FullBatch<T> q = make_full<T>(std::get<FullSpec>(qs), FullParam::scale_tril);
  const Gaussians<T> pg(p.view()), qg(q.view());
  const std::string label = name(data) + " D " + std::to_string(d);
  check<T>(pg, nullptr, true, false, label + " q N(0, I)");
  check<T>(pg, &qg, true, data == Data::identical, label);
}

TEST(KlBackward, ScaleTrilOnAllData) {
  Rng rng(114);
  for (const Data data : all_data()) {
    for (const std::int64_t d : {1, 3, 16, 32}) {
      check_full<float>(rng, data, 4, 4, d);
      check_full<double>(rng, data, 4, 4, d);
    }
  }
  check_full<double>(rng, Data::adversarial, 1, 6, 5);
  check_full<float>(rng, Data::random, 6, 1, 5);
}

// Strided views read as contiguous ones (the same bits), whatever the thread count.
TEST(KlBackward, ReadsThroughStridesWithAnyThreadCount) {
  Rng rng(115);
  const auto [ds_p, ds_q] = make_specs(rng, Data::random, Family::diag, Family::diag, 300, 300, 70);
  const DiagBatch<float> p = make_diag<float>(std::get<DiagSpec>(ds_p), DiagParam::logvar);
  const DiagBatch<float> q = make_diag<float>(std::get<DiagSpec>(ds_q), DiagParam::precision);
  std::vector<float> s[4];
  const DiagGaussians<float> pv = p.view(), qv = q.view();
  const DiagGaussians<float> p_s{restrided(pv.mean, s[0]), restrided(pv.scale, s[1]), pv.param};
  const DiagGaussians<float> q_s{restrided(qv.mean, s[2]), restrided(qv.scale, s[3]), qv.param};
  const std::vector<float> grad = upstream<float>(300);
  const Gaussians<float> pg(pv), qg(qv), psg(p_s), qsg(q_s);
  const Result<float> plain = backward<float>(pg, &qg, grad, {.threads = 1});
  for (const int threads : {1, 2, 0}) {
    const Result<float> strided = backward<float>(psg, &qsg, grad, {.threads = threads});
    EXPECT_EQ(strided.p_mean, plain.p_mean) << threads;
    EXPECT_EQ(strided.p_scale, plain.p_scale) << threads;
    EXPECT_EQ(strided.q_mean, plain.q_mean) << threads;
    EXPECT_EQ(strided.q_scale, plain.q_scale) << threads;
  }
  const auto [fs_p, fs_q] = make_specs(rng, Data::random, Family::full, Family::full, 200, 200, 12);
  const FullBatch<double> fp = make_full<double>(std::get<FullSpec>(fs_p), FullParam::scale_tril);
  const FullBatch<double> fq = make_full<double>(std::get<FullSpec>(fs_q), FullParam::scale_tril);
  std::vector<double> t[4];
  const FullGaussians<double> fpv = fp.view(), fqv = fq.view();
  const FullGaussians<double> fp_s{restrided(fpv.mean, t[0]), restrided(fpv.scale, t[1]),
                                   FullParam::scale_tril};
  const FullGaussians<double> fq_s{restrided(fqv.mean, t[2]), restrided(fqv.scale, t[3]),
                                   FullParam::scale_tril};
  const std::vector<double> fgrad = upstream<double>(200);
  const Gaussians<double> fpg(fpv), fqg(fqv), fpsg(fp_s), fqsg(fq_s);
  const Result<double> fplain = backward<double>(fpg, &fqg, fgrad, {.threads = 1});
  for (const int threads : {1, 2, 0}) {
    const Result<double> strided = backward<double>(fpsg, &fqsg, fgrad, {.threads = threads});
    EXPECT_EQ(strided.p_scale, fplain.p_scale) << threads;
    EXPECT_EQ(strided.q_scale, fplain.q_scale) << threads;
    EXPECT_EQ(strided.q_mean, fplain.q_mean) << threads;
  }
}

// ---- input rules ----

TEST(KlBackward, InputRules) {
  const DiagBatch<double> p{3, 2, DiagParam::stddev, std::vector<double>(6, 0.0),
                            std::vector<double>(6, 1.0)};
  const DiagBatch<double> q = p;
  const Gaussians<double> pg(p.view()), qg(q.view());
  std::vector<double> g3(3, 1.0), g2(2, 1.0), six(6), five(5), full_scale(12);
  const Gradients<double> ok{six, six};
  // grad's size: the rows of the result.
  expect_invalid([&] { kl_backward(pg, qg, g2, ok, ok); },
                 {"[kl_backward]", "grad has 2 elements, expected 3"});
  expect_invalid([&] { kl_standard_normal_backward(pg, g2, ok); },
                 {"[kl_standard_normal_backward]", "grad has 2 elements, expected 3"});
  // Each gradient span: empty, or the array's size.
  expect_invalid(
      [&] {
        kl_backward(pg, qg, g3, Gradients<double>{five, six}, ok);
      },
      {"[kl_backward]", "p.mean", "5 elements, expected 6"});
  expect_invalid(
      [&] {
        kl_backward(pg, qg, g3, ok, Gradients<double>{six, five});
      },
      {"[kl_backward]", "q.scale", "5 elements, expected 6"});
  expect_invalid(
      [&] {
        kl_standard_normal_backward(pg, g3, Gradients<double>{six, five});
      },
      {"[kl_standard_normal_backward]", "p.scale"});
  // The forward's rules, under the backward's tag.
  DiagBatch<double> bad = p;
  bad.scale[3] = -0.5;
  expect_invalid([&] { kl_backward(Gaussians<double>(bad.view()), qg, g3, ok, ok); },
                 {"[kl_backward]", "-0.5"});
  expect_invalid([&] { kl_standard_normal_backward(Gaussians<double>(bad.view()), g3, ok); },
                 {"[kl_standard_normal_backward]", "-0.5"});
  const DiagBatch<double> wide{3, 3, DiagParam::stddev, std::vector<double>(9, 0.0),
                               std::vector<double>(9, 1.0)};
  expect_invalid([&] { kl_backward(pg, Gaussians<double>(wide.view()), g3, ok, ok); },
                 {"[kl_backward]"});
  // Families without library gradients, and mixed families.
  FullBatch<double> cov{3, 2, FullParam::covariance, std::vector<double>(6, 0.0),
                        std::vector<double>(12, 0.0)};
  for (std::int64_t i = 0; i < 3; ++i)
    cov.scale[i * 4] = cov.scale[i * 4 + 3] = 1;
  FullBatch<double> tril = cov;
  tril.param = FullParam::scale_tril;
  const LowRankBatch<double> low{3,
                                 2,
                                 1,
                                 std::vector<double>(6, 0.0),
                                 std::vector<double>(6, 0.5),
                                 std::vector<double>(6, 1.0)};
  const Gradients<double> full_ok{six, full_scale};
  expect_invalid(
      [&] {
        kl_backward(Gaussians<double>(cov.view()), Gaussians<double>(tril.view()), g3, full_ok,
                    full_ok);
      },
      {"[kl_backward]", "p is a covariance batch", "scale_tril or packed_scale_tril"});
  expect_invalid([&] { kl_standard_normal_backward(Gaussians<double>(low.view()), g3, ok); },
                 {"[kl_standard_normal_backward]", "p is a low-rank batch"});
  expect_invalid([&] { kl_backward(pg, Gaussians<double>(tril.view()), g3, ok, full_ok); },
                 {"[kl_backward]", "p is a diagonal batch and q a scale_tril one"});
  // Nothing is written when an input is rejected.
  std::vector<double> untouched(6, -7.0);
  const Gradients<double> marked{untouched, untouched};
  EXPECT_THROW(kl_backward(Gaussians<double>(bad.view()), qg, g3, marked, marked),
               std::invalid_argument);
  EXPECT_EQ(untouched, std::vector<double>(6, -7.0));
  // Options are checked as the forward's.
  expect_invalid([&] { kl_backward(pg, qg, g3, ok, ok, {.threads = -1}); }, {"[kl_backward]"});
}

TEST(KlBackward, EmptyBatches) {
  const DiagBatch<float> empty{0, 4, DiagParam::var, {}, {}};
  const DiagBatch<float> one{1, 4, DiagParam::var, {1, 2, 3, 4}, {1, 2, 3, 4}};
  std::vector<float> mean(4, -7.0f), scale(4, -7.0f);
  kl_backward(Gaussians<float>(one.view()), Gaussians<float>(empty.view()), {},
              Gradients<float>{mean, scale}, {});
  EXPECT_EQ(mean, std::vector<float>(4, 0.0f));  // a sum over no rows
  EXPECT_EQ(scale, std::vector<float>(4, 0.0f));
  kl_standard_normal_backward(Gaussians<float>(empty.view()), {}, {});
}

}  // namespace
}  // namespace gausskl::test
