// gausskl::mixture_kl and mixture_kl_bounds: single Gaussians give KL, f = f gives 0, the bounds
// bracket KL computed by quadrature in one dimension, and bad weights are errors.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "gausskl/mixtures.hpp"
#include "gausskl/ops.hpp"

namespace gausskl::test {
namespace {

// M mixtures of C diagonal components in dimension D, owning their arrays.
struct DiagMixtures {
  std::int64_t m, c, d;
  std::vector<double> mean, std, weights;
  Mixtures<double> view() const {
    return {DiagGaussians<double>{contiguous<double, 2>(mean.data(), {m * c, d}),
                                  contiguous<double, 2>(std.data(), {m * c, d})},
            contiguous<double, 2>(weights.data(), {m, c})};
  }
};

double density(const DiagMixtures& f, double x) {
  double s = 0;
  for (std::int64_t a = 0; a < f.c; ++a) {
    const double z = (x - f.mean[a]) / f.std[a];
    s += f.weights[a] * std::exp(-0.5 * z * z) / (f.std[a] * std::sqrt(2 * std::numbers::pi));
  }
  return s;
}

// KL(f || g) in one dimension by the trapezoid rule on [-40, 40] in long double.
long double quadrature_kl(const DiagMixtures& f, const DiagMixtures& g) {
  const int n = 400000;
  const long double h = 80.0L / n;
  long double sum = 0;
  for (int i = 0; i <= n; ++i) {
    const double x = -40.0 + static_cast<double>(h * i);
    const long double p = density(f, x), q = density(g, x);
    if (p > 0) sum += (i == 0 || i == n ? 0.5L : 1.0L) * p * std::log(p / q);
  }
  return sum * h;
}

TEST(Mixtures, OneComponentEachIsKl) {
  const DiagMixtures f{2, 1, 3, {0, 1, 2, -1, 0.5, 3}, {1, 2, 0.5, 1.5, 1, 0.3}, {1, 1}};
  const DiagMixtures g{2, 1, 3, {1, 0, 0, 2, 2, 2}, {0.7, 1, 2, 1, 1, 1}, {1, 1}};
  std::vector<double> kl_values(2), out(2), lower(2), upper(2);
  kl(f.view().components, g.view().components, std::span<double>(kl_values));
  for (const MixtureMethod method :
       {MixtureMethod::variational, MixtureMethod::upper_bound, MixtureMethod::matched}) {
    mixture_kl(f.view(), g.view(), method, out);
    for (int i = 0; i < 2; ++i)
      EXPECT_NEAR(out[i], kl_values[i], 1e-12 * kl_values[i]) << i;
  }
  mixture_kl_bounds(f.view(), g.view(), lower, upper);
  for (int i = 0; i < 2; ++i) {
    EXPECT_LE(lower[i], kl_values[i] * (1 + 1e-12));
    EXPECT_NEAR(upper[i], kl_values[i], 1e-12 * kl_values[i]);
  }
}

TEST(Mixtures, SelfIsZero) {
  const DiagMixtures f{1, 3, 2, {0, 0, 1, 1, 3, -1}, {1, 2, 0.5, 1, 1, 0.2}, {0.2, 0.3, 0.5}};
  const Mixtures<double> v = f.view();
  std::vector<double> out(1);
  for (const MixtureMethod method : {MixtureMethod::variational, MixtureMethod::product}) {
    mixture_kl(v, v, method, out);
    EXPECT_EQ(out[0], 0.0);
  }
}

TEST(Mixtures, BoundsBracketQuadrature) {
  const DiagMixtures f{1, 2, 1, {-1, 2}, {0.5, 1.2}, {0.3, 0.7}};
  const DiagMixtures g{1, 3, 1, {0, 1, 4}, {1, 0.4, 2}, {0.5, 0.25, 0.25}};
  const double exact = static_cast<double>(quadrature_kl(f, g));
  std::vector<double> lower(1), upper(1);
  mixture_kl_bounds(f.view(), g.view(), lower, upper);
  EXPECT_LE(lower[0], exact);
  EXPECT_GE(upper[0], exact);
  EXPECT_NEAR(exact, 0.4203, 3e-3);  // gk.mixture_kl_mc, 10^6 samples: 0.42031 +- 0.00084
}

TEST(Mixtures, BadWeightsAreErrors) {
  DiagMixtures f{1, 2, 1, {0, 1}, {1, 1}, {0.5, 0.6}};
  std::vector<double> out(1);
  try {
    mixture_kl(f.view(), f.view(), MixtureMethod::variational, out);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[mixture_kl] f.weights must sum to 1"), std::string::npos)
        << e.what();
  }
  f.weights = {1.5, -0.5};
  EXPECT_THROW(mixture_kl(f.view(), f.view(), MixtureMethod::variational, out),
               std::invalid_argument);
  const DiagMixtures g{2, 1, 1, {0, 1}, {1, 1}, {1, 1}};
  std::vector<double> three(3);
  EXPECT_THROW(mixture_kl(g.view(), g.view(), MixtureMethod::variational, three),
               std::invalid_argument);  // out has M = 2 elements
}

}  // namespace
}  // namespace gausskl::test
