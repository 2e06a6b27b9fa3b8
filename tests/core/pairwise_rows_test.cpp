// gausskl::pairwise_kl_rows and the memory budget of the all-pairs ops: blocks in order, the
// same values whatever the block size, progress reported, sink errors propagated.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <stdexcept>
#include <vector>

#include "gausskl/ops.hpp"
#include "support/batches.hpp"
#include "support/generators.hpp"

namespace gausskl::test {
namespace {

TEST(PairwiseKlRows, BlocksInOrderEqualTheWholeMatrixForAnyBudget) {
  Rng rng(40);
  for (const Family family : {Family::diag, Family::full, Family::lowrank}) {
    const auto [ps, qs] = make_specs(rng, Data::random, family, family, 13, 7, 5);
    const Batch<double> p = make_batch<double>(ps, layout_of(family));
    const Batch<double> q = make_batch<double>(qs, layout_of(family));
    std::vector<double> whole(13 * 7);
    pairwise_kl(p.view(), q.view(), std::span<double>(whole));
    const Gaussians<double> qv = q.view();
    // 8 bytes per double: budgets of 1 row, 2 rows, 5 rows and everything.
    for (const std::int64_t budget : {1, 8 * 7 * 2, 8 * 7 * 5, 0}) {
      SCOPED_TRACE(budget);
      std::vector<double> streamed;
      std::vector<std::int64_t> progress;
      Options options;
      options.memory_budget = budget;
      options.progress = [&](std::int64_t done, std::int64_t total) {
        EXPECT_EQ(total, 13);
        progress.push_back(done);
      };
      pairwise_kl_rows(
          p.view(), &qv,
          RowSink<double>([&](std::int64_t first, std::int64_t rows, std::span<const double> b) {
            EXPECT_EQ(first * 7, static_cast<std::int64_t>(streamed.size()));
            EXPECT_EQ(static_cast<std::int64_t>(b.size()), rows * 7);
            streamed.insert(streamed.end(), b.begin(), b.end());
          }),
          options);
      EXPECT_EQ(streamed, whole);
      ASSERT_FALSE(progress.empty());
      EXPECT_EQ(progress.back(), 13);
      EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
      if (budget == 1) {
        EXPECT_EQ(progress.size(), 13u);
      }
    }
  }
}

TEST(PairwiseKlRows, SinkErrorsPropagate) {
  Rng rng(41);
  const auto [ps, qs] = make_specs(rng, Data::random, Family::diag, Family::diag, 4, 4, 3);
  const Batch<float> p = make_batch<float>(ps, layout_of(Family::diag));
  Options options;
  options.memory_budget = 1;
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
    options.memory_budget = 1;
    knn_kl(p.view(), 4, idx_rows, std::span<float>(kl_rows), options);
    EXPECT_EQ(idx_all, idx_rows);
    EXPECT_EQ(kl_all, kl_rows);
  }
}

}  // namespace
}  // namespace gausskl::test
