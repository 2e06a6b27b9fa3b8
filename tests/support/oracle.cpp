#include "support/oracle.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "core/reference.hpp"

namespace gausskl::test {

namespace {

// ref[i] = pair(i, i) for i < broadcast_rows(p.n(), q.n()), a side of one row paired with all.
template <class T, class Pair>
std::vector<long double> rowwise(const Gaussians<T>& p, const Gaussians<T>& q, Pair pair) {
  const std::int64_t n = broadcast_rows(p.n(), q.n());
  std::vector<long double> ref(n);
  for (std::int64_t i = 0; i < n; ++i)
    ref[i] = pair(p.n() == 1 ? 0 : i, q.n() == 1 ? 0 : i);
  return ref;
}

// ref[i * M + j] = pair(i, j).
template <class T, class Pair>
std::vector<long double> all_pairs(const Gaussians<T>& p, const Gaussians<T>& q, Pair pair) {
  std::vector<long double> ref(p.n() * q.n());
  for (std::int64_t i = 0; i < p.n(); ++i)
    for (std::int64_t j = 0; j < q.n(); ++j)
      ref[i * q.n() + j] = pair(i, j);
  return ref;
}

}  // namespace

template <class T>
std::vector<long double> reference_kl(const Gaussians<T>& p, const Gaussians<T>& q) {
  return rowwise(p, q, [&](std::int64_t i, std::int64_t j) { return reference::kl(p, i, q, j); });
}

template <class T>
std::vector<long double> reference_pairwise(const Gaussians<T>& p, const Gaussians<T>& q) {
  return all_pairs(p, q, [&](std::int64_t i, std::int64_t j) { return reference::kl(p, i, q, j); });
}

template <class T>
std::vector<long double> reference_divergence(const Kind& k, const Gaussians<T>& p,
                                              const Gaussians<T>& q) {
  return rowwise(p, q, [&](std::int64_t i, std::int64_t j) {
    return reference::divergence(k.kind, k.alpha, p, i, q, j);
  });
}

template <class T>
std::vector<long double> reference_divergence_pairwise(const Kind& k, const Gaussians<T>& p,
                                                       const Gaussians<T>& q) {
  return all_pairs(p, q, [&](std::int64_t i, std::int64_t j) {
    return reference::divergence(k.kind, k.alpha, p, i, q, j);
  });
}

template <class T>
std::vector<long double> reference_standard_normal(const Gaussians<T>& p) {
  std::vector<long double> ref(p.n());
  for (std::int64_t i = 0; i < p.n(); ++i)
    ref[i] = reference::kl_standard_normal(p, i);
  return ref;
}

template <class U>
double max_error(std::span<const U> got, std::span<const long double> ref) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (got.size() != ref.size()) return inf;
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(ref[i])) return inf;
    const long double e = std::fabs(got[i] - ref[i]) / (std::fabs(ref[i]) + 1);
    worst = std::max(worst, static_cast<double>(e));
  }
  return worst;
}

namespace {

// op -> row -> column -> largest error.
using ErrorTable = std::map<std::string, std::map<std::string, std::map<std::string, double>>>;

ErrorTable& table() {
  static ErrorTable t;
  return t;
}

// Prints one table per op after the last test.
class ErrorReport : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& [op, rows] : table()) {
      std::set<std::string> columns;
      for (const auto& [row, cells] : rows)
        for (const auto& [column, error] : cells)
          columns.insert(column);
      std::printf("\n%s: largest max |got - ref| / (|ref| + 1)\n  %-20s", op.c_str(), "");
      for (const auto& column : columns)
        std::printf(" %10s", column.c_str());
      for (const auto& [row, cells] : rows) {
        std::printf("\n  %-20s", row.c_str());
        for (const auto& column : columns) {
          const auto it = cells.find(column);
          if (it == cells.end()) {
            std::printf(" %10s", "-");
          } else {
            std::printf(" %10.2e", it->second);
          }
        }
      }
      std::printf("\n");
    }
  }
};

// Registered when this file is linked in, which any caller of record_error ensures.
[[maybe_unused]] auto* const registered = ::testing::AddGlobalTestEnvironment(new ErrorReport);

}  // namespace

void record_error(const std::string& op, const std::string& row, const std::string& column,
                  double error) {
  double& w = table()[op][row][column];
  w = std::max(w, error);
}

template std::vector<long double> reference_kl(const Gaussians<float>&, const Gaussians<float>&);
template std::vector<long double> reference_kl(const Gaussians<double>&, const Gaussians<double>&);
template std::vector<long double> reference_pairwise(const Gaussians<float>&,
                                                     const Gaussians<float>&);
template std::vector<long double> reference_pairwise(const Gaussians<double>&,
                                                     const Gaussians<double>&);
template std::vector<long double> reference_divergence(const Kind&, const Gaussians<float>&,
                                                       const Gaussians<float>&);
template std::vector<long double> reference_divergence(const Kind&, const Gaussians<double>&,
                                                       const Gaussians<double>&);
template std::vector<long double> reference_divergence_pairwise(const Kind&,
                                                                const Gaussians<float>&,
                                                                const Gaussians<float>&);
template std::vector<long double> reference_divergence_pairwise(const Kind&,
                                                                const Gaussians<double>&,
                                                                const Gaussians<double>&);
template std::vector<long double> reference_standard_normal(const Gaussians<float>&);
template std::vector<long double> reference_standard_normal(const Gaussians<double>&);
template double max_error(std::span<const float>, std::span<const long double>);
template double max_error(std::span<const double>, std::span<const long double>);

double max_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / (std::abs(b[i]) + 1));
  return worst;
}

void sorted_rows(const std::vector<double>& values, std::int64_t n, std::int64_t m, std::int64_t k,
                 bool exclude_self, std::vector<std::int64_t>& idx, std::vector<double>& val) {
  idx.clear();
  val.clear();
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<std::int64_t> order;
    for (std::int64_t j = 0; j < m; ++j)
      if (!(exclude_self && j == i)) order.push_back(j);
    const double* row = values.data() + i * m;
    std::stable_sort(order.begin(), order.end(),
                     [row](std::int64_t a, std::int64_t b) { return row[a] < row[b]; });
    for (std::int64_t r = 0; r < k; ++r) {
      idx.push_back(order[static_cast<std::size_t>(r)]);
      val.push_back(row[order[static_cast<std::size_t>(r)]]);
    }
  }
}

}  // namespace gausskl::test
