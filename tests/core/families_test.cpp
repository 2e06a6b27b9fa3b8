// gausskl/families.hpp: each family's description as the batch's views and parameterization make
// it, and has_gradients read from it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gausskl/families.hpp"
#include "gausskl/gradients.hpp"
#include "gausskl/types.hpp"

namespace gausskl::test {
namespace {

constexpr std::int64_t kN = 2, kD = 3, kR = 2;
const std::vector<double> kZeros(kN* kD* kD, 0.0);

Gaussians<double> diag(DiagParam p) {
  return DiagGaussians<double>{contiguous<double, 2>(kZeros.data(), {kN, kD}),
                               contiguous<double, 2>(kZeros.data(), {kN, kD}), p};
}
Gaussians<double> full(FullParam p) {
  FullGaussians<double> g{contiguous<double, 2>(kZeros.data(), {kN, kD}),
                          contiguous<double, 3>(kZeros.data(), {kN, kD, kD}), p};
  if (p == FullParam::packed_scale_tril)
    g.packed = contiguous<double, 2>(kZeros.data(), {kN, kD * (kD + 1) / 2});
  return g;
}
Gaussians<double> low_rank() {
  return LowRankGaussians<double>{contiguous<double, 2>(kZeros.data(), {kN, kD}),
                                  contiguous<double, 3>(kZeros.data(), {kN, kD, kR}),
                                  contiguous<double, 2>(kZeros.data(), {kN, kD})};
}

TEST(Families, DiagonalBatches) {
  for (const DiagParam p :
       {DiagParam::stddev, DiagParam::var, DiagParam::logvar, DiagParam::precision}) {
    const BatchDescription f = describe(diag(p));
    EXPECT_EQ(f.family, Family::diag);
    EXPECT_EQ(std::string(f.name), "diagonal");
    EXPECT_EQ(std::string(f.scale_param), "scale");
    EXPECT_FALSE(f.dense || f.by_factor || f.factored);
    EXPECT_EQ(f.gradients, LibraryGradients::diag);
    EXPECT_EQ(f.rank, 0);
    EXPECT_EQ(f.scale_row, kD);
    EXPECT_TRUE(has_gradients(diag(p)));
  }
}

TEST(Families, FullBatchesByParameterization) {
  struct Row {
    FullParam p;
    bool by_factor;
    std::int64_t scale_row;
  };
  for (const Row row :
       {Row{FullParam::scale_tril, true, kD * kD}, Row{FullParam::covariance, false, kD * kD},
        Row{FullParam::precision_matrix, false, kD * kD},
        Row{FullParam::packed_scale_tril, true, kD * (kD + 1) / 2}}) {
    const BatchDescription f = describe(full(row.p));
    EXPECT_EQ(f.family, Family::full);
    EXPECT_EQ(std::string(f.name), param_name(row.p));
    EXPECT_EQ(std::string(f.scale_param), param_name(row.p));
    EXPECT_TRUE(f.dense);
    EXPECT_EQ(f.by_factor, row.by_factor);
    EXPECT_EQ(f.factored, !row.by_factor);
    EXPECT_EQ(f.gradients, row.by_factor ? LibraryGradients::tril : LibraryGradients::none);
    EXPECT_EQ(has_gradients(full(row.p)), row.by_factor);
    EXPECT_EQ(f.rank, 0);
    EXPECT_EQ(f.scale_row, row.scale_row);
  }
}

TEST(Families, LowRankBatches) {
  const BatchDescription f = describe(low_rank());
  EXPECT_EQ(f.family, Family::low_rank);
  EXPECT_EQ(std::string(f.name), "low-rank");
  EXPECT_EQ(std::string(f.scale_param), "scale");
  EXPECT_FALSE(f.dense || f.by_factor || f.factored);
  EXPECT_EQ(f.gradients, LibraryGradients::none);
  EXPECT_FALSE(has_gradients(low_rank()));
  EXPECT_EQ(f.rank, kR);
  EXPECT_EQ(f.scale_row, kD * kR);
}

}  // namespace
}  // namespace gausskl::test
