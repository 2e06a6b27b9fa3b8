// The oracle checked against values computed independently (mpmath at 40 digits, closed forms).
#include "core/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <iomanip>
#include <sstream>
#include <vector>

#include "support/batches.hpp"
#include "support/generators.hpp"

namespace gausskl::test {
namespace {

using reference::kl;

// EXPECT_NEAR would round to double.
::testing::AssertionResult close(long double got, long double expected, long double tolerance) {
  if (std::fabs(got - expected) <= tolerance) return ::testing::AssertionSuccess();
  std::ostringstream message;
  message << std::setprecision(21) << "got " << got << ", expected " << expected << ", tolerance "
          << tolerance;
  return ::testing::AssertionFailure() << message.str();
}

template <class T>
DiagBatch<T> published_p(DiagParam param = DiagParam::stddev) {
  return make_diag<T>({1, 3, {2, 4, 6}, {1, 2, 3}}, param);
}
template <class T>
DiagBatch<T> published_q(DiagParam param = DiagParam::stddev) {
  return make_diag<T>({1, 3, {3, 5, 8}, {1.5, 2.5, 4}}, param);
}

// The closed form of diagonal KL, in mpmath:
// python3 -c "from mpmath import mp,mpf,log; mp.dps=40; f=lambda v:map(mpf,v)
//   print(sum(log(b/a)+(a**2+(m-n)**2)/(2*b**2)-mpf(1)/2 for m,a,n,b in
//   zip(f([2,4,6]),f([1,2,3]),f([3,5,8]),f(['1.5','2.5','4']))))"
// (All inputs as mpf: with Python ints, 4/3 is computed in double and the 17th digit is wrong.)
constexpr long double kPublishedKl = 0.6669851763185995096279716562124555158945L;

TEST(Reference, PublishedDiagonalExample) {
  EXPECT_TRUE(close(kl<double>(published_p<double>().view(), 0, published_q<double>().view(), 0),
                    kPublishedKl, 1e-18L));
  EXPECT_TRUE(close(kl<float>(published_p<float>().view(), 0, published_q<float>().view(), 0),
                    kPublishedKl, 1e-18L));
}

// python3 -c "from mpmath import mp,mpf,log; mp.dps=40; f=lambda v:map(mpf,v)
//   print(sum((s**2+m**2-1-log(s**2))/2 for m,s in zip(f([2,4,6]),f([1,2,3]))))"
TEST(Reference, StandardNormalOfPublishedExample) {
  EXPECT_TRUE(close(reference::kl_standard_normal<double>(published_p<double>().view(), 0),
                    31.70824053077194499918752264161929772728L, 1e-17L));
}

// python3 -c "from mpmath import mp,mpf,matrix,log,det; mp.dps=40
//   Lp=matrix([[2,0,0],[mpf('0.5'),1,0],[mpf('-0.25'),mpf('0.75'),mpf('1.5')]])
//   Lq=matrix([[1,0,0],[mpf('-0.5'),2,0],[mpf('0.25'),mpf('0.5'),mpf('0.75')]])
//   S=Lp*Lp.T; T=Lq*Lq.T; d=matrix([1,-2,mpf('0.5')])-matrix([0,1,2]); Ti=T**-1
//   print((sum((Ti*S)[i,i] for i in range(3))+(d.T*Ti*d)[0]-3+log(det(T))-log(det(S)))/2)"
TEST(Reference, FullCovarianceExample) {
  const FullBatch<double> p{
      1, 3, FullParam::scale_tril, {1, -2, 0.5}, {2, 0, 0, 0.5, 1, 0, -0.25, 0.75, 1.5}};
  const FullBatch<double> q{
      1, 3, FullParam::scale_tril, {0, 1, 2}, {1, 0, 0, -0.5, 2, 0, 0.25, 0.5, 0.75}};
  EXPECT_TRUE(close(kl<double>(p.view(), 0, q.view(), 0),
                    5.966575041662276912804990100764045654147L, 1e-17L));
}

// Upper triangles of scale_tril must be ignored, and only the lower triangle of symmetric
// matrices read.
TEST(Reference, ReadsOnlyTheLowerTriangle) {
  const FullBatch<double> p{1, 2, FullParam::scale_tril, {1, 2}, {2, 0, 0.5, 1}};
  const FullBatch<double> q{1, 2, FullParam::covariance, {0, 0}, {3, 1, 1, 2}};
  FullBatch<double> p_junk = p, q_junk = q;
  p_junk.scale[1] = 7;
  q_junk.scale[1] = -9;
  EXPECT_EQ(kl<double>(p.view(), 0, q.view(), 0), kl<double>(p_junk.view(), 0, q_junk.view(), 0));
}

// python3 -c "from mpmath import mp,mpf,matrix,log,det,diag; mp.dps=40
//   Wp=matrix([[1,mpf('0.5')],[mpf('-0.5'),mpf('0.25')],[mpf('0.75'),-1]])
//   Wq=matrix([[mpf('0.25'),-1],[1,mpf('0.5')],[0,mpf('1.5')]])
//   S=Wp*Wp.T+diag([mpf('0.5'),1,mpf('0.25')]); T=Wq*Wq.T+diag([2,mpf('0.75'),1])
//   d=matrix([mpf('0.5'),-1,2])-matrix([-1,mpf('0.25'),1]); Ti=T**-1
//   print((sum((Ti*S)[i,i] for i in range(3))+(d.T*Ti*d)[0]-3+log(det(T))-log(det(S)))/2)"
TEST(Reference, LowRankExampleEqualsItsFullCovariance) {
  constexpr long double expected = 2.128633819854862305970006796146166253385L;
  const LowRankBatch<double> p{
      1, 3, 2, {0.5, -1, 2}, {1, 0.5, -0.5, 0.25, 0.75, -1}, {0.5, 1, 0.25}};
  const LowRankBatch<double> q{1, 3, 2, {-1, 0.25, 1}, {0.25, -1, 1, 0.5, 0, 1.5}, {2, 0.75, 1}};
  // W W^T + diag(d), exact in binary.
  const FullBatch<double> p_full{
      1,
      3,
      FullParam::covariance,
      p.mean,
      {1.75, -0.375, 0.25, -0.375, 1.3125, -0.625, 0.25, -0.625, 1.8125}};
  const FullBatch<double> q_full{1,
                                 3,
                                 FullParam::covariance,
                                 q.mean,
                                 {3.0625, -0.25, -1.5, -0.25, 2.0, 0.75, -1.5, 0.75, 3.25}};
  EXPECT_TRUE(close(kl<double>(p.view(), 0, q.view(), 0), expected, 1e-17L));
  EXPECT_TRUE(close(kl<double>(p_full.view(), 0, q_full.view(), 0), expected, 1e-17L));
  EXPECT_TRUE(close(kl<double>(p.view(), 0, q_full.view(), 0), expected, 1e-17L));
  EXPECT_TRUE(close(kl<double>(p_full.view(), 0, q.view(), 0), expected, 1e-17L));
}

TEST(Reference, SelfDivergenceIsZero) {
  Rng rng(1);
  for (const GenOptions& options : {GenOptions{}, kAdversarial})
    for (const Layout& layout : all_layouts()) {
      const Batch<double> b =
          make_batch<double>(random_spec(rng, layout.family, 4, 16, options), layout);
      for (std::int64_t i = 0; i < b.n(); ++i)
        EXPECT_TRUE(close(kl<double>(b.view(), i, b.view(), i), 0.0L, 1e-17L)) << name(layout);
    }
}

// The per-dimension closed form of the diagonal case, in long double.
long double closed_form(const DiagSpec& p, std::int64_t i, const DiagSpec& q, std::int64_t j) {
  long double sum = 0;
  for (std::int64_t h = 0; h < p.d; ++h) {
    const long double sp = p.stddev[i * p.d + h], sq = q.stddev[j * q.d + h];
    const long double dm = static_cast<long double>(p.mean[i * p.d + h]) - q.mean[j * q.d + h];
    sum += std::log(sq / sp) + (sp * sp + dm * dm) / (2 * sq * sq) - 0.5L;
  }
  return sum;
}

TEST(Reference, DiagonalMatchesClosedForm) {
  Rng rng(2);
  for (const GenOptions& options : {GenOptions{}, kAdversarial}) {
    const auto p = std::get<DiagSpec>(random_spec(rng, Family::diag, 3, 64, options));
    const auto q = std::get<DiagSpec>(random_spec(rng, Family::diag, 3, 64, options));
    const auto pb = make_diag<double>(p, DiagParam::stddev);
    const auto qb = make_diag<double>(q, DiagParam::stddev);
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 3; ++j) {
        const long double expected = closed_form(p, i, q, j);
        EXPECT_TRUE(close(kl<double>(pb.view(), i, qb.view(), j), expected,
                          1e-16L * (std::fabs(expected) + 1)));
      }
  }
}

// Different parameterizations of one distribution differ only by one rounding of each input.
TEST(Reference, ParameterizationsAgree) {
  Rng rng(3);
  for (const Family family : {Family::diag, Family::full}) {
    const Spec p = random_spec(rng, family, 2, 8);
    const Spec q = random_spec(rng, family, 2, 8);
    const Layout base{family};
    const long double expected =
        kl<double>(make_batch<double>(p, base).view(), 1, make_batch<double>(q, base).view(), 0);
    for (const Layout& lp : all_layouts())
      for (const Layout& lq : all_layouts()) {
        if (lp.family != family || lq.family != family) continue;
        const long double got =
            kl<double>(make_batch<double>(p, lp).view(), 1, make_batch<double>(q, lq).view(), 0);
        EXPECT_TRUE(close(got, expected, 1e-13L * (expected + 1)))
            << name(lp) << " vs " << name(lq);
      }
  }
}

// A diagonal Gaussian given as full (L = diag(s)) and as low rank (W = 0).
TEST(Reference, FamiliesAgreeOnTheSameDistribution) {
  Rng rng(4);
  const auto p = std::get<DiagSpec>(random_spec(rng, Family::diag, 1, 5));
  const auto q = std::get<DiagSpec>(random_spec(rng, Family::diag, 1, 5));
  const auto as_full = [](const DiagSpec& s) {
    FullSpec f{1, s.d, s.mean, std::vector<double>(s.d * s.d, 0.0)};
    for (std::int64_t h = 0; h < s.d; ++h)
      f.tril[h * s.d + h] = s.stddev[h];
    return make_full<double>(f, FullParam::scale_tril);
  };
  const auto as_lowrank = [](const DiagSpec& s) {
    LowRankSpec l{1, s.d, 1, s.mean, std::vector<double>(s.d, 0.0), {}};
    for (const double x : s.stddev)
      l.diag.push_back(x * x);
    return make_lowrank<double>(l);
  };
  const auto pd = make_diag<double>(p, DiagParam::stddev);
  const auto qd = make_diag<double>(q, DiagParam::stddev);
  const auto pf = as_full(p), qf = as_full(q);
  const auto pl = as_lowrank(p), ql = as_lowrank(q);
  const Gaussians<double> ps[] = {pd.view(), pf.view(), pl.view()};
  const Gaussians<double> qs[] = {qd.view(), qf.view(), ql.view()};
  const long double expected = closed_form(p, 0, q, 0);
  for (const auto& pg : ps)
    for (const auto& qg : qs)
      EXPECT_TRUE(close(kl<double>(pg, 0, qg, 0), expected, 1e-15L));
}

// Views are read through their strides: a column-major mean and a broadcast (stride 0) scale.
TEST(Reference, RespectsStrides) {
  const DiagBatch<double> p{2, 3, DiagParam::stddev, {1, 2, 3, 4, 5, 6}, {1, 2, 3, 1, 2, 3}};
  const std::vector<double> mean_t = {1, 4, 2, 5, 3, 6};
  const std::vector<double> scale_row = {1, 2, 3};
  const DiagGaussians<double> strided{
      {mean_t.data(), {2, 3}, {1, 2}}, {scale_row.data(), {2, 3}, {0, 1}}, DiagParam::stddev};
  const auto q = published_q<double>();
  for (std::int64_t i = 0; i < 2; ++i)
    EXPECT_EQ(kl<double>(strided, i, q.view(), 0), kl<double>(p.view(), i, q.view(), 0));
}

TEST(Reference, StandardNormalIsDivergenceFromIdentity) {
  Rng rng(5);
  const DiagBatch<double> std_normal{1, 6, DiagParam::stddev, std::vector<double>(6, 0.0),
                                     std::vector<double>(6, 1.0)};
  for (const Layout& layout : family_layouts()) {
    const Batch<double> p = make_batch<double>(random_spec(rng, layout.family, 2, 6), layout);
    for (std::int64_t i = 0; i < 2; ++i)
      EXPECT_EQ(reference::kl_standard_normal(p.view(), i),
                kl<double>(p.view(), i, std_normal.view(), 0));
  }
}

}  // namespace
}  // namespace gausskl::test
