// The reference applied to whole batches, and the error measure every oracle test uses.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "gausskl/types.hpp"
#include "support/kinds.hpp"

namespace gausskl::test {

// The rows of a row-wise result: a side with N = 1 pairs with every row of the other, even
// when that is none.
inline std::int64_t broadcast_rows(std::int64_t n_p, std::int64_t n_q) {
  return n_p == 1 ? n_q : n_p;
}

// The k smallest of each row of `values` [n, m] by (value, index), leaving out j == i with
// exclude_self: the knn a pairwise matrix implies.
void sorted_rows(const std::vector<double>& values, std::int64_t n, std::int64_t m, std::int64_t k,
                 bool exclude_self, std::vector<std::int64_t>& idx, std::vector<double>& val);

// ref[i] = KL(p_i || q_i) for i < broadcast_rows(p.n(), q.n()).
template <class T>
std::vector<long double> reference_kl(const Gaussians<T>& p, const Gaussians<T>& q);

// ref[i * M + j] = KL(p_i || q_j).
template <class T>
std::vector<long double> reference_pairwise(const Gaussians<T>& p, const Gaussians<T>& q);

// ref[i] = D(p_i || q_i) of the kind, for i < broadcast_rows(p.n(), q.n()).
template <class T>
std::vector<long double> reference_divergence(const Kind& k, const Gaussians<T>& p,
                                              const Gaussians<T>& q);

// ref[i * M + j] = D(p_i || q_j) of the kind.
template <class T>
std::vector<long double> reference_divergence_pairwise(const Kind& k, const Gaussians<T>& p,
                                                       const Gaussians<T>& q);

// ref[i] = KL(p_i || N(0, I)).
template <class T>
std::vector<long double> reference_standard_normal(const Gaussians<T>& p);

// max over i of |got_i - ref_i| / (|ref_i| + 1); infinity if any got_i is not finite or the
// sizes differ.
template <class U>
double max_error(std::span<const U> got, std::span<const long double> ref);

// max over i of |a_i - b_i| / (|b_i| + 1), the same measure between two double results.
double max_difference(const std::vector<double>& a, const std::vector<double>& b);

// The error bar of an op reading T and writing U: 1e-12 when both are double, else 1e-6.
template <class T, class U>
constexpr double error_bar() {
  return std::is_same_v<T, double> && std::is_same_v<U, double> ? 1e-12 : 1e-6;
}

// "f32->f64" for inputs T = float and outputs U = double.
template <class T, class U>
std::string precision_name() {
  const auto bits = [](bool is_double) { return is_double ? "f64" : "f32"; };
  return std::string(bits(std::is_same_v<T, double>)) + "->" + bits(std::is_same_v<U, double>);
}

// Keeps the largest error per op (a table), row (a family pair, e.g. "diag/full") and column (a
// precision); the tables are printed once all tests have run.
void record_error(const std::string& op, const std::string& row, const std::string& column,
                  double error);

// Expects max_error(got, ref) <= error_bar<T, U>() and records the error.
template <class T, class U>
void expect_within_bar(const std::string& op, const std::string& row, std::span<const U> got,
                       std::span<const long double> ref) {
  const double error = max_error(got, ref);
  record_error(op, row, precision_name<T, U>(), error);
  EXPECT_LE(error, (error_bar<T, U>())) << op << " " << row << " " << precision_name<T, U>();
}

}  // namespace gausskl::test
