// The row-wise factor kernel of every compiled Highway target against the long-double
// reference (random and adversarial data, near-duplicates, p = q; D across the vector widths and
// tile edges; float and double input) and against the prepared path (prepare_one + two_kl);
// strided and broadcast input; diagonals at the ends of the accepted range. Factors given as
// scale_tril or packed_scale_tril (with and without log_diagonal) on either side.
#include "cpu/rowwise/ukr_full.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/pair/kl.hpp"
#include "cpu/pair/prepare.hpp"
#include "hwy/aligned_allocator.h"
#include "hwy/tests/hwy_gtest.h"
#include "support/batches.hpp"
#include "support/generators.hpp"
#include "support/oracle.hpp"

namespace gausskl::cpu {
namespace {

using test::Data;
using test::FullBatch;
using test::FullSpec;
using test::Rng;

// The kernel computes in double whatever the input, so it meets the float64 bar (1e-12) against
// the long-double reference for float input too, and agrees with the prepared path closer still.
constexpr double kBar = 1e-12;
constexpr double kAgreement = 1e-13;

template <class T>
std::vector<double> run(const FullGaussians<T>& p, const FullGaussians<T>& q, std::int64_t n) {
  const auto scratch =
      hwy::AllocateAligned<double>(static_cast<std::size_t>(rowwise_full_scratch(p.mean.shape[1])));
  std::vector<double> out(static_cast<std::size_t>(n), -1.0);
  // Two calls over a split of the rows: results must not depend on it.
  rowwise_full(p, q, 0, n / 3, out.data(), scratch.get());
  rowwise_full(p, q, n / 3, n, out.data(), scratch.get());
  return out;
}

// The same KL by the prepared path every other family pair takes.
template <class T>
std::vector<double> run_prepared(const FullGaussians<T>& p, const FullGaussians<T>& q,
                                 std::int64_t n) {
  const Gaussians<T> pg(p), qg(q);
  const Layout lp = layout_for(pg, false), lq = layout_for(qg, false);
  PreparedBatch bp(lp, 1), bq(lq, 1);
  std::vector<double> scratch(static_cast<std::size_t>(
      std::max(prepare_scratch_size(lp), prepare_scratch_size(lq)) + pair_scratch_size(lq)));
  std::vector<double> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_LT(prepare_one(pg, p.mean.shape[0] == 1 ? 0 : i, lp, bp.slot(0), scratch.data()).index,
              0);
    EXPECT_LT(prepare_one(qg, q.mean.shape[0] == 1 ? 0 : i, lq, bq.slot(0), scratch.data()).index,
              0);
    out[static_cast<std::size_t>(i)] = 0.5 * two_kl(bp.get(0), bq.get(0), scratch.data());
  }
  return out;
}

template <class T>
void check(const FullGaussians<T>& p, const FullGaussians<T>& q, bool exact_zero,
           const std::string& label) {
  const std::int64_t n = test::broadcast_rows(p.mean.shape[0], q.mean.shape[0]);
  const std::vector<long double> ref = test::reference_kl(Gaussians<T>(p), Gaussians<T>(q));
  const std::vector<double> got = run(p, q, n);
  const double error =
      test::max_error(std::span<const double>(got), std::span<const long double>(ref));
  test::record_error("rowwise_full kernel", "row-wise",
                     std::is_same_v<T, float> ? "f32 input" : "f64 input", error);
  EXPECT_LE(error, kBar) << label;
  EXPECT_LE(test::max_difference(got, run_prepared(p, q, n)), kAgreement) << label;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_GE(got[i], 0.0) << label << " row " << i;
    if (exact_zero) {
      ASSERT_EQ(got[i], 0.0) << label << " row " << i;
    }
  }
}

// How a side's factors are given: scale_tril, packed, packed with log_diagonal.
struct Form {
  FullParam param;
  bool log_diagonal;
  const char* name;
};
constexpr Form kForms[] = {{FullParam::scale_tril, false, "scale_tril"},
                           {FullParam::packed_scale_tril, false, "packed"},
                           {FullParam::packed_scale_tril, true, "packed/log"}};

template <class T>
FullBatch<T> batch_of(const test::Spec& spec, const Form& form) {
  return test::make_full<T>(std::get<FullSpec>(spec), form.param, form.log_diagonal);
}

// Every pair of forms. p = q gives exactly 0 when both sides hold the same values: the same form,
// or scale_tril against packed without logs (the same entries, staged alike).
template <class T>
void check_all(Rng& rng, std::int64_t n, std::int64_t d, const std::string& target) {
  for (const Data data : test::all_data()) {
    const auto [ps, qs] =
        test::make_specs(rng, data, test::Family::full, test::Family::full, n, n, d);
    for (const Form& fp : kForms)
      for (const Form& fq : kForms) {
        const FullBatch<T> p = batch_of<T>(ps, fp), q = batch_of<T>(qs, fq);
        const bool same_values = fp.log_diagonal == fq.log_diagonal;
        check<T>(p.view(), q.view(), data == Data::identical && same_values,
                 target + " " + test::name(data) + " D " + std::to_string(d) + " " + fp.name +
                     " || " + fq.name);
      }
  }
}

// A packed factor without logs reads as the same scale_tril: the same bits.
template <class T>
void check_packed_equals_tril(Rng& rng, std::int64_t d) {
  const auto [ps, qs] =
      test::make_specs(rng, Data::adversarial, test::Family::full, test::Family::full, 4, 4, d);
  const FullBatch<T> pt = batch_of<T>(ps, kForms[0]), qt = batch_of<T>(qs, kForms[0]);
  const FullBatch<T> pp = batch_of<T>(ps, kForms[1]), qp = batch_of<T>(qs, kForms[1]);
  const std::vector<double> tril = run(pt.view(), qt.view(), 4);
  EXPECT_EQ(run(pp.view(), qp.view(), 4), tril) << "D " << d;
  EXPECT_EQ(run(pt.view(), qp.view(), 4), tril) << "D " << d;
  EXPECT_EQ(run(pp.view(), qt.view(), 4), tril) << "D " << d;
}

// Packed factors (with and without logs) read through padded, backwards strides, and broadcast.
template <class T>
void check_packed_strided_and_broadcast(Rng& rng, std::int64_t d) {
  const auto [ps, qs] =
      test::make_specs(rng, Data::adversarial, test::Family::full, test::Family::full, 5, 5, d);
  for (const Form& fp : kForms)
    for (const Form& fq : kForms) {
      const std::string label = "D " + std::to_string(d) + " " + fp.name + " || " + fq.name;
      const FullBatch<T> p = batch_of<T>(ps, fp), q = batch_of<T>(qs, fq);
      const FullGaussians<T> pv = p.view(), qv = q.view();
      std::vector<T> s[6];
      const auto restrided = [&s](const FullGaussians<T>& g, int k) {
        FullGaussians<T> out = g;
        out.mean = test::restrided(g.mean, s[k]);
        if (g.param == FullParam::packed_scale_tril) {
          out.packed = test::restrided(g.packed, s[k + 1]);
        } else {
          out.scale = test::restrided(g.scale, s[k + 1]);
        }
        return out;
      };
      const FullGaussians<T> p_s = restrided(pv, 0), q_s = restrided(qv, 2);
      check<T>(p_s, q_s, false, label + " strided");
      EXPECT_EQ(run(p_s, q_s, 5), run(pv, qv, 5)) << label;
      // N = 1 on either side, and stride 0 (one row seen as five).
      FullGaussians<T> p1 = pv, q1 = qv, q0 = qv;
      p1.mean.shape[0] = p1.packed.shape[0] = p1.scale.shape[0] = 1;
      q1.mean.shape[0] = q1.packed.shape[0] = q1.scale.shape[0] = 1;
      q0.mean.strides[0] = q0.packed.strides[0] = q0.scale.strides[0] = 0;
      check<T>(p1, qv, false, label + " p N = 1");
      check<T>(pv, q1, false, label + " q N = 1");
      EXPECT_EQ(run(pv, q1, 5), run(pv, q0, 5)) << label;
    }
}

template <class T>
void check_strided_and_broadcast(Rng& rng) {
  for (const std::int64_t d : {1, 3, 17, 40}) {
    check_packed_strided_and_broadcast<T>(rng, d);
    const std::string label = "D " + std::to_string(d);
    const auto [ps, qs] =
        test::make_specs(rng, Data::adversarial, test::Family::full, test::Family::full, 5, 5, d);
    const FullBatch<T> p = test::make_full<T>(std::get<FullSpec>(ps), FullParam::scale_tril);
    const FullBatch<T> q = test::make_full<T>(std::get<FullSpec>(qs), FullParam::scale_tril);
    const FullGaussians<T> pv = p.view(), qv = q.view();
    std::vector<T> s[4];
    const FullGaussians<T> p_s{test::restrided(pv.mean, s[0]), test::restrided(pv.scale, s[1]),
                               FullParam::scale_tril};
    const FullGaussians<T> q_s{test::restrided(qv.mean, s[2]), test::restrided(qv.scale, s[3]),
                               FullParam::scale_tril};
    check<T>(p_s, q_s, false, label + " strided");
    // Same bits as contiguous: staging widens every entry to the same place.
    EXPECT_EQ(run(p_s, q_s, 5), run(pv, qv, 5)) << label;
    // N = 1 on either side, and stride 0 (one row seen as five).
    FullGaussians<T> p1 = pv, q1 = qv, q0 = qv;
    p1.mean.shape[0] = p1.scale.shape[0] = 1;
    q1.mean.shape[0] = q1.scale.shape[0] = 1;
    q0.mean.strides[0] = q0.scale.strides[0] = 0;
    check<T>(p1, qv, false, label + " p N = 1");
    check<T>(pv, q1, false, label + " q N = 1");
    EXPECT_EQ(run(pv, q1, 5), run(pv, q0, 5)) << label;
  }
}

class RowwiseFull : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(RowwiseFull);

TEST_P(RowwiseFull, ChosenTargetIsTheForcedOne) {
  EXPECT_STREQ(rowwise_full_target(), hwy::TargetName(GetParam()));
}

TEST_P(RowwiseFull, AllDataAgainstReference) {
  Rng rng(71);
  const std::string target = hwy::TargetName(GetParam());
  for (const std::int64_t d : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65}) {
    check_all<float>(rng, 3, d, target);
    check_all<double>(rng, 3, d, target);
  }
}

TEST_P(RowwiseFull, PackedWithoutLogsEqualsScaleTril) {
  Rng rng(73);
  for (const std::int64_t d : {1, 2, 5, 8, 9, 17, 33}) {
    check_packed_equals_tril<float>(rng, d);
    check_packed_equals_tril<double>(rng, d);
  }
}

TEST_P(RowwiseFull, StridedAndBroadcastInput) {
  Rng rng(72);
  check_strided_and_broadcast<float>(rng);
  check_strided_and_broadcast<double>(rng);
}

// Diagonals at the ends of the accepted range (squares in [1e-300, 1e300]): log ratios up to
// |r| ~ 1382, past the vector Expm1's range on the positive side, and factors whose solves span
// 300 decades.
TEST_P(RowwiseFull, ExtremeDiagonals) {
  const std::int64_t d = 9;
  const std::vector<double> diag_p = {1e-150, 1e150, 1e-100, 1e50, 2.0, 1e-3, 1.0, 7.0, 1e-150};
  for (const double dq : {1e150, 1e-150, 1.0}) {
    std::vector<double> lp(d * d, 0.0), lq(d * d, 0.0);
    for (std::int64_t k = 0; k < d; ++k) {
      lp[k * d + k] = diag_p[k];
      lq[k * d + k] = dq;
      if (k > 0) lp[k * d + k - 1] = 0.5 * diag_p[k], lq[k * d + k - 1] = 0.25 * dq;
    }
    if (dq == 1.0) {  // r = 2 log(e^344 / 1e-3) = 701.8: finite, past the vector Expm1's range
      lp[1 * d + 1] = std::exp(344.0), lq[1 * d + 1] = 1e-3, lp[3 * d + 3] = 1e100;
    }
    const FullBatch<double> p{1, d, FullParam::scale_tril, std::vector<double>(d, 1.0), lp};
    const FullBatch<double> q{1, d, FullParam::scale_tril, std::vector<double>(d, 0.5), lq};
    const std::string label = "diag_q " + std::to_string(dq);
    const std::vector<long double> ref =
        test::reference_kl(Gaussians<double>(p.view()), Gaussians<double>(q.view()));
    if (!std::isfinite(static_cast<double>(ref[0]))) {
      EXPECT_EQ(run(p.view(), q.view(), 1)[0], INFINITY) << label;
      continue;
    }
    check<double>(p.view(), q.view(), false, label);
  }
}

// Packed log diagonals at the ends of the accepted range (exp(2 x) in [1e-300, 1e300], so
// |x| <= 345.38), against q given each way: ratios up to e^690, solves spanning 300 decades. A KL
// beyond double's range is inf, as in ExtremeDiagonals. (With p and q swapped at x_q = +-345 the
// solve itself overflows, and every path, scale_tril included, gives NaN there: not tested.)
TEST_P(RowwiseFull, ExtremeLogDiagonals) {
  const std::int64_t d = 6, k = d * (d + 1) / 2;
  const std::vector<double> xs = {-345.38, 345.38, -230.0, 115.0, 0.0, -6.9};
  std::vector<double> packed(k, 0.0);
  for (std::int64_t r = 0, c = 0; r < d; ++r)
    for (std::int64_t s = 0; s <= r; ++s, ++c)
      packed[c] = s == r ? xs[r] : 0.5 * std::exp(xs[r]);
  const FullBatch<double> p{1,      d,   FullParam::packed_scale_tril, std::vector<double>(d, 1.0),
                            packed, true};
  for (const double xq : {345.0, -345.0, 0.0}) {
    std::vector<double> lq(d * d, 0.0), q_packed;
    for (std::int64_t r = 0; r < d; ++r) {
      lq[r * d + r] = std::exp(xq);
      if (r > 0) lq[r * d + r - 1] = 0.25 * std::exp(xq);
      for (std::int64_t s = 0; s <= r; ++s)
        q_packed.push_back(s == r ? xq : lq[r * d + s]);
    }
    const FullBatch<double> q{1, d, FullParam::scale_tril, std::vector<double>(d, 0.5), lq};
    const FullBatch<double> qp{1, d, FullParam::packed_scale_tril, q.mean, q_packed, true};
    for (const FullBatch<double>* qb : {&q, &qp}) {
      const std::string label = "x_q " + std::to_string(xq) + (qb == &q ? " tril" : " packed");
      const std::vector<long double> ref =
          test::reference_kl(Gaussians<double>(p.view()), Gaussians<double>(qb->view()));
      if (!std::isfinite(static_cast<double>(ref[0]))) {
        EXPECT_EQ(run(p.view(), qb->view(), 1)[0], INFINITY) << label;
        continue;
      }
      check<double>(p.view(), qb->view(), false, label);
      if (xq == 0.0) check<double>(qb->view(), p.view(), false, label + " swapped");
    }
  }
}

// Diagonal factors whose logs differ by tiny amounts: KL = 1/2 sum f(2 (x_p - x_q)) with
// f(r) = e^r - 1 - r, ~1e-14 here. With both diagonals given as logs the kernel takes x_p - x_q
// as given (exact), so KL keeps its relative accuracy even where L_kk = e^300, whose ratio
// through Exp and Log would carry an absolute error of ~1e-16 into each r. Measured (AVX3): 2e-17
// relative; the same factors as scale_tril (L_kk = exp(x) in double) 1.2e-9.
TEST_P(RowwiseFull, LogDiagonalsKeepTinyDivergencesRelativelyAccurate) {
  const std::vector<double> xp = {300.0, -300.0, 50.0, 0.0, 7.0, -1.0, 120.5};
  const std::vector<double> delta = {1e-7, -3e-8, 2e-7, 5e-8, -1e-7, 4e-8, 1.5e-7};
  const std::int64_t d = static_cast<std::int64_t>(xp.size());
  std::vector<double> lp(d * (d + 1) / 2, 0.0), lq(lp.size(), 0.0);
  long double want = 0;
  for (std::int64_t r = 0; r < d; ++r) {
    lp[r * (r + 3) / 2] = xp[r];
    lq[r * (r + 3) / 2] = xp[r] + delta[r];
    // f by its series: expm1(r) - r in long double would lose 13 digits to cancellation here.
    const long double r2 = 2 * (static_cast<long double>(xp[r]) - (xp[r] + delta[r]));  // exact
    want += r2 * r2 * (0.5L + r2 * (1 / 6.0L + r2 * (1 / 24.0L + r2 / 120))) / 2;
  }
  const std::vector<double> mean(d, 3.0);
  const FullBatch<double> p{1, d, FullParam::packed_scale_tril, mean, lp, true};
  const FullBatch<double> q{1, d, FullParam::packed_scale_tril, mean, lq, true};
  const double got = run(p.view(), q.view(), 1)[0];
  EXPECT_NEAR(got, static_cast<double>(want), 1e-15 * static_cast<double>(want));
  EXPECT_NEAR(run_prepared(p.view(), q.view(), 1)[0], static_cast<double>(want),
              1e-15 * static_cast<double>(want));
}

// Lq = [[2, 0], [1, 1]], Lp = [[4, 0], [3, 5]], delta = (2, 3): M = Lq^{-1} [delta | Lp] =
// [[1, 2, 0], [2, 1, 5]], so 2 KL = (1 + 4) + 1 + f(2 log 2) + f(2 log 5) with
// f(r) = e^r - 1 - r.
TEST_P(RowwiseFull, WorkedByHand) {
  const FullBatch<double> p{1, 2, FullParam::scale_tril, {3, 4}, {4, 0, 3, 5}};
  const FullBatch<double> q{1, 2, FullParam::scale_tril, {1, 1}, {2, 0, 1, 1}};
  const double want = 0.5 * (6 + (4 - 1 - 2 * std::log(2.0)) + (25 - 1 - 2 * std::log(5.0)));
  EXPECT_NEAR(run(p.view(), q.view(), 1)[0], want, 1e-14 * want);
  // The same factors packed (Lp's diagonal as logs) on either side.
  const FullBatch<double> pp{
      1, 2, FullParam::packed_scale_tril, {3, 4}, {std::log(4.0), 3, std::log(5.0)}, true};
  const FullBatch<double> qp{1, 2, FullParam::packed_scale_tril, {1, 1}, {2, 1, 1}};
  EXPECT_NEAR(run(pp.view(), qp.view(), 1)[0], want, 1e-14 * want);
  EXPECT_NEAR(run(p.view(), qp.view(), 1)[0], want, 1e-14 * want);
  EXPECT_NEAR(run(pp.view(), q.view(), 1)[0], want, 1e-14 * want);
}

}  // namespace
}  // namespace gausskl::cpu
