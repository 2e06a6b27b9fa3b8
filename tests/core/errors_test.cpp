// gausskl/errors.hpp: the operations' errors carry their kind, op, distribution and hint as
// data, besides the same what() as ever, and are still std::invalid_argument /
// std::runtime_error.
#include "gausskl/errors.hpp"

#include <gtest/gtest.h>

#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "gausskl/ops.hpp"

namespace gausskl::test {
namespace {

// The error `call` throws, as E (FAIL()s with no error or another type).
template <class E, class Call>
E thrown(Call&& call) {
  try {
    call();
  } catch (const E& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "another error: " << e.what();
    throw;
  }
  ADD_FAILURE() << "no error";
  throw std::logic_error("no error");
}

// Two 2-D Gaussians; q's second covariance is singular.
struct Batches {
  std::vector<double> p_mean{0, 0, 1, 1}, p_std{1, 1, 1, 1};
  std::vector<double> q_mean{0, 0, 1, 1}, q_cov{1, 0, 0, 1, 1, 1, 1, 1};
  DiagGaussians<double> p() const {
    return {contiguous<double, 2>(p_mean.data(), {2, 2}),
            contiguous<double, 2>(p_std.data(), {2, 2}), DiagParam::stddev};
  }
  FullGaussians<double> q() const {
    return {contiguous<double, 2>(q_mean.data(), {2, 2}),
            contiguous<double, 3>(q_cov.data(), {2, 2, 2}), FullParam::covariance};
  }
};

TEST(Errors, NotPositiveDefinite) {
  const Batches b;
  std::vector<double> out(2);
  const auto e = thrown<NotPositiveDefiniteError>([&] { kl(b.p(), b.q(), std::span(out)); });
  EXPECT_EQ(std::string(e.what()),
            "[kl] q.scale (covariance) is not positive definite at distribution 1: pivot 1 is 0 "
            "(to regularize, add eps to the diagonal only: C + eps * I)");
  EXPECT_EQ(e.op(), "kl");
  EXPECT_EQ(e.kind(), ErrorKind::not_positive_definite);
  EXPECT_EQ(e.side(), "q");
  EXPECT_EQ(e.index(), 1);
  EXPECT_EQ(e.pivot(), 1);
  EXPECT_EQ(e.hint(), hints::regularize);
  EXPECT_EQ(e.hint_option(), "");
  // Caught as an std::invalid_argument and as a gausskl::Error too.
  EXPECT_THROW(kl(b.p(), b.q(), std::span(out)), std::invalid_argument);
  EXPECT_THROW(kl(b.p(), b.q(), std::span(out)), Error);
}

TEST(Errors, MemoryBudget) {
  const Batches b;
  std::vector<double> out(4);
  Options options;
  options.memory_budget = 1;
  const auto e =
      thrown<MemoryBudgetError>([&] { pairwise_kl(b.p(), b.p(), std::span(out), options); });
  const std::string what = e.what();
  EXPECT_EQ(what, "[pairwise_kl] the memory budget (1 B) is too small: " + e.needs());
  EXPECT_EQ(e.needs().rfind("the prepared distributions and work buffers take ", 0), 0u);
  EXPECT_EQ(e.op(), "pairwise_kl");
  EXPECT_EQ(e.kind(), ErrorKind::memory_budget);
  EXPECT_EQ(e.budget(), 1);
  EXPECT_EQ(e.side(), "");
  EXPECT_EQ(e.index(), -1);
  EXPECT_EQ(e.hint(), "");
  EXPECT_THROW(pairwise_kl(b.p(), b.p(), std::span(out), options), std::runtime_error);
}

TEST(Errors, Option) {
  const Batches b;
  std::vector<double> out(2);
  Options options;
  options.jitter = -1;
  const auto e = thrown<OptionError>([&] { kl(b.p(), b.p(), std::span(out), options); });
  EXPECT_EQ(std::string(e.what()), "[kl] options.jitter must be finite and >= 0, found -1");
  EXPECT_EQ(e.op(), "kl");
  EXPECT_EQ(e.kind(), ErrorKind::option);
  EXPECT_EQ(e.option(), "jitter");
  EXPECT_EQ(e.rule(), "must be finite and >= 0");
  EXPECT_EQ(e.hint(), "");
}

TEST(Errors, HintThatNamesAnOption) {
  // A packed factor with a negative diagonal entry: perhaps it holds log L_rr.
  const std::vector<double> mean{0, 0}, packed{1, 0, -1};
  FullGaussians<double> g;
  g.mean = contiguous<double, 2>(mean.data(), {1, 2});
  g.param = FullParam::packed_scale_tril;
  g.packed = contiguous<double, 2>(packed.data(), {1, 3});
  std::vector<double> out(1);
  const auto e = thrown<InputError>([&] { kl_standard_normal(g, std::span(out)); });
  const std::string what = e.what();
  EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
  EXPECT_EQ(e.op(), "kl_standard_normal");
  EXPECT_EQ(e.side(), "p");
  EXPECT_EQ(e.index(), 0);
  EXPECT_EQ(e.hint(), hints::log_diagonal);
  EXPECT_EQ(e.hint_option(), "log_diagonal");
  EXPECT_TRUE(what.ends_with("; " + e.hint()));
  EXPECT_TRUE(e.hint().ends_with("set " + e.hint_option()));
}

TEST(Errors, KindNames) {
  EXPECT_STREQ(error_kind_name(ErrorKind::invalid_input), "invalid_input");
  EXPECT_STREQ(error_kind_name(ErrorKind::not_positive_definite), "not_positive_definite");
  EXPECT_STREQ(error_kind_name(ErrorKind::memory_budget), "memory_budget");
}

TEST(Errors, OtherInputErrorsAreInvalidInput) {
  const Batches b;
  std::vector<double> out(3);  // two results
  const auto e = thrown<InputError>([&] { kl(b.p(), b.p(), std::span(out)); });
  EXPECT_EQ(std::string(e.what()), "[kl] out has 3 elements, expected 2");
  EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
  EXPECT_EQ(e.op(), "kl");
}

}  // namespace
}  // namespace gausskl::test
