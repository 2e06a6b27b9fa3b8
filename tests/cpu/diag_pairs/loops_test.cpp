// diag_quadratic_loops with the chosen kernel on every compiled Highway target: every entry within
// the documented error bound of a long-double sum, on random and adversarial data; the same loop
// nest with the scalar reference kernel; bitwise the same result whatever the split of rows and
// columns.
#include "cpu/diag_pairs/loops.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/diag_pairs/bound.hpp"
#include "cpu/diag_pairs/ukr.hpp"
#include "cpu/tunables.hpp"
#include "hwy/tests/hwy_gtest.h"

namespace gausskl::cpu {
namespace {

// p: means and variances; q: means and precisions; rows of d values.
template <class T>
struct Side {
  std::int64_t rows = 0;
  std::vector<T> mean, var;
};

template <class T>
struct Problem {
  Side<T> p, q;
  std::int64_t d = 0;
};

enum class Data { random, adversarial };

// random: means N(0, 1), variances and precisions in [0.25, 4].
// adversarial: means offset by 1e3; q's rows near-duplicates of p's rows (relative
// perturbation 1e-4 of mean and std), one in four an exact duplicate; std log-uniform over
// 1e-2 .. 1e2, so variances and precisions span 1e-4 .. 1e4.
template <class T>
Problem<T> make_problem(Data data, std::int64_t m, std::int64_t n, std::int64_t d,
                        std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit(-1, 1);
  const bool adv = data == Data::adversarial;
  auto std_dev = [&] { return adv ? std::pow(10.0, 2 * unit(rng)) : std::pow(2.0, unit(rng)); };
  Problem<T> out{{m, std::vector<T>(m * d), std::vector<T>(m * d)},
                 {n, std::vector<T>(n * d), std::vector<T>(n * d)},
                 d};
  std::vector<double> mean(m * d), sd(m * d);
  for (std::int64_t x = 0; x < m * d; ++x) {
    mean[x] = (adv ? 1e3 : 0) + normal(rng);
    sd[x] = std_dev();
    out.p.mean[x] = static_cast<T>(mean[x]);
    out.p.var[x] = static_cast<T>(sd[x] * sd[x]);
  }
  for (std::int64_t j = 0; j < n; ++j) {
    const std::int64_t twin = j % m;
    const double rel = !adv || j % 4 == 0 ? 0 : 1e-4;
    for (std::int64_t h = 0; h < d; ++h) {
      const double mu = adv ? mean[twin * d + h] * (1 + rel * unit(rng)) : normal(rng);
      const double s = adv ? sd[twin * d + h] * (1 + rel * unit(rng)) : std_dev();
      out.q.mean[j * d + h] = static_cast<T>(mu);
      out.q.var[j * d + h] = static_cast<T>(1 / (s * s));
    }
  }
  return out;
}

template <class T>
long double exact(const Problem<T>& pr, std::int64_t i, std::int64_t j) {
  long double sum = 0;
  for (std::int64_t h = 0; h < pr.d; ++h) {
    const long double s =
        static_cast<long double>(pr.p.mean[i * pr.d + h]) - pr.q.mean[j * pr.d + h];
    sum += (s * s + pr.p.var[i * pr.d + h]) * static_cast<long double>(pr.q.var[j * pr.d + h]);
  }
  return sum;
}

template <class T>
std::vector<double> run(const Problem<T>& pr, const DiagKernel<T>* kernel = nullptr) {
  const std::int64_t ldq = pr.q.rows + 2;
  std::vector<double> out(pr.p.rows * ldq, -7.0);
  if (kernel) {
    diag_quadratic_loops(*kernel, pr.p.mean.data(), pr.p.var.data(), pr.p.rows, pr.q.mean.data(),
                         pr.q.var.data(), pr.q.rows, pr.d, out.data(), ldq);
  } else {
    diag_quadratic_loops(diag_kernel<T>(), pr.p.mean.data(), pr.p.var.data(), pr.p.rows,
                         pr.q.mean.data(), pr.q.var.data(), pr.q.rows, pr.d, out.data(), ldq);
  }
  return out;
}

struct Shape {
  std::int64_t m, n, d;
};

// d from 1 to 1024 around the vector widths, the float block (128) and kDiagKC (256); m and n
// from 1 to 100 around the tile sizes; one n beyond kDiagNC (512), m beyond kDiagMC (64).
std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (const std::int64_t d :
       {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 127, 128, 129, 255, 256, 257, 300, 513, 1024}) {
    out.push_back({1, 1, d});
    out.push_back({3, 17, d});
    out.push_back({9, 33, d});
    out.push_back({33, 9, d});
  }
  for (const std::int64_t d : {5, 64, 129, 300})
    out.push_back({100, 100, d});
  out.push_back({70, 99, 1024});
  out.push_back({5, 600, 3});
  out.push_back({67, 530, 20});
  return out;
}

template <class T>
void check_bound(const std::vector<double>& got, const Problem<T>& pr, double bound,
                 const std::string& label) {
  // The long-double sum has its own error, at most (d + 4) 2^-64 relative.
  const double slack = static_cast<double>(pr.d + 4) * 0x1p-63;
  const std::int64_t ldq = pr.q.rows + 2;
  double worst = 0;
  for (std::int64_t i = 0; i < pr.p.rows; ++i) {
    for (std::int64_t j = 0; j < pr.q.rows; ++j) {
      const long double want = exact(pr, i, j);
      const double err = std::abs(got[i * ldq + j] - static_cast<double>(want));
      worst = std::max(worst, err / static_cast<double>(want));
      ASSERT_LE(err, (bound + slack) * static_cast<double>(want))
          << label << " i " << i << " j " << j << " got " << got[i * ldq + j] << " want "
          << static_cast<double>(want);
    }
    for (std::int64_t j = pr.q.rows; j < ldq; ++j)
      ASSERT_EQ(got[i * ldq + j], -7.0) << label << ": wrote past n in row " << i;
  }
  // The bound is worst case; a few float roundings per block are the usual error.
  EXPECT_LE(worst, bound) << label;
}

template <class T>
void check_target(const char* target) {
  const DiagKernel<T> ref{{kDiagRefMr, kDiagRefNr}, &ukr_diag_ref<T>};
  std::uint64_t seed = 1;
  for (const Data data : {Data::random, Data::adversarial}) {
    for (const Shape& s : shapes()) {
      const Problem<T> pr = make_problem<T>(data, s.m, s.n, s.d, seed++);
      const std::string label = std::string(target) + (sizeof(T) == 4 ? " float " : " double ") +
                                (data == Data::random ? "random " : "adversarial ") +
                                std::to_string(s.m) + "x" + std::to_string(s.n) + " d " +
                                std::to_string(s.d);
      const double bound = diag_quadratic_error_bound<T>(s.d);
      check_bound(run(pr), pr, bound, label);
      check_bound(run(pr, &ref), pr, bound, label + " (reference kernel)");
    }
  }
}

// Calls on sub-blocks of rows and columns, written into the full output.
template <class T>
void check_split_invariance() {
  const std::int64_t m = 37, n = 75;
  for (const std::int64_t d : {1, 19, 300}) {
    const Problem<T> pr = make_problem<T>(Data::adversarial, m, n, d, 99);
    const std::vector<double> whole = run(pr);
    const std::int64_t ldq = n + 2;
    std::vector<double> parts(whole.size(), -7.0);
    const std::int64_t row_cuts[] = {0, 1, 6, 20, 37}, col_cuts[] = {0, 11, 12, 75};
    for (int a = 0; a + 1 < 5; ++a) {
      for (int b = 0; b + 1 < 4; ++b) {
        const std::int64_t i0 = row_cuts[a], j0 = col_cuts[b];
        diag_quadratic_loops(diag_kernel<T>(), pr.p.mean.data() + i0 * d, pr.p.var.data() + i0 * d,
                             row_cuts[a + 1] - i0, pr.q.mean.data() + j0 * d,
                             pr.q.var.data() + j0 * d, col_cuts[b + 1] - j0, d,
                             parts.data() + i0 * ldq + j0, ldq);
      }
    }
    ASSERT_EQ(std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(double)), 0)
        << "d " << d;
  }
}

// q packed once (pack_diag_q_panels) and used for blocks of rows and for column ranges starting
// at panel boundaries: bitwise the same entries as packing on the spot. Enough columns for
// several panels, and a last panel that is not whole.
void check_packed_q() {
  const DiagKernel<double> kernel = diag_kernel<double>();
  const std::int64_t panel = diag_panel_columns(kernel.tile.nr);
  const std::int64_t m = 23, n = 2 * panel + 37;
  for (const std::int64_t d : {std::int64_t{1}, std::int64_t{19}, kDiagKC + 5}) {
    const Problem<double> pr = make_problem<double>(Data::adversarial, m, n, d, 7);
    const std::vector<double> whole = run(pr);
    std::vector<double> packed(diag_packed_q_size(n, d, kernel.tile.nr), -1.0);
    pack_diag_q_panels(pr.q.mean.data(), pr.q.var.data(), n, d, kernel.tile.nr, packed.data());
    std::vector<double> parts(whole.size(), -7.0);
    const std::int64_t ldq = n + 2;
    const std::int64_t row_cuts[] = {0, 1, 9, 23}, col_cuts[] = {0, panel, 2 * panel, n};
    for (int a = 0; a + 1 < 4; ++a) {
      for (int b = 0; b + 1 < 4; ++b) {
        const std::int64_t i0 = row_cuts[a], j0 = col_cuts[b];
        diag_quadratic_loops_packed(kernel, pr.p.mean.data() + i0 * d, pr.p.var.data() + i0 * d,
                                    row_cuts[a + 1] - i0, packed.data(), n, j0, col_cuts[b + 1], d,
                                    parts.data() + i0 * ldq + j0, ldq);
      }
    }
    ASSERT_EQ(std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(double)), 0)
        << "d " << d;
    // A range that ends inside a panel.
    std::vector<double> some(m * 5, -7.0);
    diag_quadratic_loops_packed(kernel, pr.p.mean.data(), pr.p.var.data(), m, packed.data(), n,
                                panel, panel + 5, d, some.data(), 5);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < 5; ++j)
        ASSERT_EQ(some[i * 5 + j], whole[i * ldq + panel + j]) << i << " " << j;
  }
}

class DiagQuadratic : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(DiagQuadratic);

TEST_P(DiagQuadratic, FloatWithinBound) {
  check_target<float>(hwy::TargetName(GetParam()));
}
TEST_P(DiagQuadratic, DoubleWithinBound) {
  check_target<double>(hwy::TargetName(GetParam()));
}
TEST_P(DiagQuadratic, FloatSplitInvariant) {
  check_split_invariance<float>();
}
TEST_P(DiagQuadratic, DoubleSplitInvariant) {
  check_split_invariance<double>();
}

TEST_P(DiagQuadratic, PackedQSameAsPackingOnTheSpot) {
  check_packed_q();
}

TEST_P(DiagQuadratic, EmptyShapes) {
  std::vector<double> q(6, -7.0);
  const float x[4] = {1, 2, 3, 4};
  const DiagKernel<float> kernel = diag_kernel<float>();
  diag_quadratic_loops<float>(kernel, x, x, 0, x, x, 2, 2, q.data(), 2);
  diag_quadratic_loops<float>(kernel, x, x, 2, x, x, 0, 2, q.data(), 2);
  EXPECT_EQ(q, std::vector<double>(6, -7.0));
  diag_quadratic_loops<float>(kernel, x, x, 2, x, x, 2, 0, q.data(), 3);  // d = 0: an empty sum
  EXPECT_EQ(q, (std::vector<double>{0, 0, -7, 0, 0, -7}));
}

TEST(DiagQuadraticBound, Values) {
  EXPECT_EQ(diag_quadratic_error_bound<float>(1), 7 * 0x1p-24);
  EXPECT_EQ(diag_quadratic_error_bound<float>(1024), (kDiagFloatBlock + 6) * 0x1p-24);
  EXPECT_EQ(diag_quadratic_error_bound<double>(1), 8 * 0x1p-53);
  EXPECT_EQ(diag_quadratic_error_bound<double>(4 * kDiagKC), (kDiagKC + 4 + 6) * 0x1p-53);
}

}  // namespace
}  // namespace gausskl::cpu
