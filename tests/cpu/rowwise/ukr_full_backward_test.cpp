// The row-wise full-covariance backward kernel of every compiled Highway target against the
// long-double gradient oracle (support/gradient_oracle.hpp): scale_tril and packed_scale_tril
// (with and without log diagonals) on each side in every mix, and p against N(0, I); random and
// adversarial data, near-duplicates, p = q; float and double; D across the vector widths and
// tile edges; strided and broadcast input, sums for a broadcast side; only some gradients wanted.
#include "cpu/rowwise/ukr_full_backward.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "hwy/tests/hwy_gtest.h"
#include "support/batches.hpp"
#include "support/generators.hpp"
#include "support/gradient_oracle.hpp"
#include "support/oracle.hpp"

namespace gausskl::cpu {
namespace {

using test::Data;
using test::FullSpec;
using test::Measure;
using test::Rng;

// How a side's factor is given.
enum class Form { tril, packed, packed_log };
constexpr Form kForms[] = {Form::tril, Form::packed, Form::packed_log};

std::string form_name(Form f) {
  constexpr const char* names[] = {"scale_tril", "packed", "packed+log"};
  return names[static_cast<int>(f)];
}

// A batch in one form, owning its arrays.
template <class T>
struct Side {
  test::FullBatch<T> tril;
  test::PackedBatch<T> packed;
  Form form;

  FullGaussians<T> view() const { return form == Form::tril ? tril.view() : packed.view(); }
  std::int64_t scale_row(std::int64_t d) const {
    return form == Form::tril ? d * d : d * (d + 1) / 2;
  }
};

template <class T>
Side<T> make_side(const FullSpec& spec, Form form) {
  Side<T> s{{}, {}, form};
  if (form == Form::tril) {
    s.tril = test::make_full<T>(spec, FullParam::scale_tril);
  } else {
    s.packed = test::pack<T>(spec.n, spec.d, spec.mean, spec.tril, form == Form::packed_log);
  }
  return s;
}

// The bars of the measures (gradient_oracle.hpp) for T = double outputs. Per row the kernel runs
// two triangular solves of O(d) steps and a Gram product, each entry a sum of O(d) rounded terms
// the oracle's `terms` (or `near`) bound in magnitude, so errors of ~d u against them: 1e-13
// for D up to 65 (u = 1.1e-16). Float outputs add their rounding, 2^-24 = 6e-8 relative.
template <class T>
constexpr double bar() {
  return std::is_same_v<T, double> ? 1e-13 : 1.2e-7;
}

template <class T>
struct Got {
  std::vector<T> p_mean, p_scale, q_mean, q_scale;
};

// The kernel's gradients, in two calls over a split of the rows; sums for a side with one row
// broadcast over n != 1 rows. Unwanted arrays stay empty.
template <class T>
Got<T> run(const FullGaussians<T>& p, std::int64_t p_row, const FullGaussians<T>* q,
           std::int64_t q_row, std::int64_t n, const std::vector<T>& grad, bool want_p_scale = true,
           bool want_q_scale = true, bool want_means = true) {
  const std::int64_t d = p.mean.shape[1];
  Got<T> out;
  std::vector<double> sums[4];
  const auto sink = [&](std::vector<T>& dst, std::vector<double>& sum, std::int64_t rows,
                        std::int64_t row_size, bool wanted) {
    GradSink<T> s;
    if (!wanted) return s;
    dst.assign(static_cast<std::size_t>(rows * row_size), T(-7));  // no entry may keep -7
    if (rows == 1 && n != 1) {
      sum.assign(static_cast<std::size_t>(row_size), 0.0);
      s.sum = sum.data();
    } else {
      s.rows = dst.data();
    }
    return s;
  };
  const SideSinks<T> sp{sink(out.p_mean, sums[0], p.mean.shape[0], d, want_means),
                        sink(out.p_scale, sums[1], p.mean.shape[0], p_row, want_p_scale)};
  SideSinks<T> sq;
  if (q) {
    sq = {sink(out.q_mean, sums[2], q->mean.shape[0], d, want_means),
          sink(out.q_scale, sums[3], q->mean.shape[0], q_row, want_q_scale)};
  }
  const auto scratch =
      hwy::AllocateAligned<double>(static_cast<std::size_t>(rowwise_full_backward_scratch(d)));
  // Garbage in the scratch: the kernel must not read what it has not written.
  std::fill(scratch.get(), scratch.get() + rowwise_full_backward_scratch(d), std::nan(""));
  rowwise_full_backward(p, q, 0, n / 3, grad.data(), sp, sq, scratch.get());
  rowwise_full_backward(p, q, n / 3, n, grad.data(), sp, sq, scratch.get());
  std::vector<T>* dsts[4] = {&out.p_mean, &out.p_scale, &out.q_mean, &out.q_scale};
  for (int k = 0; k < 4; ++k) {
    if (!sums[k].empty()) {
      std::transform(sums[k].begin(), sums[k].end(), dsts[k]->begin(),
                     [](double x) { return static_cast<T>(x); });
    }
  }
  return out;
}

// The oracle of the pair named `key`, computed once: every target's test sees the same seeded
// data, and the long-double oracle costs more than the kernels.
template <class T>
const test::RefGradients& oracle(const Gaussians<T>& p, const Gaussians<T>* q,
                                 const std::vector<T>& grad, const std::string& key) {
  static std::map<std::string, test::RefGradients> cache;
  auto [it, added] = cache.try_emplace(key + (std::is_same_v<T, float> ? " f32" : " f64"));
  if (added) it->second = test::reference_backward(p, q, std::span<const T>(grad));
  return it->second;
}

template <class T>
std::vector<T> upstream(std::int64_t n) {
  std::vector<T> g(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    g[i] = static_cast<T>(i == 1 ? 0.0 : (i % 2 ? -1.0 : 1.0) * (0.25 + 0.5 * i));
  return g;
}

struct Expect {
  bool near = false;        // also within the bar against `near` (difference forms)
  bool exact_zero = false;  // every gradient exactly 0 (p = q)
};

template <class T>
void compare(const Got<T>& got, const test::RefGradients& ref, bool has_q, const Expect& expect,
             const std::string& label) {
  const std::pair<const std::vector<T>*, const test::RefArray*> arrays[] = {
      {&got.p_mean, &ref.p.mean},
      {&got.p_scale, &ref.p.scale},
      {&got.q_mean, &ref.q.mean},
      {&got.q_scale, &ref.q.scale}};
  const char* names[] = {"p.mean", "p.scale", "q.mean", "q.scale"};
  const std::string column = std::is_same_v<T, float> ? "f32" : "f64";
  for (int k = 0; k < (has_q ? 4 : 2); ++k) {
    if (arrays[k].first->empty()) continue;  // not wanted
    const std::span<const T> values(*arrays[k].first);
    const double error = test::gradient_error(values, *arrays[k].second, Measure::terms);
    test::record_gradient_error("rowwise_full_backward", Measure::terms, names[k], column, error);
    EXPECT_LE(error, bar<T>()) << label << " " << names[k];
    if (expect.near) {
      const double near = test::gradient_error(values, *arrays[k].second, Measure::near);
      test::record_gradient_error("rowwise_full_backward", Measure::near, names[k], column, near);
      EXPECT_LE(near, bar<T>()) << label << " " << names[k] << " (near)";
    }
    if (expect.exact_zero) {
      for (const T x : values)
        ASSERT_EQ(x, T(0)) << label << " " << names[k];
    }
  }
}

template <class T>
void check(const Side<T>& p, const Side<T>* q, std::int64_t n, const Expect& expect,
           const std::string& key, const std::string& target) {
  const std::string label = target + " " + key;
  const std::int64_t d = p.view().mean.shape[1];
  const std::vector<T> grad = upstream<T>(n);
  const FullGaussians<T> pv = p.view();
  const std::optional<FullGaussians<T>> qv =
      q ? std::optional<FullGaussians<T>>(q->view()) : std::nullopt;
  const Gaussians<T> pg(pv);
  const std::optional<Gaussians<T>> qg = qv ? std::optional<Gaussians<T>>(*qv) : std::nullopt;
  const test::RefGradients& ref = oracle(pg, qg ? &*qg : nullptr, grad, key);
  const Got<T> got = run(pv, p.scale_row(d), qv ? &*qv : nullptr, q ? q->scale_row(d) : 0, n, grad);
  compare(got, ref, q != nullptr, expect, label);
}

// Every mix of forms at small D; at larger D, where the forms only change how rows are read and
// written (covered by then), three mixes: the long-double oracle's O(D^3) cost dominates.
template <class T>
void check_all(Rng& rng, std::int64_t n, std::int64_t d, const std::string& target) {
  for (const Data data : test::all_data()) {
    const auto [ps, qs] =
        test::make_specs(rng, data, test::Family::full, test::Family::full, n, n, d);
    for (const Form fp : kForms) {
      const Side<T> p = make_side<T>(std::get<FullSpec>(ps), fp);
      const std::string key = test::name(data) + " D " + std::to_string(d) + " p " + form_name(fp);
      if (d <= 9 || fp == Form::tril)
        check<T>(p, nullptr, n, {true, false}, key + " q N(0, I)", target);
      for (const Form fq : kForms) {
        if (d > 9 && !(fp == fq ? fp != Form::packed : fp != Form::tril && fq != Form::tril)) {
          continue;
        }
        const Side<T> q = make_side<T>(std::get<FullSpec>(qs), fq);
        // Log diagonals on one side only are not given alike: D_kk = exp(a) - Lq_kk has the
        // rounding of exp(a) in it, which is small against the terms but not against near.
        const bool alike = (fp == Form::packed_log) == (fq == Form::packed_log);
        check<T>(p, &q, n, {alike, data == Data::identical && alike}, key + " q " + form_name(fq),
                 target);
      }
    }
  }
}

class RowwiseFullBackward : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(RowwiseFullBackward);

TEST_P(RowwiseFullBackward, ChosenTargetIsTheForcedOne) {
  EXPECT_STREQ(rowwise_full_backward_target(), hwy::TargetName(GetParam()));
}

// Strided views give the same bits as contiguous ones; a side with one row receives the sum over
// the rows; a row broadcast by stride 0 gives each row the gradient of its own pair.
template <class T>
void check_strided_and_broadcast(Rng& rng, const std::string& target) {
  for (const std::int64_t d : {1, 3, 9, 17}) {
    const auto [ps, qs] =
        test::make_specs(rng, Data::adversarial, test::Family::full, test::Family::full, 5, 5, d);
    for (const Form fp : kForms) {
      const Form fq = kForms[(static_cast<int>(fp) + 1) % 3];
      const std::string key = "D " + std::to_string(d) + " p " + form_name(fp) + " q " +
                              form_name(fq) + (std::is_same_v<T, float> ? " f32" : " f64");
      const Side<T> p = make_side<T>(std::get<FullSpec>(ps), fp);
      const Side<T> q = make_side<T>(std::get<FullSpec>(qs), fq);
      const FullGaussians<T> pv = p.view(), qv = q.view();
      const auto restride = [](const FullGaussians<T>& g, std::vector<T>(&s)[3]) {
        FullGaussians<T> out = g;
        out.mean = test::restrided(g.mean, s[0]);
        if (g.param == FullParam::packed_scale_tril) {
          out.packed = test::restrided(g.packed, s[1]);
        } else {
          out.scale = test::restrided(g.scale, s[2]);
        }
        return out;
      };
      std::vector<T> sp_[3], sq_[3];
      const FullGaussians<T> p_s = restride(pv, sp_), q_s = restride(qv, sq_);
      const std::vector<T> grad = upstream<T>(5);
      const std::int64_t pr = p.scale_row(d), qr = q.scale_row(d);
      const Got<T> contiguous = run(pv, pr, &qv, qr, 5, grad);
      const Got<T> strided = run(p_s, pr, &q_s, qr, 5, grad);
      EXPECT_EQ(strided.p_mean, contiguous.p_mean) << target << " " << key;
      EXPECT_EQ(strided.p_scale, contiguous.p_scale) << target << " " << key;
      EXPECT_EQ(strided.q_mean, contiguous.q_mean) << target << " " << key;
      EXPECT_EQ(strided.q_scale, contiguous.q_scale) << target << " " << key;
      const FullGaussians<T>* none = nullptr;
      EXPECT_EQ(run(p_s, pr, none, 0, 5, grad).p_scale, run(pv, pr, none, 0, 5, grad).p_scale)
          << target << " " << key;
      // N = 1 on either side (sums) and stride 0 (rows of their own), against the oracle.
      const bool alike = (fp == Form::packed_log) == (fq == Form::packed_log);
      const auto one_row = [](const Side<T>& side) {
        Side<T> out = side;
        out.tril.n = out.packed.n = 1;
        return out;
      };
      check<T>(one_row(p), &q, 5, {alike, false}, key + " p N = 1", target);
      check<T>(p, nullptr, 5, {true, false}, key + " q N(0, I)", target);
      const Side<T> q1 = one_row(q);
      check<T>(p, &q1, 5, {alike, false}, key + " q N = 1", target);
    }
  }
}

TEST_P(RowwiseFullBackward, StridedAndBroadcastInput) {
  Rng rng(92);
  const std::string target = hwy::TargetName(GetParam());
  check_strided_and_broadcast<float>(rng, target);
  check_strided_and_broadcast<double>(rng, target);
}

// Gradients not wanted are not written, and skipping their work leaves the others' bits as they
// are (the means alone take only the column delta through the solves).
TEST_P(RowwiseFullBackward, OnlyWantedGradientsAreWritten) {
  Rng rng(93);
  for (const std::int64_t d : {1, 4, 13}) {
    const auto [ps, qs] =
        test::make_specs(rng, Data::random, test::Family::full, test::Family::full, 6, 6, d);
    const Side<double> p = make_side<double>(std::get<FullSpec>(ps), Form::tril);
    const Side<double> q = make_side<double>(std::get<FullSpec>(qs), Form::packed_log);
    const FullGaussians<double> pv = p.view(), qv = q.view();
    const std::vector<double> grad = upstream<double>(6);
    const std::int64_t pr = p.scale_row(d), qr = q.scale_row(d);
    const Got<double> all = run(pv, pr, &qv, qr, 6, grad);
    const Got<double> p_scale = run(pv, pr, &qv, qr, 6, grad, true, false, false);
    const Got<double> q_scale = run(pv, pr, &qv, qr, 6, grad, false, true, false);
    const Got<double> means = run(pv, pr, &qv, qr, 6, grad, false, false, true);
    const std::string label = "D " + std::to_string(d);
    EXPECT_TRUE(p_scale.q_scale.empty() && p_scale.p_mean.empty()) << label;
    EXPECT_EQ(p_scale.p_scale, all.p_scale) << label;
    EXPECT_EQ(q_scale.q_scale, all.q_scale) << label;
    EXPECT_TRUE(means.p_scale.empty() && means.q_scale.empty()) << label;
    EXPECT_EQ(means.p_mean, all.p_mean) << label;
    EXPECT_EQ(means.q_mean, all.q_mean) << label;
  }
}

// In one dimension a full Gaussian is a diagonal one with L = std (the diagonal test's worked
// example: mu - nu = 3, Lp = 2, Lq = 4, dKL/dmu = 3 / 16, dKL/dLp = -3 / 8, dKL/dLq = 3 / 64),
// and a log diagonal a = log L gets dKL/dL * L.
TEST_P(RowwiseFullBackward, WorkedByHand) {
  for (const Form form : kForms) {
    const FullSpec ps{1, 1, {4.0}, {2.0}}, qs{1, 1, {1.0}, {4.0}};
    const Side<double> p = make_side<double>(ps, form), q = make_side<double>(qs, form);
    const FullGaussians<double> pv = p.view(), qv = q.view();
    const Got<double> got = run(pv, 1, &qv, 1, 1, {2.0});
    const double chain_p = form == Form::packed_log ? 2.0 : 1.0;
    const double chain_q = form == Form::packed_log ? 4.0 : 1.0;
    EXPECT_NEAR(got.p_mean[0], 2 * 3.0 / 16, 1e-15) << form_name(form);
    EXPECT_NEAR(got.q_mean[0], -2 * 3.0 / 16, 1e-15) << form_name(form);
    EXPECT_NEAR(got.p_scale[0], 2 * -3.0 / 8 * chain_p, 1e-15) << form_name(form);
    EXPECT_NEAR(got.q_scale[0], 2 * 3.0 / 64 * chain_q, 1e-15) << form_name(form);
  }
  // Against N(0, I) in two dimensions: dKL/dmu = mu, dKL/dL = L below the diagonal and
  // L_kk - 1 / L_kk on it, 0 above it.
  const test::FullBatch<double> p{1, 2, FullParam::scale_tril, {0.5, -1.5}, {2, 0, 0.25, 0.5}};
  const Got<double> got = run<double>(p.view(), 4, nullptr, 0, 1, {1.0});
  EXPECT_EQ(got.p_mean, (std::vector<double>{0.5, -1.5}));
  EXPECT_EQ(got.p_scale, (std::vector<double>{2 - 0.5, 0, 0.25, 0.5 - 2}));
}

// Diagonals at the ends of the accepted range (squares in [1e-300, 1e300]), every combination of
// 1e-150, 1e150, 1e-75 and 1 for p's and q's. In a row whose KL and exact gradients are all
// finite doubles, the kernel's gradients are finite and within the bar. Rows where an exact
// gradient overflows (dKL/dLq ~ |y|^2 / Lq_kk can, with KL ~ |y|^2 finite) are only counted:
// there a 0 coefficient meeting the overflow can make a neighbouring entry NaN
// (rowwise/ukr_full_backward.hpp).
TEST_P(RowwiseFullBackward, ExtremeDiagonals) {
  const std::int64_t d = 4;
  const std::vector<double> scales = {1e-150, 1e150, 1e-75, 1.0};
  const auto n = static_cast<std::int64_t>(scales.size());
  FullSpec ps{n * n, d, {}, {}}, qs{n * n, d, {}, {}};
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t r = 0; r < d; ++r) {
        ps.mean.push_back(0.5 * r), qs.mean.push_back(-0.25);
        for (std::int64_t c = 0; c < d; ++c) {
          ps.tril.push_back(c > r ? 0 : c == r ? scales[i] * (1 + 0.1 * r) : 0.3 * scales[i]);
          qs.tril.push_back(c > r ? 0 : c == r ? scales[j] : -0.2 * scales[j]);
        }
      }
    }
  int checked = 0;
  for (const Form fp : kForms) {
    for (const Form fq : kForms) {
      const Side<double> p = make_side<double>(ps, fp), q = make_side<double>(qs, fq);
      const FullGaussians<double> pv = p.view(), qv = q.view();
      const std::vector<double> grad(static_cast<std::size_t>(n * n), 1.0);
      const Gaussians<double> pg(pv), qg(qv);
      const test::RefGradients ref =
          test::reference_backward(pg, &qg, std::span<const double>(grad));
      const std::vector<long double> kl = test::reference_kl(pg, qg);
      const Got<double> got = run(pv, p.scale_row(d), &qv, q.scale_row(d), n * n, grad);
      const std::string label =
          std::string(hwy::TargetName(GetParam())) + " p " + form_name(fp) + " q " + form_name(fq);
      const std::pair<const std::vector<double>*, const test::RefArray*> arrays[] = {
          {&got.p_mean, &ref.p.mean},
          {&got.p_scale, &ref.p.scale},
          {&got.q_mean, &ref.q.mean},
          {&got.q_scale, &ref.q.scale}};
      constexpr long double kMax = std::numeric_limits<double>::max();
      for (std::int64_t row = 0; row < n * n; ++row) {
        bool finite = kl[row] <= kMax;
        for (const auto& [values, oracle] : arrays) {
          const std::size_t per_row = values->size() / static_cast<std::size_t>(n * n);
          for (std::size_t k = row * per_row; k < (row + 1) * per_row; ++k)
            finite = finite && std::fabs(oracle->value[k]) <= kMax;
        }
        if (!finite) continue;
        ++checked;
        for (const auto& [values, oracle] : arrays) {
          const std::size_t per_row = values->size() / static_cast<std::size_t>(n * n);
          for (std::size_t k = row * per_row; k < (row + 1) * per_row; ++k) {
            const double x = (*values)[k];
            const long double want = oracle->value[k];
            ASSERT_TRUE(std::isfinite(x)) << label << " entry " << k << " want " << want;
            const long double slack = 1e-13L * std::numeric_limits<double>::min();
            EXPECT_LE(std::fabs(x - want) - oracle->oracle[k],
                      1e-13L * (std::fabs(want) + oracle->terms[k]) + slack)
                << label << " entry " << k;
          }
        }
      }
    }
  }
  EXPECT_GE(checked, 9 * 8);  // most rows: the case is not vacuous
}

TEST_P(RowwiseFullBackward, AllDataAgainstOracle) {
  Rng rng(91);
  const std::string target = hwy::TargetName(GetParam());
  for (const std::int64_t d : {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32}) {
    check_all<float>(rng, 3, d, target);
    check_all<double>(rng, 3, d, target);
  }
}

}  // namespace
}  // namespace gausskl::cpu
