// wasserstein2 between full covariances by symmetric factorizations (src/cpu/divergence/
// w2_trace.hpp): against the long-double reference (src/core/reference.cpp) at small D, against
// the closed form of S2 = T S1 T at larger D, and singular (positive semi-definite) covariances
// of integers against their exact integer answer.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/reference.hpp"
#include "gausskl/errors.hpp"
#include "gausskl/ops.hpp"

namespace gausskl::test {
namespace {

using Matrix = std::vector<long double>;  // d x d, row-major

Options w2_options(int threads = 0) {
  Options o;
  o.divergence = Divergence::wasserstein2;
  o.threads = threads;
  return o;
}

Matrix product(const Matrix& a, const Matrix& b, std::int64_t d) {
  Matrix c(static_cast<std::size_t>(d * d), 0.0L);
  for (std::int64_t i = 0; i < d; ++i)
    for (std::int64_t k = 0; k < d; ++k)
      for (std::int64_t j = 0; j < d; ++j)
        c[i * d + j] += a[i * d + k] * b[k * d + j];
  return c;
}

// A A^T / cols + shift I for A [d x cols] of standard normals.
Matrix random_spd(std::mt19937_64& rng, std::int64_t d, std::int64_t cols, long double shift) {
  std::normal_distribution<double> normal;
  std::vector<long double> a(static_cast<std::size_t>(d * cols));
  for (auto& x : a)
    x = normal(rng);
  Matrix s(static_cast<std::size_t>(d * d), 0.0L);
  for (std::int64_t i = 0; i < d; ++i)
    for (std::int64_t j = 0; j < d; ++j) {
      long double v = i == j ? shift : 0.0L;
      for (std::int64_t k = 0; k < cols; ++k)
        v += a[i * cols + k] * a[j * cols + k] / static_cast<long double>(cols);
      s[i * d + j] = v;
    }
  return s;
}

// Rows of distributions, each [d] mean and [d, d] covariance, in double.
struct Batch {
  explicit Batch(std::int64_t d_) : d(d_) {}
  std::int64_t n = 0, d = 0;
  std::vector<double> mean, cov;
  void add(const std::vector<double>& m, const Matrix& s) {
    mean.insert(mean.end(), m.begin(), m.end());
    for (long double x : s)
      cov.push_back(static_cast<double>(x));
    ++n;
  }
  FullGaussians<double> view() const {
    return {contiguous<double, 2>(mean.data(), {n, d}),
            contiguous<double, 3>(cov.data(), {n, d, d}), FullParam::covariance};
  }
};

std::vector<double> rowwise(const Batch& p, const Batch& q, int threads = 0) {
  std::vector<double> out(static_cast<std::size_t>(std::max(p.n, q.n)));
  divergence(p.view(), q.view(), std::span<double>(out), w2_options(threads));
  return out;
}

std::vector<double> random_mean(std::mt19937_64& rng, std::int64_t d) {
  std::normal_distribution<double> normal;
  std::vector<double> m(static_cast<std::size_t>(d));
  for (auto& x : m)
    x = normal(rng);
  return m;
}

TEST(Wasserstein2Full, AgreesWithTheLongDoubleReference) {
  std::mt19937_64 rng(36);
  for (const std::int64_t d : {17, 24, 40, 64}) {
    Batch p(d), q(d);
    for (int i = 0; i < 3; ++i) {
      p.add(random_mean(rng, d), random_spd(rng, d, d + 3, 0.05L));
      q.add(random_mean(rng, d), random_spd(rng, d, 2 * d, 0.2L));
    }
    const std::vector<double> got = rowwise(p, q);
    std::vector<double> all(static_cast<std::size_t>(9));
    pairwise(p.view(), q.view(), std::span<double>(all), w2_options());
    for (std::int64_t i = 0; i < 3; ++i) {
      const long double ref =
          reference::divergence(Divergence::wasserstein2, 0.0L, Gaussians<double>(p.view()), i,
                                Gaussians<double>(q.view()), i);
      EXPECT_LE(std::abs(got[i] - ref), 1e-12 * (ref + 1)) << "d " << d << " row " << i;
      for (std::int64_t j = 0; j < 3; ++j) {
        const long double rij =
            reference::divergence(Divergence::wasserstein2, 0.0L, Gaussians<double>(p.view()), i,
                                  Gaussians<double>(q.view()), j);
        EXPECT_LE(std::abs(all[i * 3 + j] - rij), 1e-12 * (rij + 1)) << d << " " << i << j;
      }
    }
    // Symmetric: the same bits with p and q swapped.
    EXPECT_EQ(rowwise(q, p), got) << d;
  }
}

TEST(Wasserstein2Full, NearDuplicatesKeepTheirDigits) {
  // Sigma_2 = Sigma_1 (1 + 1e-7): W2^2 = (1 - sqrt(1 + 1e-7))^2 tr Sigma_1 ~ 1e-15 tr Sigma_1,
  // which the trace form loses to cancellation (its error is ~1e-16 tr Sigma_1 and more); the
  // polar form keeps 7 digits of it here, and the error bar of every kind, 1e-12 (|D| + 1).
  std::mt19937_64 rng(7);
  const std::int64_t d = 32;
  const Matrix s = random_spd(rng, d, d + 1, 0.1L);
  Matrix s2 = s;
  for (auto& x : s2)
    x *= 1 + 1e-7L;
  const std::vector<double> m = random_mean(rng, d);
  Batch p(d), q(d);
  p.add(m, s);
  q.add(m, s2);
  long double trace = 0;
  for (std::int64_t i = 0; i < d; ++i)
    trace += static_cast<double>(s[i * d + i]);
  const long double ref =
      reference::divergence(Divergence::wasserstein2, 0.0L, Gaussians<double>(p.view()), 0,
                            Gaussians<double>(q.view()), 0);
  const double got = rowwise(p, q)[0];
  EXPECT_LE(std::abs(got - ref), 1e-6 * ref) << got << " " << static_cast<double>(ref);
  EXPECT_GT(ref, 0.0L);
  EXPECT_LT(ref, 1e-12L * trace);
}

// S2 = T S1 T for a symmetric positive definite T: W2^2 = |dm|^2 + tr((T - I) S1 (T - I)).
TEST(Wasserstein2Full, KnownAnswerAtLargerDimension) {
  std::mt19937_64 rng(2048);
  for (const std::int64_t d : {200, 300}) {
    const Matrix s1 = random_spd(rng, d, d, 0.1L);
    const Matrix t = random_spd(rng, d, d, 0.5L);
    const Matrix s2 = product(product(t, s1, d), t, d);
    Matrix tm = t;
    for (std::int64_t i = 0; i < d; ++i)
      tm[i * d + i] -= 1;
    const Matrix e = product(product(tm, s1, d), tm, d);
    std::vector<double> m1 = random_mean(rng, d), m2 = m1;
    long double want = 0;
    for (std::int64_t i = 0; i < d; ++i) {
      m2[i] += 0.01;
      want += e[i * d + i] + 0.01L * 0.01L;
    }
    Batch p(d), q(d);
    p.add(m1, s1);
    q.add(m2, s2);
    // The matrices were rounded to double: the answer is that of the rounded inputs to within
    // their rounding, far below the bar.
    for (const int threads : {1, 2}) {
      const double got = rowwise(p, q, threads)[0];
      EXPECT_LE(std::abs(got - want), 1e-9 * want) << "d " << d << " threads " << threads;
    }
  }
}

// Integers: A [d x r] with r < d gives S = A A^T of rank r, exactly representable, and with an
// integer T, S2 = T S T too, whose answer tr((T - I) S (T - I)) is an exact integer.
struct SingularCase {
  std::int64_t d, r;
  Matrix s1, s2;
  long double want;
};

SingularCase singular_case(std::mt19937_64& rng, std::int64_t d, std::int64_t r) {
  std::uniform_int_distribution<int> digit(-3, 3);
  Matrix a(static_cast<std::size_t>(d * r));
  for (auto& x : a)
    x = digit(rng);
  Matrix s(static_cast<std::size_t>(d * d), 0.0L);
  for (std::int64_t i = 0; i < d; ++i)
    for (std::int64_t j = 0; j < d; ++j)
      for (std::int64_t k = 0; k < r; ++k)
        s[i * d + j] += a[i * r + k] * a[j * r + k];
  // T = 3 I + B + B^T with B's entries in {0, 1} on a few off-diagonals: diagonally dominant.
  Matrix t(static_cast<std::size_t>(d * d), 0.0L);
  for (std::int64_t i = 0; i < d; ++i) {
    t[i * d + i] = 3;
    if (i + 1 < d) t[i * d + i + 1] = t[(i + 1) * d + i] = (i % 2);
  }
  SingularCase c{d, r, s, product(product(t, s, d), t, d), 0};
  Matrix tm = t;
  for (std::int64_t i = 0; i < d; ++i)
    tm[i * d + i] -= 1;
  const Matrix e = product(product(tm, s, d), tm, d);
  for (std::int64_t i = 0; i < d; ++i)
    c.want += e[i * d + i];
  return c;
}

TEST(Wasserstein2Full, PositiveSemiDefiniteCovariancesGiveTheExactValue) {
  std::mt19937_64 rng(5);
  for (const auto& [d, r] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{6, 2}, {20, 5}, {40, 39}, {64, 10}}) {
    const SingularCase c = singular_case(rng, d, r);
    const std::vector<double> m(static_cast<std::size_t>(d), 0.0);
    Batch p(d), q(d);
    p.add(m, c.s1);
    q.add(m, c.s2);
    const double got = rowwise(p, q)[0];
    EXPECT_LE(std::abs(got - c.want), 1e-10 * c.want) << "d " << d << " r " << r;
    EXPECT_EQ(rowwise(q, p)[0], got);
    EXPECT_EQ(rowwise(p, p)[0], 0.0);
  }
}

TEST(Wasserstein2Full, IndefiniteIsAnErrorNamingTheEigenvalue) {
  const std::int64_t d = 3;
  Batch p(d), q(d);
  const std::vector<double> m(3, 0.0);
  const Matrix good = {2, 0, 0, 0, 2, 0, 0, 0, 2};
  const Matrix bad = {1, 2, 0, 2, 1, 0, 0, 0, 1};  // eigenvalues 3, 1, -1
  p.add(m, good);
  p.add(m, good);
  q.add(m, good);
  q.add(m, bad);
  try {
    rowwise(p, q);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[divergence] q.scale (covariance) is not positive semi-definite at distribution "
              "1: eigenvalue -1 is negative beyond rounding (the largest is 3); to regularize, "
              "add eps to the diagonal only: C + eps * I");
    EXPECT_EQ(e.kind(), ErrorKind::not_positive_definite);
    EXPECT_EQ(e.index(), 1);
  }
  // Every other kind keeps rejecting a singular covariance as not positive definite.
  Batch s(d);
  s.add(m, Matrix{1, 1, 0, 1, 1, 0, 0, 0, 1});
  Batch g(d);
  g.add(m, good);
  std::vector<double> out(1);
  Options o;
  o.divergence = Divergence::bhattacharyya;
  EXPECT_THROW(divergence(s.view(), g.view(), std::span<double>(out), o), NotPositiveDefiniteError);
  divergence(s.view(), g.view(), std::span<double>(out), w2_options());
  // tr S + tr G - 2 tr (S^1/2 G S^1/2)^1/2 = 3 + 6 - 2 sqrt 2 (sqrt 2 + 1) = 5 - 2 sqrt 2.
  EXPECT_NEAR(out[0], 5 - 2 * std::sqrt(2.0), 1e-14);
}

}  // namespace
}  // namespace gausskl::test
