// The row-wise full-covariance backward kernel of every compiled Highway target against the
// long-double gradient oracle (support/gradient_oracle.hpp): scale_tril and packed_scale_tril
// (with and without log diagonals) on each side in every mix, and p against N(0, I); random and
// adversarial data, near-duplicates, p = q; float and double; D across the vector widths and
// tile edges; strided and broadcast input, sums for a broadcast side; only some gradients wanted.
#include "cpu/rowwise_full_backward.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
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
struct Run {
  std::vector<T> p_mean, p_scale, q_mean, q_scale;
};

// The kernel's gradients, in two calls over a split of the rows; sums for a side with one row
// broadcast over n != 1 rows. Unwanted arrays stay empty.
template <class T>
Run<T> run(const FullGaussians<T>& p, std::int64_t p_row, const FullGaussians<T>* q,
           std::int64_t q_row, std::int64_t n, const std::vector<T>& grad, bool want_p_scale = true,
           bool want_q_scale = true, bool want_means = true) {
  const std::int64_t d = p.mean.shape[1];
  Run<T> out;
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
void compare(const Run<T>& got, const test::RefGradients& ref, bool has_q, const Expect& expect,
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
  const Run<T> got = run(pv, p.scale_row(d), qv ? &*qv : nullptr, q ? q->scale_row(d) : 0, n, grad);
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
