// gausskl::divergence (every kind, every family pair) against the long-double reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "gausskl/ops.hpp"
#include "support/batches.hpp"
#include "support/generators.hpp"
#include "support/kinds.hpp"
#include "support/oracle.hpp"

namespace gausskl::test {
namespace {

template <class T, class U>
std::vector<U> run(const Kind& k, const Gaussians<T>& p, const Gaussians<T>& q) {
  std::vector<U> out(static_cast<std::size_t>(broadcast_rows(p.n(), q.n())));
  divergence(p, q, std::span<U>(out), options_of(k));
  return out;
}

// Float and double results within their bars of the reference; never negative, hellinger at
// most 1; exactly 0 when asked; a symmetric kind the same bits with p and q swapped. A renyi pair
// the reference finds not positive definite must be an error.
template <class T>
void check(const Kind& k, const Gaussians<T>& p, const Gaussians<T>& q, const std::string& row,
           bool exact_zero) {
  const std::vector<long double> ref = reference_divergence(k, p, q);
  const bool infinite =
      std::any_of(ref.begin(), ref.end(), [](long double x) { return std::isnan(x); });
  if (infinite) {
    EXPECT_THROW((run<T, double>(k, p, q)), std::invalid_argument) << name(k);
    return;
  }
  const auto f = run<T, float>(k, p, q);
  const auto d = run<T, double>(k, p, q);
  const std::string op = "divergence " + name(k);
  expect_within_bar<T, float>(op, row, std::span<const float>(f), ref);
  expect_within_bar<T, double>(op, row, std::span<const double>(d), ref);
  for (std::size_t i = 0; i < d.size(); ++i) {
    EXPECT_GE(d[i], 0.0) << name(k) << " row " << i;
    if (k.kind == Divergence::hellinger) {
      EXPECT_LE(d[i], 1.0) << "row " << i;
    }
    if (exact_zero) {
      EXPECT_EQ(d[i], 0.0) << name(k) << " row " << i;
    }
  }
  if (is_symmetric(k.kind)) {
    const auto swapped = run<T, double>(k, q, p);
    for (std::size_t i = 0; i < d.size(); ++i)
      EXPECT_EQ(swapped[i], d[i]) << name(k) << " swapped, row " << i;
  }
}

template <class T>
void check_all_layouts(Rng& rng, Data data, const Kind& k) {
  for (const Family fp : {Family::diag, Family::full, Family::lowrank})
    for (const Family fq : {Family::diag, Family::full, Family::lowrank}) {
      if (q_derived_from_p(data) && fp != fq) continue;
      const auto [ps, qs] = make_specs(rng, data, fp, fq, 5, 5, 5);
      for (const Layout& lp : all_layouts())
        for (const Layout& lq : all_layouts()) {
          if (lp.family != fp || lq.family != fq) continue;
          SCOPED_TRACE(name(k) + ", " + name(data) + ", p " + name(lp) + ", q " + name(lq));
          const Batch<T> p = make_batch<T>(ps, lp), q = make_batch<T>(qs, lq);
          const bool alike = name(lp) == name(lq);
          check<T>(k, p.view(), q.view(), pair_name(fp, fq), data == Data::identical && alike);
        }
    }
}

TEST(Divergence, AllKindsAllLayoutsOnAllData) {
  Rng rng(150);
  for (const Kind& k : all_kinds())
    for (const Data data : all_data()) {
      check_all_layouts<float>(rng, data, k);
      check_all_layouts<double>(rng, data, k);
    }
}

TEST(Divergence, Dimensions) {
  Rng rng(151);
  for (const Kind& k : all_kinds())
    for (const std::int64_t d : {1, 2, 17, 64})
      for (const Data data : all_data())
        for (const Layout& lp : family_layouts())
          for (const Layout& lq : family_layouts()) {
            if (q_derived_from_p(data) && lp.family != lq.family) continue;
            SCOPED_TRACE(name(k) + ", " + name(data) + ", D = " + std::to_string(d) + ", " +
                         name(lp) + " || " + name(lq));
            const auto [ps, qs] = make_specs(rng, data, lp.family, lq.family, 2, 2, d);
            const bool zero = data == Data::identical;
            const std::string row = pair_name(lp.family, lq.family);
            const Batch<double> pd = make_batch<double>(ps, lp), qd = make_batch<double>(qs, lq);
            check<double>(k, pd.view(), qd.view(), row, zero);
            const Batch<float> pf = make_batch<float>(ps, lp), qf = make_batch<float>(qs, lq);
            check<float>(k, pf.view(), qf.view(), row, zero);
          }
}

// D = 1024 for two diagonal sides, every diagonal parameterization (one row: the reference
// densifies to D x D).
TEST(Divergence, LargeDimensionDiagonal) {
  Rng rng(152);
  for (const Kind& k : all_kinds())
    for (const Data data : {Data::adversarial, Data::near_duplicate_1e8})
      for (const Layout& lp : all_layouts()) {
        if (lp.family != Family::diag) continue;
        SCOPED_TRACE(name(k) + ", " + name(data) + ", " + name(lp));
        const auto [ps, qs] = make_specs(rng, data, Family::diag, Family::diag, 1, 1, 1024);
        const Batch<float> pf = make_batch<float>(ps, lp), qf = make_batch<float>(qs, lp);
        check<float>(k, pf.view(), qf.view(), "diag/diag D=1024", data == Data::identical);
        const Batch<double> pd = make_batch<double>(ps, lp), qd = make_batch<double>(qs, lp);
        check<double>(k, pd.view(), qd.view(), "diag/diag D=1024", data == Data::identical);
      }
}

TEST(Divergence, BroadcastsASideWithOneRow) {
  Rng rng(153);
  for (const Kind& k : all_kinds())
    for (const Layout& lp : family_layouts())
      for (const Layout& lq : family_layouts())
        for (const auto& [n, m] : {std::pair{1, 4}, {4, 1}}) {
          SCOPED_TRACE(name(k) + ", " + name(lp) + " || " + name(lq));
          const auto [ps, qs] = make_specs(rng, Data::random, lp.family, lq.family, n, m, 4);
          const Batch<double> p = make_batch<double>(ps, lp), q = make_batch<double>(qs, lq);
          check<double>(k, p.view(), q.view(), pair_name(lp.family, lq.family), false);
        }
}

// Renyi tends to KL as alpha -> 1, from both sides.
TEST(Divergence, RenyiTendsToKl) {
  Rng rng(154);
  for (const Layout& l : family_layouts()) {
    const auto [ps, qs] = make_specs(rng, Data::random, l.family, l.family, 4, 4, 6);
    const Batch<double> p = make_batch<double>(ps, l), q = make_batch<double>(qs, l);
    std::vector<double> kl_values(4);
    kl(p.view(), q.view(), std::span<double>(kl_values));
    for (const double alpha : {1 - 1e-7, 1 + 1e-7}) {
      const auto r = run<double, double>({Divergence::renyi, alpha}, p.view(), q.view());
      for (std::size_t i = 0; i < r.size(); ++i)
        EXPECT_NEAR(r[i], kl_values[i], 1e-5 * (kl_values[i] + 1)) << name(l) << " " << alpha;
    }
  }
}

// Hand-checked values: one dimension, p = N(0, 1), q = N(1, 4).
TEST(Divergence, OneDimensionByHand) {
  const std::vector<double> pm{0}, ps{1}, qm{1}, qs{2};
  const DiagGaussians<double> p{contiguous<double, 2>(pm.data(), {1, 1}),
                                contiguous<double, 2>(ps.data(), {1, 1})};
  const DiagGaussians<double> q{contiguous<double, 2>(qm.data(), {1, 1}),
                                contiguous<double, 2>(qs.data(), {1, 1})};
  const auto one = [&](Kind k) { return run<double, double>(k, p, q)[0]; };
  const double kl_pq = 0.5 * (0.25 + 0.25 - 1 + std::log(4.0));
  const double kl_qp = 0.5 * (4 + 1 - 1 - std::log(4.0));
  EXPECT_NEAR(one({Divergence::jeffreys}), kl_pq + kl_qp, 1e-15);
  const double b = 0.25 * 1 / 5 + 0.5 * std::log(2.5 / 2);
  EXPECT_NEAR(one({Divergence::bhattacharyya}), b, 1e-15);
  EXPECT_NEAR(one({Divergence::hellinger}), 1 - std::exp(-b), 1e-15);
  EXPECT_NEAR(one({Divergence::wasserstein2}), 1 + 1, 1e-15);
  // alpha = 1/2: 1/2 * 1/2 * 1 / 2.5 + (log 2.5 - 1/2 log 1 - 1/2 log 4) / (2 * 1/2)
  EXPECT_NEAR(one({Divergence::renyi, 0.5}), 0.1 + std::log(2.5 / 2), 1e-15);
}

TEST(Divergence, RenyiNotPositiveDefiniteNamesThePair) {
  const auto [pb, qb] = renyi3_infinite_pair();
  const DiagGaussians<double> p = pb.view(), q = qb.view();
  std::vector<double> out(2, -1);
  try {
    divergence(p, q, std::span<double>(out), options_of({Divergence::renyi, 3}));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[divergence] the renyi divergence is infinite at row 1"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("pivot 2"), std::string::npos) << what;
  }
  EXPECT_EQ(out, std::vector<double>(2, -1));  // untouched
  // The same as full covariances: the pivot of the mixed covariance's factorization.
  std::vector<double> pl(18, 0.0), ql(18, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int h = 0; h < 3; ++h) {
      pl[i * 9 + h * 4] = pb.scale[i * 3 + h];
      ql[i * 9 + h * 4] = 1;
    }
  const FullGaussians<double> pf{contiguous<double, 2>(pb.mean.data(), {2, 3}),
                                 contiguous<double, 3>(pl.data(), {2, 3, 3})};
  const FullGaussians<double> qf{contiguous<double, 2>(qb.mean.data(), {2, 3}),
                                 contiguous<double, 3>(ql.data(), {2, 3, 3})};
  EXPECT_THROW(divergence(pf, qf, std::span<double>(out), options_of({Divergence::renyi, 3})),
               std::invalid_argument);
}

TEST(Divergence, OptionRules) {
  const std::vector<double> mean(2, 0.0), s(2, 1.0);
  const DiagGaussians<double> p{contiguous<double, 2>(mean.data(), {1, 2}),
                                contiguous<double, 2>(s.data(), {1, 2})};
  std::vector<double> out(1);
  const auto message = [&](Options o) -> std::string {
    try {
      divergence(p, p, std::span<double>(out), o);
    } catch (const OptionError& e) {
      return e.what();
    }
    return "";
  };
  for (const double alpha : {0.0, 1.0, -0.5, std::nan(""), HUGE_VAL}) {
    Options o;
    o.divergence = Divergence::renyi;
    o.alpha = alpha;
    EXPECT_NE(message(o).find("[divergence] options.alpha (the order of the renyi divergence) must "
                              "be finite and in (0, 1) or (1, inf), found"),
              std::string::npos)
        << alpha << ": " << message(o);
  }
  Options o;
  o.divergence = Divergence::jeffreys;
  o.alpha = 0.5;
  EXPECT_EQ(message(o),
            "[divergence] options.alpha is the order of the renyi divergence and must stay 0 "
            "(unset) for jeffreys, found 0.5");
  o.alpha = 0;
  // The KL operations take only kl.
  EXPECT_THROW(kl(Gaussians<double>(p), Gaussians<double>(p), std::span<double>(out), o),
               OptionError);
  std::vector<double> matrix(1);
  try {
    pairwise_kl(Gaussians<double>(p), std::span<double>(matrix), o);
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option(), "divergence");
    EXPECT_NE(std::string(e.what()).find("[pairwise_kl] options.divergence must be kl"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gausskl::test
