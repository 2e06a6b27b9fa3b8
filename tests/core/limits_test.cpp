// gausskl/limits.hpp and gausskl::check_options: the limits the interfaces read, and the rule
// check they call, with the parts of its message as data.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "gausskl/limits.hpp"
#include "gausskl/ops.hpp"
#include "gausskl/types.hpp"

namespace gausskl::test {
namespace {

TEST(Limits, OptionsReadThem) {
  static_assert(Options::max_tolerance == limits::max_tolerance);
  static_assert(limits::default_tolerance<float> == limits::default_tolerance_float32);
  static_assert(limits::default_tolerance<double> == limits::default_tolerance_float64);
  static_assert(limits::min_variance < 1 && 1 < limits::max_variance);
  EXPECT_EQ(limits::default_block_bytes, std::int64_t{128} << 20);
}

TEST(CheckOptions, AcceptsTheLimits) {
  Options options;
  options.tolerance = limits::max_tolerance;
  EXPECT_NO_THROW(check_options("pairwise", options));
  options.tolerance = 0;
  EXPECT_NO_THROW(check_options("pairwise", options));
}

TEST(CheckOptions, ThrowsTheRuleAsData) {
  Options options;
  options.tolerance = 2e-3;
  try {
    check_options("knn", options);
    FAIL() << "no error";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option(), "tolerance");
    EXPECT_EQ(e.rule(), "must be 0 (the default) or at most 1e-3");
    EXPECT_EQ(std::string(e.what()),
              "[knn] options.tolerance must be 0 (the default) or at most 1e-3, found 0.002");
  }
  options = Options{};
  options.threads = -1;
  try {
    check_options("kl", options);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {  // an OptionError is one
    EXPECT_EQ(std::string(e.what()), "[kl] options.threads must be >= 0 (0 = all cores), found -1");
  }
  options = Options{};
  options.jitter = std::numeric_limits<double>::infinity();
  EXPECT_THROW(check_options("kl", options), OptionError);
  options = Options{};
  options.memory_budget = -1;
  EXPECT_THROW(check_options("kl", options), OptionError);
}

TEST(CheckOptions, AnUnknownKindListsTheKinds) {
  Options options;
  options.divergence = static_cast<Divergence>(17);
  try {
    check_options("pairwise", options);
    FAIL() << "no error";
  } catch (const OptionError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[pairwise] options.divergence must be one of kl, jeffreys, bhattacharyya, "
              "hellinger, wasserstein2, renyi, found enum value 17");
  }
}

}  // namespace
}  // namespace gausskl::test
