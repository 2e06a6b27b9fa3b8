// The plan of an operation (core/plan.hpp): the path each pair of families takes, the kernel the
// tolerance allows, the default tolerance, and the worker counts of small and large calls.
#include "core/plan.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "cpu/tunables.hpp"
#include "support/batches.hpp"
#include "support/generators.hpp"

namespace gausskl::test {
namespace {

// A diagonal float batch of n rows of depth d; the plan reads only shapes, so no data.
DiagGaussians<float> shape_only(std::int64_t n, std::int64_t d) {
  return {{nullptr, {n, d}, {d, 1}}, {nullptr, {n, d}, {d, 1}}};
}

Options with(double tolerance, int threads = 2) {
  Options options;
  options.tolerance = tolerance;
  options.threads = threads;
  return options;
}

// Every full q with a full or diagonal p takes the GEMM path, the other mixes the per-pair one,
// two diagonal sides the SIMD one; q = p follows p's family.
TEST(PlanPairs, PathByFamilies) {
  Rng rng(34);
  for (const Family fp : {Family::full, Family::diag, Family::lowrank}) {
    for (const Family fq : {Family::full, Family::diag, Family::lowrank}) {
      const auto [ps, qs] = make_specs(rng, Data::random, fp, fq, 3, 3, 2);
      const Batch<double> p = make_batch<double>(ps, layout_of(fp));
      const Batch<double> q = make_batch<double>(qs, layout_of(fq));
      const Gaussians<double> qv = q.view();
      const cpu::PairsPath path = detail::plan_pairs(p.view(), &qv, Options{}).backend.path;
      const cpu::PairsPath expected =
          fp == Family::diag && fq == Family::diag      ? cpu::PairsPath::diag
          : fq == Family::full && fp != Family::lowrank ? cpu::PairsPath::full
                                                        : cpu::PairsPath::lowrank;
      EXPECT_EQ(path, expected) << name(fp) << " || " << name(fq);
    }
  }
}

// The float kernel from a tolerance of about 1e-5 up, never at the default; with q = p otherwise
// the kernel that gives both directions of a pair, else the double one.
TEST(PlanPairs, KernelByTolerance) {
  const auto kernel = [](double tolerance, std::int64_t d, bool self) {
    const DiagGaussians<float> g = shape_only(4, d);
    const Gaussians<float> gv(g);
    return detail::plan_pairs(gv, self ? nullptr : &gv, with(tolerance)).backend.kernel;
  };
  EXPECT_EQ(kernel(0, 1, false), cpu::DiagKernelKind::double_kernel);
  EXPECT_EQ(kernel(1e-7, 1, true), cpu::DiagKernelKind::sym);
  EXPECT_EQ(kernel(1e-6, 256, false), cpu::DiagKernelKind::double_kernel);
  EXPECT_EQ(kernel(1e-5, 1, false), cpu::DiagKernelKind::float_kernel);
  EXPECT_EQ(kernel(1e-5, 4096, true), cpu::DiagKernelKind::float_kernel);
  // Double inputs never take it: their promise is 1e-12, and rounding them to float would cost
  // digits the caller has.
  const DiagGaussians<double> gd{{nullptr, {4, 8}, {8, 1}}, {nullptr, {4, 8}, {8, 1}}};
  const Gaussians<double> gdv(gd);
  EXPECT_EQ(detail::plan_pairs(gdv, &gdv, with(1e-3)).backend.kernel,
            cpu::DiagKernelKind::double_kernel);
}

TEST(PlanPairs, DefaultTolerance) {
  EXPECT_EQ(detail::effective_tolerance<float>(0), 1e-7);
  EXPECT_EQ(detail::effective_tolerance<double>(0), 1e-13);
  EXPECT_EQ(detail::effective_tolerance<float>(2e-5), 2e-5);
  const Gaussians<float> g(shape_only(3, 5));
  EXPECT_EQ(detail::plan_pairs<float>(g, nullptr, Options{}).backend.tolerance, 1e-7);
}

// Small diagonal calls run on one worker (kDiagPairsWorkPerThread); large ones on all asked for;
// other paths on all asked for.
TEST(PlanPairs, Workers) {
  const Gaussians<float> small(shape_only(10, 10)), large(shape_only(1000, 256));
  EXPECT_EQ(detail::plan_pairs<float>(small, nullptr, with(0, 2)).backend.workers, 1);
  EXPECT_EQ(detail::plan_pairs<float>(large, nullptr, with(0, 2)).backend.workers, 2);
  EXPECT_EQ(detail::plan_pairs<float>(large, nullptr, with(0, 1)).backend.workers, 1);
  EXPECT_GE(detail::plan_pairs<float>(large, nullptr, with(0, 0)).backend.workers, 1);
}

// Row-wise: the path by families, and one worker per kRowwiseWorkPerThread of work, at most one
// per row.
TEST(PlanRowwise, PathAndWorkers) {
  Rng rng(35);
  const auto [ps, qs] = make_specs(rng, Data::random, Family::full, Family::full, 3, 3, 2);
  const Batch<double> p = make_batch<double>(ps, layout_of(Family::full));
  const Batch<double> q = make_batch<double>(qs, layout_of(Family::full));
  const Gaussians<double> qv = q.view();
  EXPECT_EQ(detail::plan_rowwise(p.view(), &qv, 3, with(0)).path, cpu::RowwisePath::tril);
  const Gaussians<float> g(shape_only(3, 5));
  EXPECT_EQ(detail::plan_rowwise(g, &g, 3, with(0)).path, cpu::RowwisePath::diag);
  EXPECT_EQ(detail::plan_rowwise<float>(g, nullptr, 3, with(0)).path, cpu::RowwisePath::diag);
  EXPECT_EQ(detail::plan_rowwise(g, &g, 3, with(0)).workers, 1);
  const Gaussians<float> big(shape_only(1 << 16, 8));
  EXPECT_EQ(detail::plan_rowwise(big, &big, 1 << 16, with(0, 2)).workers, 2);
  const Gaussians<float> two(shape_only(2, 1 << 20));
  EXPECT_EQ(detail::plan_rowwise(two, &two, 2, with(0, 8)).workers, 2);
}

}  // namespace
}  // namespace gausskl::test
