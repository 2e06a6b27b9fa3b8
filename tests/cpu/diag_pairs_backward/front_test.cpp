// pairwise_kl_backward on diagonal batches against gradients computed independently: the
// direct per-pair formulas, summed over pairs in double (long double on small cases), on random
// and adversarial data, every parameterization on each side, q = p and q != p, grad all ones,
// a mean's 1 / (N M), positive and mixed-sign. Both of the backend's paths (closed forms for a
// grad of one value, the GEMM forms for any grad) run on every case, and a grad of one value is
// also given as that value (pairwise_kl_sum_backward). The bar, per element of each gradient array:
//   |g - ref| <= 1e-6 (|ref| + 1e-3 max |ref|), plus |ref| 2^-24 when the result is float.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "cpu/backend.hpp"
#include "cpu/diag_pairs_backward/gemm.hpp"
#include "cpu/diag_pairs_backward/operands.hpp"
#include "gausskl/gradients.hpp"
#include "support/batches.hpp"
#include "support/generators.hpp"

namespace gausskl {
namespace {

using test::DiagBatch;
using test::DiagSpec;
using test::Rng;

const DiagParam kParams[] = {DiagParam::stddev, DiagParam::var, DiagParam::logvar,
                             DiagParam::precision};

std::string param_text(DiagParam param) {  // (a std::string, to build labels with +)
  return param_name(param);
}

// Variance, precision and dv/dx of a scale value x given as `param`, in long double.
struct Scale {
  long double var, lam, dvar;
};
Scale scale_of(DiagParam param, long double x) {
  switch (param) {
    case DiagParam::stddev:
      return {x * x, 1 / (x * x), 2 * x};
    case DiagParam::var:
      return {x, 1 / x, 1};
    case DiagParam::logvar:
      return {std::exp(x), std::exp(-x), std::exp(x)};
    case DiagParam::precision:
      return {1 / x, x, -1 / (x * x)};
  }
  return {};
}

// The four gradient arrays, [n, d] each: dL/dmean and dL/dscale of p, then of q.
struct Grads {
  std::vector<double> p_mean, p_scale, q_mean, q_scale;
};

// The direct per-pair formulas, accumulated in Acc: for each pair (i, j) and dimension h, with
// s = mu - nu, dKL/dmu = lam s, dKL/dv = (lam - 1/v) / 2, dKL/dnu = -lam s,
// dKL/dw = lam (1 - lam (v + s^2)) / 2; then the chain rule to the given parameters. self: q is
// p and p's arrays get both sides.
template <class Acc, class T>
Grads reference(const DiagBatch<T>& p, const DiagBatch<T>& q, bool self, const std::vector<T>& g) {
  const std::int64_t n = p.n, m = q.n, d = p.d;
  std::vector<Acc> mu(n * d), v(n * d), ilv(n * d), nu(m * d), w(m * d), lam(m * d);
  std::vector<long double> dv_p(n * d), dv_q(m * d);
  for (std::int64_t x = 0; x < n * d; ++x) {
    const Scale s = scale_of(p.param, p.scale[x]);
    mu[x] = static_cast<Acc>(p.mean[x]);
    v[x] = static_cast<Acc>(s.var);
    ilv[x] = static_cast<Acc>(s.lam);
    dv_p[x] = s.dvar;
  }
  for (std::int64_t x = 0; x < m * d; ++x) {
    const Scale s = scale_of(q.param, q.scale[x]);
    nu[x] = static_cast<Acc>(q.mean[x]);
    w[x] = static_cast<Acc>(s.var);
    lam[x] = static_cast<Acc>(s.lam);
    dv_q[x] = s.dvar;
  }
  std::vector<Acc> gmu(n * d), gv(n * d), gnu(m * d), gw(m * d);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < m; ++j) {
      const Acc gij = static_cast<Acc>(g[i * m + j]);
      const Acc* mi = &mu[i * d];
      const Acc* vi = &v[i * d];
      const Acc* li = &ilv[i * d];
      const Acc* nj = &nu[j * d];
      const Acc* lj = &lam[j * d];
      Acc* gm = &gmu[i * d];
      Acc* gvi = &gv[i * d];
      Acc* gn = &gnu[j * d];
      Acc* gwj = &gw[j * d];
      for (std::int64_t h = 0; h < d; ++h) {
        const Acc s = mi[h] - nj[h];
        const Acc t = gij * lj[h];
        gm[h] += t * s;
        gvi[h] += gij * (lj[h] - li[h]) / 2;
        gn[h] -= t * s;
        gwj[h] += t * (1 - lj[h] * (vi[h] + s * s)) / 2;
      }
    }
  }
  Grads out;
  out.p_mean.resize(n * d);
  out.p_scale.resize(n * d);
  for (std::int64_t x = 0; x < n * d; ++x) {
    long double a = gmu[x], b = gv[x];
    if (self) {
      a += gnu[x];
      b += gw[x];
    }
    out.p_mean[x] = static_cast<double>(a);
    out.p_scale[x] = static_cast<double>(b * dv_p[x]);
  }
  if (!self) {
    out.q_mean.resize(m * d);
    out.q_scale.resize(m * d);
    for (std::int64_t x = 0; x < m * d; ++x) {
      out.q_mean[x] = static_cast<double>(gnu[x]);
      out.q_scale[x] = static_cast<double>(static_cast<long double>(gw[x]) * dv_q[x]);
    }
  }
  return out;
}

// The largest |g - ref| over the bar of the file's header (1 = at the bar).
template <class T>
double bar_ratio(const std::vector<T>& got, const std::vector<double>& ref) {
  if (got.size() != ref.size()) return INFINITY;
  double top = 0;
  for (const double r : ref)
    top = std::max(top, std::abs(r));
  const double rounding = std::is_same_v<T, float> ? 0x1p-24 : 0.0;
  double worst = 0;
  for (std::size_t x = 0; x < ref.size(); ++x) {
    const double g = static_cast<double>(got[x]);
    if (!std::isfinite(g)) return INFINITY;
    const double bar = 1e-6 * (std::abs(ref[x]) + 1e-3 * top) + rounding * std::abs(ref[x]);
    const double err = std::abs(g - ref[x]);
    if (err > 0) worst = std::max(worst, bar > 0 ? err / bar : INFINITY);
  }
  return worst;
}

// PyTorch users' check, torch.allclose(got, ref, rtol=1e-5, atol=1e-8) against float64 autograd
// of the direct formula: the largest |g - ref| / (1e-8 + 1e-5 |ref|).
template <class T>
double allclose_ratio(const std::vector<T>& got, const std::vector<double>& ref) {
  double worst = 0;
  for (std::size_t x = 0; x < ref.size(); ++x) {
    worst = std::max(
        worst, std::abs(static_cast<double>(got[x]) - ref[x]) / (1e-8 + 1e-5 * std::abs(ref[x])));
  }
  return worst;
}

enum class GradKind { ones, mean, positive, mixed, ones_but_diagonal };
std::string grad_name(GradKind kind) {
  switch (kind) {
    case GradKind::ones:
      return "ones";
    case GradKind::mean:
      return "mean";
    case GradKind::positive:
      return "positive";
    case GradKind::mixed:
      return "mixed";
    case GradKind::ones_but_diagonal:
      return "ones_but_diagonal";
  }
  return "?";
}

template <class T>
std::vector<T> make_grad(Rng& rng, GradKind kind, std::int64_t n, std::int64_t m) {
  std::vector<T> g(n * m, T(1));
  std::uniform_real_distribution<double> uniform(0, 1);
  std::normal_distribution<double> normal;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < m; ++j) {
      T& x = g[i * m + j];
      if (kind == GradKind::mean) x = static_cast<T>(1.0 / static_cast<double>(n * m));
      if (kind == GradKind::positive) x = static_cast<T>(uniform(rng));
      if (kind == GradKind::mixed) x = static_cast<T>(normal(rng));
      if (kind == GradKind::ones_but_diagonal && i == j) x = static_cast<T>(normal(rng));
    }
  }
  return g;
}

// The paths a test runs: the library's call (either of the backend's paths, as the grad's values
// say), the GEMM forms whatever the grad, and the library's call with the grad's one value.
enum class Path { library, gemm, sum };

template <class T>
struct Result {
  std::vector<T> p_mean, p_scale, q_mean, q_scale;
};

template <class T>
Result<T> run(Path path, const DiagBatch<T>& p, const DiagBatch<T>& q, bool self,
              const std::vector<T>& g, int threads = 0) {
  Result<T> r;
  r.p_mean.resize(p.n * p.d);
  r.p_scale.resize(p.n * p.d);
  if (!self) {
    r.q_mean.resize(q.n * q.d);
    r.q_scale.resize(q.n * q.d);
  }
  const Gradients<T> dp{r.p_mean, r.p_scale}, dq{r.q_mean, r.q_scale};
  const Options options{.threads = threads};
  if (path == Path::sum) {  // the grad's one value, as pairwise_kl_sum_backward takes it
    if (self) {
      pairwise_kl_sum_backward(Gaussians<T>(p.view()), g.at(0), dp, options);
    } else {
      pairwise_kl_sum_backward(Gaussians<T>(p.view()), Gaussians<T>(q.view()), g.at(0), dp, dq,
                               options);
    }
  } else if (path == Path::library) {
    if (self) {
      pairwise_kl_backward(Gaussians<T>(p.view()), std::span<const T>(g), dp, options);
    } else {
      pairwise_kl_backward(Gaussians<T>(p.view()), Gaussians<T>(q.view()), std::span<const T>(g),
                           dp, dq, options);
    }
  } else {  // the GEMM forms whatever the grad, as the backend runs them
    const auto pv = p.view(), qv = q.view();
    const std::vector<double> pc = cpu::mean_of_means(pv), qc = cpu::mean_of_means(qv);
    const auto& qs = self ? pv : qv;
    const double* qcentre = self ? pc.data() : qc.data();
    const cpu::CentredSides<T> sides{
        {pv, qcentre}, {qs, qcentre}, {pv, pc.data()}, {qs, pc.data()}, self};
    cpu::pairwise_backward_gemm(sides, g.data(), dp, dq, 2);
  }
  return r;
}

struct Ratios {
  double p_mean = 0, p_scale = 0, q_mean = 0, q_scale = 0;
  double worst() const { return std::max({p_mean, p_scale, q_mean, q_scale}); }
};

template <class T>
Ratios ratios(const Result<T>& got, const Grads& ref, bool self) {
  Ratios r{bar_ratio(got.p_mean, ref.p_mean), bar_ratio(got.p_scale, ref.p_scale), 0, 0};
  if (!self) {
    r.q_mean = bar_ratio(got.q_mean, ref.q_mean);
    r.q_scale = bar_ratio(got.q_scale, ref.q_scale);
  }
  return r;
}

// Adversarial pairs: means 1e3 + N(0, 1), standard deviations log-uniform in 1e-2 .. 1e2, q_j a
// near-duplicate of p_j (relative 1e-4), every fourth an exact copy.
std::pair<DiagSpec, DiagSpec> adversarial(Rng& rng, std::int64_t n, std::int64_t d) {
  const auto p = std::get<DiagSpec>(
      test::random_spec(rng, test::Family::diag, n, d, test::GenOptions{1e3, 1e-2, 1e2}));
  auto q = std::get<DiagSpec>(test::perturbed(rng, p, 1e-4));
  for (std::int64_t i = 0; i < n; i += 4) {
    std::copy(p.mean.begin() + i * d, p.mean.begin() + (i + 1) * d, q.mean.begin() + i * d);
    std::copy(p.stddev.begin() + i * d, p.stddev.begin() + (i + 1) * d, q.stddev.begin() + i * d);
  }
  return {p, q};
}

std::pair<DiagSpec, DiagSpec> random_pair(Rng& rng, std::int64_t n, std::int64_t m,
                                          std::int64_t d) {
  return {std::get<DiagSpec>(test::random_spec(rng, test::Family::diag, n, d)),
          std::get<DiagSpec>(test::random_spec(rng, test::Family::diag, m, d))};
}

// Every parameterization pair (q = p: every parameterization), every grad kind, both paths,
// against the double reference; returns the worst ratio per array over all of them.
template <class T>
Ratios check_all(const DiagSpec& ps, const DiagSpec& qs, bool self, const std::string& label,
                 std::uint64_t seed) {
  Rng rng(seed);
  Ratios worst;
  for (const DiagParam pp : kParams) {
    for (const DiagParam qp : kParams) {
      if (self && qp != pp) continue;
      const auto p = test::make_diag<T>(ps, pp);
      const auto q = test::make_diag<T>(self ? ps : qs, qp);
      for (const GradKind kind : {GradKind::ones, GradKind::mean, GradKind::positive,
                                  GradKind::mixed, GradKind::ones_but_diagonal}) {
        const auto g = make_grad<T>(rng, kind, p.n, q.n);
        const Grads ref = reference<double>(p, q, self, g);
        const bool one_value = kind == GradKind::ones || kind == GradKind::mean;
        for (const Path path : {Path::library, Path::gemm, Path::sum}) {
          if (path == Path::sum && !one_value) continue;
          const Ratios r = ratios(run(path, p, q, self, g), ref, self);
          worst.p_mean = std::max(worst.p_mean, r.p_mean);
          worst.p_scale = std::max(worst.p_scale, r.p_scale);
          worst.q_mean = std::max(worst.q_mean, r.q_mean);
          worst.q_scale = std::max(worst.q_scale, r.q_scale);
          EXPECT_LE(r.worst(), 1.0)
              << label << " p " << param_text(pp) << " q " << param_text(qp) << " grad "
              << grad_name(kind)
              << (path == Path::gemm  ? " gemm"
                  : path == Path::sum ? " sum"
                                      : " library")
              << ": ratios " << r.p_mean << " " << r.p_scale << " " << r.q_mean << " " << r.q_scale;
        }
      }
    }
  }
  std::printf("%-40s worst/bar: dp.mean %.3g dp.scale %.3g dq.mean %.3g dq.scale %.3g\n",
              label.c_str(), worst.p_mean, worst.p_scale, worst.q_mean, worst.q_scale);
  return worst;
}

TEST(PairwiseBackward, RandomData) {
  Rng rng(1);
  const auto [p, q] = random_pair(rng, 37, 53, 40);
  check_all<float>(p, q, false, "random f32 37x53 D40", 2);
  check_all<double>(p, q, false, "random f64 37x53 D40", 3);
  check_all<float>(p, p, true, "random f32 q=p 37 D40", 4);
  check_all<double>(p, p, true, "random f64 q=p 37 D40", 5);
}

TEST(PairwiseBackward, AdversarialData) {
  Rng rng(6);
  const auto [p, q] = adversarial(rng, 64, 48);
  check_all<float>(p, q, false, "adversarial f32 64x64 D48", 7);
  check_all<double>(p, q, false, "adversarial f64 64x64 D48", 8);
  check_all<float>(p, p, true, "adversarial f32 q=p 64 D48", 9);
  check_all<double>(p, p, true, "adversarial f64 q=p 64 D48", 10);
}

// Blocks of every loop: rows past kGemmMC, depth past kGemmKC, dimensions past one h-chunk.
TEST(PairwiseBackward, AcrossBlocks) {
  Rng rng(11);
  const auto [p, q] = adversarial(rng, 300, 270);
  Rng grng(12);
  for (const bool self : {false, true}) {
    const auto pb = test::make_diag<float>(p, DiagParam::stddev);
    const auto qb = self ? pb : test::make_diag<float>(q, DiagParam::logvar);
    const auto g = make_grad<float>(grng, GradKind::mixed, 300, 300);
    const Ratios r =
        ratios(run(Path::library, pb, qb, self, g), reference<double>(pb, qb, self, g), self);
    EXPECT_LE(r.worst(), 1.0) << self;
  }
  const auto [pr, qr] = random_pair(rng, 100, 300, 270);
  const auto pb = test::make_diag<double>(pr, DiagParam::var);
  const auto qb = test::make_diag<double>(qr, DiagParam::precision);
  const auto g = make_grad<double>(grng, GradKind::positive, 100, 300);
  const Ratios r =
      ratios(run(Path::library, pb, qb, false, g), reference<double>(pb, qb, false, g), false);
  EXPECT_LE(r.worst(), 1.0) << r.p_mean << " " << r.p_scale << " " << r.q_mean << " " << r.q_scale;
}

// Large D packs fewer rows of B at a time (kPackBlockBytes: one row at D = 20000, two at
// D = 6000), and rows past the last whole block of kPackRows (N = 37 with q = p on the GEMM
// path's two workers: 37 rows each, blocks of 16, 16 and 5).
TEST(PairwiseBackward, PackingBlocks) {
  Rng rng(13), grng(14);
  for (const std::int64_t d : {std::int64_t{20000}, std::int64_t{6000}}) {
    const auto [p, q] = adversarial(rng, 3, d);
    const auto pb = test::make_diag<float>(p, DiagParam::stddev);
    const auto qb = test::make_diag<float>(q, DiagParam::logvar);
    for (const bool self : {false, true}) {
      const auto& other = self ? pb : qb;
      const auto g = make_grad<float>(grng, GradKind::mixed, 3, 3);
      const Ratios r =
          ratios(run(Path::gemm, pb, other, self, g), reference<double>(pb, other, self, g), self);
      EXPECT_LE(r.worst(), 1.0) << "D " << d << " self " << self;
    }
  }
  const auto [pr, qr] = random_pair(rng, 37, 37, 24);
  const auto pb = test::make_diag<double>(pr, DiagParam::var);
  const auto g = make_grad<double>(grng, GradKind::mixed, 37, 37);
  const Ratios r =
      ratios(run(Path::gemm, pb, pb, true, g), reference<double>(pb, pb, true, g), true);
  EXPECT_LE(r.worst(), 1.0);
}

// The acceptance set at full size: N = M = 512, D = 1024, float32, both paths.
TEST(PairwiseBackward, AdversarialLarge) {
  Rng rng(13);
  const auto [ps, qs] = adversarial(rng, 512, 1024);
  Rng grng(14);
  for (const bool self : {false, true}) {
    const auto p = test::make_diag<float>(ps, DiagParam::stddev);
    const auto q =
        test::make_diag<float>(self ? ps : qs, self ? DiagParam::stddev : DiagParam::logvar);
    for (const GradKind kind : {GradKind::ones, GradKind::mixed}) {
      const auto g = make_grad<float>(grng, kind, 512, 512);
      const Grads ref = reference<double>(p, q, self, g);
      for (const Path path : {Path::library, Path::gemm}) {
        if (kind == GradKind::mixed && path == Path::gemm) continue;  // the same path
        const Result<float> got = run(path, p, q, self, g);
        const Ratios r = ratios(got, ref, self);
        double torch = std::max(allclose_ratio(got.p_mean, ref.p_mean),
                                allclose_ratio(got.p_scale, ref.p_scale));
        if (!self) {
          torch = std::max({torch, allclose_ratio(got.q_mean, ref.q_mean),
                            allclose_ratio(got.q_scale, ref.q_scale)});
        }
        EXPECT_LE(torch, 1.0) << "allclose(rtol=1e-5) " << self << " " << grad_name(kind);
        std::printf("allclose(rtol 1e-5, atol 1e-8) ratio %.3g\n", torch);
        std::printf("large f32 %s grad %s %s worst/bar: %.3g %.3g %.3g %.3g\n",
                    self ? "q=p" : "q!=p", grad_name(kind).c_str(),
                    path == Path::gemm ? "gemm" : "library", r.p_mean, r.p_scale, r.q_mean,
                    r.q_scale);
        EXPECT_LE(r.worst(), 1.0) << self << " " << grad_name(kind);
      }
    }
  }
}

// The double reference itself against the same sums in long double on a small adversarial case.
TEST(PairwiseBackward, ReferenceAgreesWithLongDouble) {
  Rng rng(15);
  const auto [ps, qs] = adversarial(rng, 12, 9);
  const auto p = test::make_diag<float>(ps, DiagParam::stddev);
  const auto q = test::make_diag<float>(qs, DiagParam::var);
  const auto g = make_grad<float>(rng, GradKind::mixed, 12, 12);
  const Grads a = reference<double>(p, q, false, g), b = reference<long double>(p, q, false, g);
  for (const auto& [x, y] : {std::pair{&a.p_mean, &b.p_mean}, std::pair{&a.p_scale, &b.p_scale},
                             std::pair{&a.q_mean, &b.q_mean}, std::pair{&a.q_scale, &b.q_scale}}) {
    for (std::size_t k = 0; k < x->size(); ++k)
      EXPECT_NEAR((*x)[k], (*y)[k], 1e-12 * (std::abs((*y)[k]) + 1)) << k;
  }
  // And the library on it, against the long-double sums.
  for (const Path path : {Path::library, Path::gemm})
    EXPECT_LE(ratios(run(path, p, q, false, g), b, false).worst(), 1.0);
}

// Bitwise the same results on 1 and 2 threads, on both paths (uniform grad: the mean's 1/(NM)),
// each large enough to start two workers.
TEST(PairwiseBackward, ThreadCountDoesNotMatter) {
  Rng rng(16);
  const auto [ps, qs] = adversarial(rng, 300, 300);
  const auto p = test::make_diag<float>(ps, DiagParam::logvar);
  const auto q = test::make_diag<float>(qs, DiagParam::stddev);
  for (const bool self : {false, true}) {
    std::vector<float> mean_grad(300 * 300, 1.0f / (300 * 300));
    for (const auto& g : {make_grad<float>(rng, GradKind::mixed, 300, 300), mean_grad}) {
      const Result<float> one = run(Path::library, p, q, self, g, 1);
      const Result<float> two = run(Path::library, p, q, self, g, 2);
      EXPECT_EQ(one.p_mean, two.p_mean);
      EXPECT_EQ(one.p_scale, two.p_scale);
      EXPECT_EQ(one.q_mean, two.q_mean);
      EXPECT_EQ(one.q_scale, two.q_scale);
    }
  }
}

// Inputs read through unusual strides (reversed rows, padded) give bitwise the contiguous
// results; gradients not asked for are not written, and the others are unchanged.
TEST(PairwiseBackward, StridesAndWantedSpans) {
  Rng rng(17);
  const auto [ps, qs] = random_pair(rng, 30, 20, 33);
  const auto p = test::make_diag<double>(ps, DiagParam::precision);
  const auto q = test::make_diag<double>(qs, DiagParam::var);
  for (const GradKind kind : {GradKind::ones, GradKind::mixed}) {
    const auto g = make_grad<double>(rng, kind, 30, 20);
    const Result<double> want = run(Path::library, p, q, false, g);
    std::vector<double> s1, s2, s3, s4;
    const DiagGaussians<double> pv{test::restrided(p.view().mean, s1),
                                   test::restrided(p.view().scale, s2), p.param};
    const DiagGaussians<double> qv{test::restrided(q.view().mean, s3),
                                   test::restrided(q.view().scale, s4), q.param};
    Result<double> got{std::vector<double>(30 * 33), std::vector<double>(30 * 33),
                       std::vector<double>(20 * 33), std::vector<double>(20 * 33)};
    pairwise_kl_backward(Gaussians<double>(pv), Gaussians<double>(qv), std::span<const double>(g),
                         Gradients<double>{got.p_mean, got.p_scale},
                         Gradients<double>{got.q_mean, got.q_scale});
    EXPECT_EQ(got.p_mean, want.p_mean);
    EXPECT_EQ(got.p_scale, want.p_scale);
    EXPECT_EQ(got.q_mean, want.q_mean);
    EXPECT_EQ(got.q_scale, want.q_scale);
    // One array at a time.
    for (int which = 0; which < 4; ++which) {
      std::vector<double> out(which < 2 ? 30 * 33 : 20 * 33, -7.0);
      Gradients<double> dp, dq;
      (which == 0 ? dp.mean : which == 1 ? dp.scale : which == 2 ? dq.mean : dq.scale) = out;
      pairwise_kl_backward(Gaussians<double>(p.view()), Gaussians<double>(q.view()),
                           std::span<const double>(g), dp, dq);
      const auto& expected = which == 0   ? want.p_mean
                             : which == 1 ? want.p_scale
                             : which == 2 ? want.q_mean
                                          : want.q_scale;
      EXPECT_EQ(out, expected) << which << " " << grad_name(kind);
    }
  }
}

// pairwise_kl_sum_backward rejects what pairwise_kl_backward rejects, with the same message, and
// writes nothing then.
TEST(PairwiseBackward, SumRules) {
  const auto message = [](auto&& call) {
    std::vector<double> untouched(6, -7.0);
    try {
      call(Gradients<double>{untouched, untouched});
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(untouched, std::vector<double>(6, -7.0));
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const DiagBatch<double> p{3, 2, DiagParam::stddev, std::vector<double>(6, 0.0),
                            std::vector<double>(6, 1.0)};
  DiagBatch<double> bad = p;
  bad.scale[3] = -0.5;
  const DiagBatch<double> wide{3, 3, DiagParam::stddev, std::vector<double>(9, 0.0),
                               std::vector<double>(9, 1.0)};
  const std::vector<double> ones(9, 1.0);
  std::vector<double> five(5);
  const DiagBatch<double>* const rejected[] = {&bad, &wide};  // a negative scale, D = 3
  for (const DiagBatch<double>* q : rejected) {
    const Gaussians<double> pg(p.view()), qg(q->view());
    const std::string want = message([&](const Gradients<double>& d) {
      pairwise_kl_backward(pg, qg, std::span(ones.data(), 3 * static_cast<std::size_t>(q->n)), d,
                           Gradients<double>{});
    });
    EXPECT_NE(want.find("[pairwise_kl_backward]"), std::string::npos) << want;
    EXPECT_EQ(message([&](const Gradients<double>& d) {
                pairwise_kl_sum_backward(pg, qg, 1.0, d, Gradients<double>{});
              }),
              want);
  }
  const Gaussians<double> bg(bad.view());
  EXPECT_EQ(message([&](const Gradients<double>& d) { pairwise_kl_sum_backward(bg, 1.0, d); }),
            message([&](const Gradients<double>& d) {
              pairwise_kl_backward(bg, std::span(ones.data(), 9), d);
            }));
  const Gaussians<double> pg(p.view());
  EXPECT_EQ(message([&](const Gradients<double>&) {
              pairwise_kl_sum_backward(pg, 1.0, Gradients<double>{five, {}});
            }),
            message([&](const Gradients<double>&) {
              pairwise_kl_backward(pg, std::span(ones.data(), 9), Gradients<double>{five, {}});
            }));
}

// One distribution on a side, one dimension.
TEST(PairwiseBackward, SmallShapes) {
  Rng rng(18);
  for (const auto& [n, m, d] : {std::tuple{1, 1, 1}, std::tuple{1, 7, 3}, std::tuple{5, 1, 2},
                                std::tuple{2, 2, 1}, std::tuple{13, 13, 5}}) {
    const auto [ps, qs] = random_pair(rng, n, m, d);
    const auto p = test::make_diag<double>(ps, DiagParam::stddev);
    const auto q = test::make_diag<double>(qs, DiagParam::logvar);
    for (const GradKind kind :
         {GradKind::ones, GradKind::mixed, GradKind::positive, GradKind::ones_but_diagonal}) {
      const auto g = make_grad<double>(rng, kind, n, m);
      for (const Path path : {Path::library, Path::gemm, Path::sum}) {
        if (path == Path::sum && kind != GradKind::ones) continue;
        EXPECT_LE(
            ratios(run(path, p, q, false, g), reference<double>(p, q, false, g), false).worst(),
            1.0)
            << n << "x" << m << " D" << d << " " << grad_name(kind);
        if (n == m) {
          EXPECT_LE(
              ratios(run(path, p, p, true, g), reference<double>(p, p, true, g), true).worst(), 1.0)
              << n << " D" << d << " q=p " << grad_name(kind);
        }
      }
    }
  }
}

}  // namespace
}  // namespace gausskl
