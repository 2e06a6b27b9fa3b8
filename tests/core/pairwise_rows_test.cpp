// gausskl::pairwise_kl_rows and the memory budget of the all-pairs ops: blocks in order, the
// same values whatever the block size, progress reported, sink errors propagated.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "core/plan.hpp"

#include "cpu/backend.hpp"

#include "gausskl/ops.hpp"
#include "support/allocations.hpp"
#include "support/batches.hpp"
#include "support/generators.hpp"

namespace gausskl::test {
namespace {

// A memory budget that leaves room for `rows` rows of `row_bytes` after the footprint of the
// plan for `threads` threads and `tolerance` (core/plan.hpp).
template <class T>
std::int64_t budget_for_rows(const Gaussians<T>& p, const std::type_identity_t<Gaussians<T>>* q,
                             bool knn, std::int64_t rows, std::int64_t row_bytes, int threads = 1,
                             double tolerance = 0) {
  Options options;
  options.threads = threads;
  options.tolerance = tolerance;
  const detail::PairsPlan plan = detail::plan_pairs(p, q, options);
  const cpu::PairsBytes bytes = cpu::PairsEngine<T>::footprint(p, q, plan.backend);
  const std::int64_t m = q ? q->n() : p.n();
  const std::int64_t selection =
      knn ? cpu::knn_block_bytes(m, bytes.pair_scratch, plan.backend.workers) : 0;
  return bytes.kept + bytes.work + selection + rows * row_bytes;
}

TEST(PairwiseKlRows, BlocksInOrderEqualTheWholeMatrixForAnyBudget) {
  Rng rng(40);
  std::vector<Layout> layouts = family_layouts();
  for (const Layout& packed : packed_layouts())
    layouts.push_back(packed);
  for (const Layout& layout : layouts) {
    SCOPED_TRACE(name(layout));
    const auto [ps, qs] = make_specs(rng, Data::random, layout.family, layout.family, 13, 7, 5);
    const Batch<double> p = make_batch<double>(ps, layout);
    const Batch<double> q = make_batch<double>(qs, layout);
    std::vector<double> whole(13 * 7);
    pairwise_kl(p.view(), q.view(), std::span<double>(whole));
    const Gaussians<double> qv = q.view();
    // A row of doubles: 8 * 7 bytes. Budgets of 1 row, 2 rows, 5 rows, and none.
    for (const std::int64_t rows : {1, 2, 5, 0}) {
      SCOPED_TRACE(rows);
      std::vector<double> streamed;
      std::vector<std::int64_t> progress;
      Options options;
      options.threads = 1;
      options.memory_budget =
          rows > 0 ? budget_for_rows(p.view(), &qv, false, rows, 8 * 7) + 8 * 7 - 1 : 0;
      options.progress = [&](std::int64_t done, std::int64_t total) {
        EXPECT_EQ(total, 13);
        progress.push_back(done);
      };
      pairwise_kl_rows(
          p.view(), &qv,
          RowSink<double>([&](std::int64_t first, std::int64_t count, std::span<const double> b) {
            EXPECT_EQ(first * 7, static_cast<std::int64_t>(streamed.size()));
            EXPECT_EQ(static_cast<std::int64_t>(b.size()), count * 7);
            streamed.insert(streamed.end(), b.begin(), b.end());
          }),
          options);
      EXPECT_EQ(streamed, whole);
      ASSERT_FALSE(progress.empty());
      EXPECT_EQ(progress.back(), 13);
      EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
      if (rows > 0) {
        EXPECT_EQ(static_cast<std::int64_t>(progress.size()), (13 + rows - 1) / rows);
      }
    }
  }
}

TEST(PairwiseKlRows, QByReferenceOrLeftOutAsPairwiseKl) {
  // The overloads without a pointer: q given by reference, and no q for q = p, each the same
  // matrix as pairwise_kl's, in float and in double.
  Rng rng(43);
  const auto [ps, qs] = make_specs(rng, Data::random, Family::diag, Family::full, 5, 4, 3);
  const Batch<double> p = make_batch<double>(ps, layout_of(Family::diag));
  const Batch<double> q = make_batch<double>(qs, layout_of(Family::full));
  std::vector<double> with_q(5 * 4), self(5 * 5);
  pairwise_kl(p.view(), q.view(), std::span<double>(with_q));
  pairwise_kl(p.view(), std::span<double>(self));

  std::vector<double> streamed;
  const RowSink<double> append([&](std::int64_t, std::int64_t, std::span<const double> b) {
    streamed.insert(streamed.end(), b.begin(), b.end());
  });
  pairwise_kl_rows(p.view(), q.view(), append);
  EXPECT_EQ(streamed, with_q);
  streamed.clear();
  pairwise_kl_rows(p.view(), append);
  EXPECT_EQ(streamed, self);

  std::vector<float> as_float;
  const RowSink<float> append_float([&](std::int64_t, std::int64_t, std::span<const float> b) {
    as_float.insert(as_float.end(), b.begin(), b.end());
  });
  std::vector<float> self_float(5 * 5);
  pairwise_kl(p.view(), std::span<float>(self_float));
  pairwise_kl_rows(p.view(), append_float);
  EXPECT_EQ(as_float, self_float);
}

TEST(PairwiseKlRows, SinkErrorsPropagate) {
  Rng rng(41);
  const auto [ps, qs] = make_specs(rng, Data::random, Family::diag, Family::diag, 4, 4, 3);
  const Batch<float> p = make_batch<float>(ps, layout_of(Family::diag));
  Options options;
  options.threads = 1;
  // One row per block: a row of doubles and its float copy.
  options.memory_budget = budget_for_rows(p.view(), nullptr, false, 1, 4 * (8 + 4));
  int calls = 0;
  EXPECT_THROW(
      pairwise_kl_rows(p.view(), nullptr,
                       RowSink<float>([&](std::int64_t, std::int64_t, std::span<const float>) {
                         if (++calls == 2) throw std::runtime_error("disk full");
                       }),
                       options),
      std::runtime_error);
  EXPECT_EQ(calls, 2);
}

TEST(PairwiseKlRows, NegativeBudgetIsAnError) {
  Rng rng(42);
  const auto [ps, qs] = make_specs(rng, Data::random, Family::diag, Family::diag, 2, 2, 2);
  const Batch<double> p = make_batch<double>(ps, layout_of(Family::diag));
  Options options;
  options.memory_budget = -1;
  std::vector<double> out(4);
  try {
    pairwise_kl(p.view(), std::span<double>(out), options);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[pairwise_kl] options.memory_budget"), std::string::npos);
  }
}

TEST(KnnKl, SameResultWhateverTheBudget) {
  Rng rng(43);
  for (const Family family : {Family::diag, Family::lowrank}) {
    const auto [ps, qs] = make_specs(rng, Data::near_duplicate_1e4, family, family, 11, 11, 6);
    const Batch<float> p = make_batch<float>(ps, layout_of(family));
    std::vector<std::int64_t> idx_all(11 * 4), idx_rows(11 * 4);
    std::vector<float> kl_all(11 * 4), kl_rows(11 * 4);
    knn_kl(p.view(), 4, idx_all, std::span<float>(kl_all));
    Options options;
    options.threads = 1;
    // One row per block: 11 doubles and the best 4.
    options.memory_budget = budget_for_rows(p.view(), nullptr, true, 1, 8 * (11 + 4));
    knn_kl(p.view(), 4, idx_rows, std::span<float>(kl_rows), options);
    EXPECT_EQ(idx_all, idx_rows);
    EXPECT_EQ(kl_all, kl_rows);
  }
}

// Thread start-up and similar bookkeeping the footprint does not count.
constexpr std::size_t kSlack = 16 << 10;

TEST(MemoryBudget, AllocationsPeakWithinTheBudget) {
  Rng rng(44);
  const std::int64_t n = 40, m = 30, d = 12;
  // Tolerance 1e-5 takes the float kernel on the diagonal path, with its own operands.
  for (const auto& [family, tolerance] :
       {std::pair{Family::diag, 0.0}, std::pair{Family::diag, 1e-5}, std::pair{Family::full, 0.0},
        std::pair{Family::full, 1e-5}, std::pair{Family::lowrank, 0.0}}) {
    SCOPED_TRACE(name(family) + ", tolerance " + std::to_string(tolerance));
    const auto [ps, qs] = make_specs(rng, Data::random, family, family, n, m, d);
    const Batch<float> p = make_batch<float>(ps, layout_of(family));
    const Batch<float> q = make_batch<float>(qs, layout_of(family));
    const Gaussians<float> qv = q.view();
    Options options;
    options.threads = 2;
    options.tolerance = tolerance;

    // pairwise_kl_rows to float: a row of doubles and its float copy per row; 3 rows a block.
    options.memory_budget = budget_for_rows(p.view(), &qv, false, 3, m * (8 + 4), 2, tolerance);
    double sum = 0;
    std::size_t peak = 0;
    {
      const CountAllocations count;
      pairwise_kl_rows(p.view(), &qv,
                       RowSink<float>([&](std::int64_t, std::int64_t, std::span<const float> b) {
                         for (float x : b)
                           sum += x;
                       }),
                       options);
      peak = count.peak_bytes();
    }
    EXPECT_GT(sum, 0);
    EXPECT_LE(peak, static_cast<std::size_t>(options.memory_budget) + kSlack);

    // knn_kl: a row of doubles and the best k per row.
    const std::int64_t k = 5;
    std::vector<std::int64_t> idx(n * k);
    std::vector<float> kl(n * k);
    options.memory_budget = budget_for_rows(p.view(), &qv, true, 3, 8 * (m + k), 2, tolerance);
    {
      const CountAllocations count;
      knn_kl(p.view(), qv, k, idx, std::span<float>(kl), options);
      peak = count.peak_bytes();
    }
    EXPECT_LE(peak, static_cast<std::size_t>(options.memory_budget) + kSlack);

    // Row-wise kl: whatever it allocates is what the budget must hold.
    std::vector<float> rowwise(std::min(n, m));
    const Batch<float> p_rows = make_batch<float>(
        make_specs(rng, Data::random, family, family, m, m, d).first, layout_of(family));
    options.memory_budget = cpu::rowwise_footprint(
        p_rows.view(), &qv, m, detail::plan_rowwise(p_rows.view(), &qv, m, options));
    rowwise.resize(m);
    {
      const CountAllocations count;
      gausskl::kl(p_rows.view(), qv, std::span<float>(rowwise), options);
      peak = count.peak_bytes();
    }
    EXPECT_LE(peak, static_cast<std::size_t>(options.memory_budget) + kSlack);
  }
}

TEST(MemoryBudget, TooSmallForOneRowIsAnErrorBeforeAnyWork) {
  Rng rng(45);
  const auto [ps, qs] = make_specs(rng, Data::random, Family::full, Family::diag, 6, 9, 4);
  const Batch<double> p = make_batch<double>(ps, layout_of(Family::full));
  const Batch<double> q = make_batch<double>(qs, layout_of(Family::diag));
  const Gaussians<double> qv = q.view();
  Options options;
  options.threads = 1;
  const std::int64_t enough = budget_for_rows(p.view(), &qv, false, 1, 8 * 9);
  int calls = 0;
  const RowSink<double> sink([&](std::int64_t, std::int64_t, std::span<const double>) { ++calls; });
  options.memory_budget = enough;
  pairwise_kl_rows(p.view(), &qv, sink, options);
  EXPECT_EQ(calls, 6);

  calls = 0;
  options.memory_budget = enough - 1;
  try {
    pairwise_kl_rows(p.view(), &qv, sink, options);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("[pairwise_kl] the memory budget ("), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("is too small"), std::string::npos) << e.what();
  }
  EXPECT_EQ(calls, 0);

  std::vector<std::int64_t> idx(6);
  std::vector<double> kl(6);
  options.memory_budget = 1;
  EXPECT_THROW(knn_kl(p.view(), qv, 1, idx, std::span<double>(kl), options), std::runtime_error);
  EXPECT_THROW(kl_standard_normal(p.view(), std::span<double>(kl), options), std::runtime_error);
}

}  // namespace
}  // namespace gausskl::test
