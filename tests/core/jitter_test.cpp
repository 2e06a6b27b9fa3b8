// Options::jitter: only matrices that are not positive definite get it, on their diagonal, and
// on_jitter counts them. Expected values: the same call on the matrices with the jitter added
// by hand (bitwise: the library adds it in double to the double input, as the test does).
#include <gtest/gtest.h>

#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "gausskl/ops.hpp"

namespace gausskl::test {
namespace {

// Three 2-D Gaussians; the middle covariance (or precision matrix) is singular.
struct Side {
  std::vector<double> mean{0.5, -1, 2, 0, 1, 1};
  std::vector<double> scale{2, 0.5, 0.5, 1, 1, 1, 1, 1, 1, 0, 0, 3};
  FullGaussians<double> view(FullParam param) const {
    return {contiguous<double, 2>(mean.data(), {3, 2}),
            contiguous<double, 3>(scale.data(), {3, 2, 2}), param};
  }
};

TEST(Jitter, OnlyMatricesThatAreNotPositiveDefinite) {
  const std::vector<double> pm{1, 1, 0, 0, 2, 1}, ps{1, 1, 0.5, 2, 1, 1};
  const DiagGaussians<double> p{contiguous<double, 2>(pm.data(), {3, 2}),
                                contiguous<double, 2>(ps.data(), {3, 2}), DiagParam::stddev};
  for (const FullParam param : {FullParam::covariance, FullParam::precision_matrix}) {
    const Side q;
    Side fixed;
    fixed.scale[4] += 1e-6, fixed.scale[7] += 1e-6;
    std::vector<double> got(3), want(3), all(9), all_want(9);
    EXPECT_THROW(kl(p, q.view(param), std::span<double>(got)), std::invalid_argument);

    std::vector<std::string> reports;
    Options options;
    options.jitter = 1e-6;
    options.on_jitter = [&](const char* side, std::int64_t count) {
      reports.push_back(std::string(side) + ":" + std::to_string(count));
    };
    kl(p, q.view(param), std::span<double>(got), options);
    kl(p, fixed.view(param), std::span<double>(want));
    EXPECT_EQ(got, want);
    EXPECT_EQ(reports, std::vector<std::string>{"q:1"});

    reports.clear();
    pairwise_kl(q.view(param), std::span<double>(all), options);
    pairwise_kl(fixed.view(param), std::span<double>(all_want));
    EXPECT_EQ(all, all_want);
    EXPECT_EQ(reports, std::vector<std::string>{"p:1"});
  }
}

TEST(Jitter, NegativeOrNonFiniteIsAnError) {
  const Side q;
  std::vector<double> out(9);
  for (const double bad : {-1.0, std::numeric_limits<double>::infinity()}) {
    Options options;
    options.jitter = bad;
    try {
      pairwise_kl(q.view(FullParam::scale_tril), std::span<double>(out), options);
      FAIL() << "no error";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("[pairwise_kl] options.jitter"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace gausskl::test
