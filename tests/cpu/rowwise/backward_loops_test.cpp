// The row-wise gradients' driver (cpu::kl_rowwise_backward): the same bits for any thread count,
// with sides broadcast over many chunks of rows; those sums against the long-double oracle;
// a side with one row paired with none receives 0s; only the wanted spans are written. Packed
// factors are tested here, below the public API (whose validation of them is not in yet).
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/backend.hpp"
#include "cpu/tunables.hpp"
#include "support/batches.hpp"
#include "support/generators.hpp"
#include "support/gradient_oracle.hpp"

namespace gausskl::cpu {
namespace {

using test::Data;
using test::Measure;
using test::Rng;

// Owned gradient arrays for both sides, -7 where nothing was written.
template <class T>
struct Arrays {
  std::vector<T> p_mean, p_scale, q_mean, q_scale;

  Arrays(std::int64_t p_size, std::int64_t p_scale_size, std::int64_t q_size,
         std::int64_t q_scale_size)
      : p_mean(p_size, T(-7)),
        p_scale(p_scale_size, T(-7)),
        q_mean(q_size, T(-7)),
        q_scale(q_scale_size, T(-7)) {}
  Gradients<T> p() { return {p_mean, p_scale}; }
  Gradients<T> q() { return {q_mean, q_scale}; }
  bool operator==(const Arrays&) const = default;
};

template <class T>
std::int64_t scale_size(const Gaussians<T>& g) {
  if (const auto* diag = std::get_if<DiagGaussians<T>>(&g.variant())) {
    return diag->scale.shape[0] * diag->scale.shape[1];
  }
  const auto& full = std::get<FullGaussians<T>>(g.variant());
  const std::int64_t n = full.mean.shape[0], d = full.mean.shape[1];
  return full.param == FullParam::packed_scale_tril ? n * d * (d + 1) / 2 : n * d * d;
}

template <class T>
Arrays<T> run(const Gaussians<T>& p, const Gaussians<T>& q, const std::vector<T>& grad,
              int workers) {
  Arrays<T> out(p.n() * p.d(), scale_size(p), q.n() * q.d(), scale_size(q));
  const auto n = static_cast<std::int64_t>(grad.size());
  kl_rowwise_backward(p, &q, n, grad.data(), out.p(), out.q(), workers);
  return out;
}

template <class T>
std::vector<T> upstream(std::int64_t n) {
  std::vector<T> g(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    g[i] = static_cast<T>((i % 3 ? 1.0 : -0.5) * (1 + (i % 7) * 0.125));
  return g;
}

// A full batch in a given form: scale_tril, or packed (with log diagonals or not).
template <class T>
struct FullSide {
  test::FullBatch<T> tril;
  test::PackedBatch<T> packed;
  bool is_packed;
  FullGaussians<T> view() const { return is_packed ? packed.view() : tril.view(); }
};

template <class T>
FullSide<T> full_side(const test::FullSpec& spec, int form) {
  FullSide<T> s{{}, {}, form != 0};
  if (form == 0) {
    s.tril = test::make_full<T>(spec, FullParam::scale_tril);
  } else {
    s.packed = test::pack<T>(spec.n, spec.d, spec.mean, spec.tril, form == 2);
  }
  return s;
}

// Many chunks of rows (tunables.hpp; the last one partial), p broadcast (sums) and
// q not, or the other way round: every thread count gives the bits of one thread.
TEST(RowwiseBackward, SameBitsForAnyThreadCount) {
  Rng rng(101);
  const std::int64_t n = 11 * kRowwiseBackwardDiagChunk + 5;
  for (const bool p_once : {true, false}) {
    const auto [ps, qs] = test::make_specs(rng, Data::random, test::Family::diag,
                                           test::Family::diag, p_once ? 1 : n, p_once ? n : 1, 384);
    const test::DiagBatch<float> p =
        test::make_diag<float>(std::get<test::DiagSpec>(ps), DiagParam::logvar);
    const test::DiagBatch<float> q =
        test::make_diag<float>(std::get<test::DiagSpec>(qs), DiagParam::stddev);
    const std::vector<float> grad = upstream<float>(n);
    const Arrays<float> one = run<float>(p.view(), q.view(), grad, 1);
    for (const int threads : {2, 3, 8, 5})
      EXPECT_TRUE(run<float>(p.view(), q.view(), grad, threads) == one) << "diag " << threads;
  }
  for (const int form : {0, 1, 2}) {
    const auto [ps, qs] =
        test::make_specs(rng, Data::random, test::Family::full, test::Family::full, n, 1, 16);
    const FullSide<double> p = full_side<double>(std::get<test::FullSpec>(ps), form);
    const FullSide<double> q = full_side<double>(std::get<test::FullSpec>(qs), 2 - form);
    const std::vector<double> grad = upstream<double>(n);
    const Arrays<double> one = run<double>(p.view(), q.view(), grad, 1);
    for (const int threads : {2, 3, 8, 5}) {
      EXPECT_TRUE(run<double>(p.view(), q.view(), grad, threads) == one)
          << "full form " << form << " threads " << threads;
    }
  }
}

// The sums of a broadcast side over many chunks, against the oracle (whose terms are summed
// over the rows too): within the kernels' bar plus the sum's own roundings, about one per row.
TEST(RowwiseBackward, BroadcastSumsAgainstOracle) {
  Rng rng(102);
  const std::int64_t n = 5 * kRowwiseBackwardDiagChunk + 3;
  const auto [ps, qs] =
      test::make_specs(rng, Data::adversarial, test::Family::full, test::Family::full, 1, n, 7);
  for (const int form : {0, 1, 2}) {
    const FullSide<double> p = full_side<double>(std::get<test::FullSpec>(ps), form);
    const FullSide<double> q = full_side<double>(std::get<test::FullSpec>(qs), (form + 1) % 3);
    const Gaussians<double> pg(p.view()), qg(q.view());
    const std::vector<double> grad = upstream<double>(n);
    const test::RefGradients ref = test::reference_backward(pg, &qg, std::span<const double>(grad));
    const Arrays<double> got = run<double>(pg, qg, grad, 2);
    const double bar = 1e-13 + static_cast<double>(n) * 1.2e-16;
    const std::pair<const std::vector<double>*, const test::RefArray*> arrays[] = {
        {&got.p_mean, &ref.p.mean},
        {&got.p_scale, &ref.p.scale},
        {&got.q_mean, &ref.q.mean},
        {&got.q_scale, &ref.q.scale}};
    for (const auto& [values, oracle] : arrays) {
      EXPECT_LE(test::gradient_error(std::span<const double>(*values), *oracle, Measure::terms),
                bar)
          << "form " << form;
    }
  }
}

// A side with one row paired with none (the other side has N = 0): its gradients are sums over
// no rows, 0s; the empty side's spans are empty.
TEST(RowwiseBackward, BroadcastOverNoRowsGivesZeros) {
  const test::DiagBatch<double> p{1, 3, DiagParam::var, {1, 2, 3}, {1, 2, 3}};
  const test::DiagBatch<double> q{0, 3, DiagParam::var, {}, {}};
  const Arrays<double> got = run<double>(p.view(), q.view(), {}, 2);
  EXPECT_EQ(got.p_mean, std::vector<double>(3, 0.0));
  EXPECT_EQ(got.p_scale, std::vector<double>(3, 0.0));
  const test::FullBatch<float> fp{1, 2, FullParam::scale_tril, {1, 2}, {1, 0, 0.5, 2}};
  const test::FullBatch<float> fq{0, 2, FullParam::scale_tril, {}, {}};
  const Arrays<float> full = run<float>(fp.view(), fq.view(), {}, 2);
  EXPECT_EQ(full.p_mean, std::vector<float>(2, 0.0f));
  EXPECT_EQ(full.p_scale, std::vector<float>(4, 0.0f));
}

// Empty spans are not written; the others are written whole (nothing left at -7).
TEST(RowwiseBackward, OnlyWantedSpansAreWritten) {
  Rng rng(103);
  const auto [ps, qs] =
      test::make_specs(rng, Data::random, test::Family::full, test::Family::full, 3, 1, 5);
  const FullSide<float> p = full_side<float>(std::get<test::FullSpec>(ps), 0);
  const FullSide<float> q = full_side<float>(std::get<test::FullSpec>(qs), 2);
  const Gaussians<float> pg(p.view()), qg(q.view());
  const std::vector<float> grad = upstream<float>(3);
  Arrays<float> out(15, 75, 5, 15);
  const std::vector<float> untouched(15, -7.0f);
  kl_rowwise_backward<float>(pg, &qg, 3, grad.data(), Gradients<float>{{}, out.p_scale},
                             Gradients<float>{out.q_mean, {}}, 1);
  EXPECT_EQ(out.p_mean, untouched);
  EXPECT_EQ(out.q_scale, untouched);
  for (const float x : out.p_scale)
    EXPECT_NE(x, -7.0f);
  for (const float x : out.q_mean)
    EXPECT_NE(x, -7.0f);
  // Neither side wanted: nothing happens.
  kl_rowwise_backward<float>(pg, &qg, 3, grad.data(), {}, {}, 2);
}

}  // namespace
}  // namespace gausskl::cpu
