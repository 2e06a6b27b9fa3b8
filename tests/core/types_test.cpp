// gausskl::contiguous and gausskl::strided over ranges: the same view as from a pointer, and the
// size checked against the shape (and strides) with a message that says both.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "gausskl/ops.hpp"
#include "gausskl/types.hpp"

namespace gausskl::test {
namespace {

// The message of the std::invalid_argument that f throws ("" if it throws none).
template <class F>
std::string invalid_argument_message(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Contiguous, RangesGiveThePointersView) {
  const std::vector<float> mean = {1, 2, 3, 4, 5, 6};
  const View<float, 2> from_vector = contiguous<float, 2>(mean, {2, 3});
  const View<float, 2> from_pointer = contiguous<float, 2>(mean.data(), {2, 3});
  EXPECT_EQ(from_vector.data, from_pointer.data);
  EXPECT_EQ(from_vector.shape, from_pointer.shape);
  EXPECT_EQ(from_vector.strides, (std::array<std::int64_t, 2>{3, 1}));
  EXPECT_EQ(from_vector(1, 2), 6.0f);

  const std::array<double, 8> factor{};
  const View<double, 3> from_array = contiguous<double, 3>(factor, {2, 2, 2});
  EXPECT_EQ(from_array.strides, (std::array<std::int64_t, 3>{4, 2, 1}));
  const std::vector<double> values = {1, 2, 3, 4};
  const std::span<const double> span(values);
  EXPECT_EQ((contiguous<double, 2>(span.first(2), {1, 2})(0, 1)), 2.0);
}

TEST(Contiguous, EmptyShapesNeedEmptyRanges) {
  const std::vector<float> none;
  EXPECT_EQ((contiguous<float, 2>(none, {0, 5}).shape[1]), 5);
  EXPECT_EQ((contiguous<float, 3>(none, {4, 0, 7}).shape[0]), 4);
  EXPECT_EQ(invalid_argument_message([] {
              const std::vector<float> one(1);
              contiguous<float, 2>(one, {0, 5});
            }),
            "[contiguous] shape [0, 5] needs 0 elements, the data has 1");
}

TEST(Contiguous, SizeMismatchIsAClearError) {
  const std::vector<float> five(5);
  EXPECT_EQ(invalid_argument_message([&] {
              contiguous<float, 2>(five, {2, 3});
            }),
            "[contiguous] shape [2, 3] needs 6 elements, the data has 5");
  const std::vector<double> seven(7);
  EXPECT_EQ(invalid_argument_message([&] {
              contiguous<double, 3>(seven, {1, 2, 3});
            }),
            "[contiguous] shape [1, 2, 3] needs 6 elements, the data has 7");
  EXPECT_EQ(invalid_argument_message([&] {
              contiguous<float, 2>(five, {5, -1});
            }),
            "[contiguous] shape [5, -1] has -1 at axis 1: sizes must be >= 0");
}

TEST(Contiguous, HugeShapesDoNotOverflowIntoAMatch) {
  // 2^32 * 2^32 wraps to 0 in 64 bits, 2^63 * 2 as well: neither may pass as "0 elements".
  constexpr std::int64_t big = std::int64_t{1} << 32;
  const std::vector<float> none;
  EXPECT_EQ(invalid_argument_message([&] {
              contiguous<float, 2>(none, {big, big});
            }),
            "[contiguous] shape [4294967296, 4294967296] needs more than 18446744073709551615 "
            "elements, the data has 0");
  const std::vector<float> four(4);
  constexpr std::int64_t huge = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(invalid_argument_message([&] {
              contiguous<float, 3>(four, {2, huge, 2});
            }),
            "[contiguous] shape [2, 9223372036854775807, 2] needs more than "
            "18446744073709551615 elements, the data has 4");
}

TEST(Strided, ArraysSideBySideInOneRange) {
  // A network's output [n, 2 d]: each row mean | logvar. The two views read it in place and
  // give what contiguous copies of the halves give.
  const std::int64_t n = 3, d = 2;
  const std::vector<double> out = {0, 0, 0, 0, 1, -1, 0.5, 0.25, -2, 3, -1, 2};
  const View<double, 2> mean = strided<double, 2>(out, {n, d}, {2 * d, 1});
  const View<double, 2> logvar =
      strided<double, 2>(std::span<const double>(out).subspan(d), {n, d}, {2 * d, 1});
  EXPECT_EQ(mean(1, 1), -1.0);
  EXPECT_EQ(logvar(2, 0), -1.0);
  const std::vector<double> mean_copy = {0, 0, 1, -1, -2, 3},
                            logvar_copy = {0, 0, 0.5, 0.25, -1, 2};
  std::vector<double> in_place(n), copied(n);
  kl_standard_normal(DiagGaussians<double>{mean, logvar, DiagParam::logvar}, in_place);
  kl_standard_normal(
      DiagGaussians<double>{contiguous<double, 2>(mean_copy, {n, d}),
                            contiguous<double, 2>(logvar_copy, {n, d}), DiagParam::logvar},
      copied);
  EXPECT_EQ(in_place, copied);
  EXPECT_EQ(in_place[0], 0.0);

  // Stride 0: one row of scales for every distribution.
  const std::vector<float> row = {1, 2, 3};
  const View<float, 2> shared = strided<float, 2>(row, {4, 3}, {0, 1});
  EXPECT_EQ(shared(3, 2), 3.0f);
}

TEST(Strided, ReachBeyondTheRangeIsAClearError) {
  const std::vector<float> eight(8);
  EXPECT_EQ((strided<float, 2>(eight, {2, 3}, {5, 1})(1, 2)), 0.0f);  // the last at offset 7
  EXPECT_EQ(invalid_argument_message([&] {
              strided<float, 2>(eight, {2, 3}, {6, 1});
            }),
            "[strided] shape [2, 3] with strides [6, 1] needs 9 elements (the last at offset "
            "8), the data has 8");
  EXPECT_EQ(invalid_argument_message([&] {
              strided<float, 2>(eight, {2, 3}, {3, -1});
            }),
            "[strided] shape [2, 3] with strides [3, -1] has stride -1 at axis 1: strides over "
            "a range must be >= 0 (a View made from a pointer may have negative ones)");
  EXPECT_EQ(invalid_argument_message([&] {
              strided<float, 2>(eight, {-2, 3}, {3, 1});
            }),
            "[strided] shape [-2, 3] with strides [3, 1] has -2 at axis 0: sizes must be >= 0");
  // Empty shapes reach nothing, whatever the strides; huge ones do not wrap into a match.
  const std::vector<float> none;
  EXPECT_EQ((strided<float, 2>(none, {0, 3}, {1000, 1}).shape[0]), 0);
  constexpr std::int64_t big = std::int64_t{1} << 62;
  EXPECT_EQ(invalid_argument_message([&] {
              strided<float, 2>(eight, {5, 2}, {big, 1});
            }),
            "[strided] shape [5, 2] with strides [4611686018427387904, 1] needs more than "
            "18446744073709551615 elements, the data has 8");
}

TEST(Contiguous, VectorsAllTheWayThroughAnOperation) {
  // Two 1-D Gaussians N(0, 1) and N(1, 1): KL is 0.5 either way and 0 on the diagonal.
  const std::int64_t n = 2, d = 1;
  const std::vector<double> mean = {0, 1}, sigma = {1, 1};
  const DiagGaussians<double> p{contiguous<double, 2>(mean, {n, d}),
                                contiguous<double, 2>(sigma, {n, d}), DiagParam::stddev};
  std::vector<double> matrix(n * n);
  pairwise_kl(p, matrix);  // the vector as the output span
  EXPECT_EQ(matrix, (std::vector<double>{0.0, 0.5, 0.5, 0.0}));
}

}  // namespace
}  // namespace gausskl::test
