// Gaussians fitted to samples: the mean and centred scatter of rows of features, accumulated
// in pieces of any size and merged exactly, so that chunks of a file, threads, Dask partitions
// and distributed ranks give np.cov's result without ever holding the rows.
//
// Each update takes its rows' own mean and centred scatter in double, then joins them to the
// running ones by Chan, Golub & LeVeque's pairwise update (1979):
//   n = n_a + n_b, mean = mean_a + (mean_b - mean_a) n_b / n,
//   S = S_a + S_b + (mean_b - mean_a)(mean_b - mean_a)^T n_a n_b / n,
// never by raw sums (sum x, sum x x^T), which cancel when the mean is large against the spread.
// Memory is O(D^2) (O(D) for the diagonal family) whatever the number of rows.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gausskl/export.hpp"
#include "gausskl/types.hpp"

namespace gausskl {

// What is kept: the full D x D scatter, or its diagonal only (the variances).
enum class MomentFamily { full, diag };

namespace detail {
struct MomentAccess;
}

class GAUSSKL_API MomentAccumulator {
 public:
  // An empty accumulator of rows with d >= 1 features; `threads` as Options::threads (results do
  // not depend on it). Throws std::invalid_argument "[MomentAccumulator] ..." for d < 1, or a d
  // whose D x D scatter overflows int64 bytes; std::runtime_error when it cannot be allocated.
  explicit MomentAccumulator(std::int64_t d, MomentFamily family = MomentFamily::full,
                             int threads = 0);

  // A state saved before: count >= 0 rows with mean [D] and scatter (the sum of the centred
  // outer products) [D, D] row-major for full (symmetric), [D] for diag. Checked: finite,
  // count 0 with zero moments, a scatter diagonal >= 0, a symmetric full scatter.
  static MomentAccumulator from_state(std::int64_t count, std::span<const double> mean,
                                      std::span<const double> scatter, MomentFamily family,
                                      int threads = 0);

  // Adds the rows of x [N, D] (N >= 0, any strides). Every value must be finite: otherwise a
  // std::invalid_argument names the row and column, and nothing is added. Rows are numbered in
  // messages from first_row (a caller's piece of a larger array says where it is in it).
  void update(const View<float, 2>& x, std::int64_t first_row = 0);
  void update(const View<double, 2>& x, std::int64_t first_row = 0);

  // Adds the rows another accumulator has seen (same D and family), as if they had been given
  // to this one; `other` is unchanged.
  void merge(const MomentAccumulator& other);

  std::int64_t count() const { return count_; }
  std::int64_t d() const { return d_; }
  MomentFamily family() const { return family_; }
  int threads() const { return threads_; }
  // The mean of the rows seen, [D] (zeros while count() is 0).
  std::span<const double> mean() const { return mean_; }

  // The scatter, sum over rows of (x - mean)(x - mean)^T: full [D, D] row-major (both
  // triangles), diag [D].
  void scatter(std::span<double> out) const;
  // scatter / (count - ddof), np.cov's: full [D, D], diag [D]; 0 <= ddof < count (ddof 1: the
  // unbiased n - 1 of np.cov and pytorch-fid; 0: divide by n, as StyleGAN's FID does).
  void covariance(std::span<double> out, std::int64_t ddof = 1) const;

 private:
  friend struct detail::MomentAccess;
  std::int64_t d_ = 0, count_ = 0;
  MomentFamily family_ = MomentFamily::full;
  int threads_ = 0;
  std::vector<double> mean_;
  std::vector<double> scatter_;  // full: the lower triangle of [D, D] row-major is kept
};

// The Gaussian fitted to the rows of x [N, D]: mean [D] and covariance [D, D] (full, row-major)
// or variances [D] (diag), equal to np.mean and np.cov(x, rowvar=False, ddof=ddof) of x in
// float64. 0 <= ddof < N. Errors are tagged "[fit_gaussian]".
GAUSSKL_API void fit_gaussian(const View<float, 2>& x, std::span<double> mean,
                              std::span<double> covariance, std::int64_t ddof = 1,
                              MomentFamily family = MomentFamily::full, int threads = 0);
GAUSSKL_API void fit_gaussian(const View<double, 2>& x, std::span<double> mean,
                              std::span<double> covariance, std::int64_t ddof = 1,
                              MomentFamily family = MomentFamily::full, int threads = 0);

}  // namespace gausskl
