// MomentAccumulator and fit_gaussian (gausskl/moments.hpp): the rules, checked before anything is
// added, then the running moments updated by the CPU backend (cpu/moments/).
#include "gausskl/moments.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <string>

#include "core/error.hpp"
#include "cpu/backend.hpp"

namespace gausskl {

namespace detail {

namespace {

// The rules of the threads and ddof arguments.
void check_threads(const char* op, int threads) {
  if (threads < 0) fail(op, "threads must be >= 0 (0 = all cores), found " + show(threads));
}
void check_ddof(const char* op, std::int64_t ddof) {
  if (ddof < 0) fail(op, "ddof must be >= 0, found " + show(ddof));
}

}  // namespace

struct MomentAccess {
  static cpu::Moments moments(MomentAccumulator& a) {
    return {a.d_, a.family_ == MomentFamily::full, &a.count_, a.mean_.data(), a.scatter_.data()};
  }

  static int workers(const MomentAccumulator& a) {
    return a.d_ >= cpu::kMomentParallelMinD ? std::max(cpu::resolve_threads(a.threads_), 1) : 1;
  }

  // Every value finite and x [N, D] with D = a.d(); then the rows are added.
  template <class T>
  static void update(const char* op, MomentAccumulator& a, const View<T, 2>& x,
                     std::int64_t first_row = 0) {
    if (x.shape[0] < 0 || x.shape[1] < 0) {
      fail(op,
           "x has shape [" + show(x.shape[0]) + ", " + show(x.shape[1]) + "]: sizes must be >= 0");
    }
    if (x.shape[1] != a.d_) {
      fail(op, "x has " + show(x.shape[1]) + " columns (features), expected D = " + show(a.d_));
    }
    if (x.shape[0] > 0 && x.data == nullptr) fail(op, "x has rows but no data");
    checked_add(op, a.count_, x.shape[0], "the row count");
    for (std::int64_t r = 0; r < x.shape[0]; ++r) {
      const T* row = x.data + r * x.strides[0];
      for (std::int64_t j = 0; j < a.d_; ++j) {
        const T v = row[j * x.strides[1]];
        if (!std::isfinite(v)) {
          fail(op, "x must be finite, found " + show(v) + " at row " + show(first_row + r) +
                       ", column " + show(j));
        }
      }
    }
    try {
      cpu::moments_update(moments(a), x, workers(a));
    } catch (const std::bad_alloc&) {
      fail_out_of_memory(op, "out of memory for a chunk of rows (D = " + show(a.d_) + ")");
    }
  }

  static void covariance(const char* op, const MomentAccumulator& a, std::span<double> out,
                         std::int64_t ddof) {
    const std::int64_t size = a.family_ == MomentFamily::full ? a.d_ * a.d_ : a.d_;
    if (std::cmp_not_equal(out.size(), size)) {
      fail(op, "the covariance needs room for " + show(size) + " values, got " + show(out.size()));
    }
    check_ddof(op, ddof);
    if (ddof >= a.count_) {
      fail(op, "ddof = " + show(ddof) + " needs more than " + show(ddof) + " rows, found " +
                   show(a.count_) + " (the covariance divides by count - ddof)");
    }
    a.scatter(out);
    const double scale = 1.0 / static_cast<double>(a.count_ - ddof);
    for (double& v : out)
      v *= scale;
  }
};

}  // namespace detail

namespace {

using detail::fail;
using detail::show;

constexpr const char* kTag = "MomentAccumulator";

// Sizes of the state, checked to fit in int64 bytes.
std::int64_t scatter_size(const char* op, std::int64_t d, MomentFamily family) {
  if (d < 1) fail(op, "D must be >= 1, found " + show(d));
  if (family != MomentFamily::full && family != MomentFamily::diag) {
    fail(op, "family must be full or diag");
  }
  if (family == MomentFamily::diag) return d;
  const std::int64_t size = detail::checked_mul(op, d, d, "the D x D scatter's size");
  detail::checked_mul(op, size, std::int64_t{sizeof(double)}, "the D x D scatter's bytes");
  return size;
}

template <class T>
void fit_impl(const View<T, 2>& x, std::span<double> mean, std::span<double> covariance,
              std::int64_t ddof, MomentFamily family, int threads) {
  const char* op = "fit_gaussian";
  if (x.shape[1] < 1) fail(op, "x has " + show(x.shape[1]) + " columns; expected D >= 1");
  detail::check_threads(op, threads);
  if (std::cmp_not_equal(mean.size(), x.shape[1])) {
    fail(op,
         "the mean needs room for D = " + show(x.shape[1]) + " values, got " + show(mean.size()));
  }
  detail::check_ddof(op, ddof);
  if (ddof >= x.shape[0]) {
    fail(op, "ddof = " + show(ddof) + " needs more than " + show(ddof) + " rows, found " +
                 show(x.shape[0]) + " (the covariance divides by N - ddof)");
  }
  scatter_size(op, x.shape[1], family);
  MomentAccumulator a(x.shape[1], family, threads);
  detail::MomentAccess::update(op, a, x);
  detail::MomentAccess::covariance(op, a, covariance, ddof);
  std::copy(a.mean().begin(), a.mean().end(), mean.begin());
}

}  // namespace

MomentAccumulator::MomentAccumulator(std::int64_t d, MomentFamily family, int threads)
    : d_(d), family_(family), threads_(threads) {
  const std::int64_t size = scatter_size(kTag, d, family);
  detail::check_threads(kTag, threads);
  try {
    mean_.assign(static_cast<std::size_t>(d), 0.0);
    scatter_.assign(static_cast<std::size_t>(size), 0.0);
  } catch (const std::bad_alloc&) {
    detail::fail_out_of_memory(kTag, "out of memory for the moments of D = " + show(d) + " (" +
                                         detail::show_bytes(size * 8) + ")");
  }
}

MomentAccumulator MomentAccumulator::from_state(std::int64_t count, std::span<const double> mean,
                                                std::span<const double> scatter,
                                                MomentFamily family, int threads) {
  const auto d = static_cast<std::int64_t>(mean.size());
  MomentAccumulator a(d, family, threads);
  if (count < 0) fail(kTag, "count must be >= 0, found " + show(count));
  if (scatter.size() != a.scatter_.size()) {
    fail(kTag, std::string("the scatter has ") + show(scatter.size()) + " values, expected " +
                   (family == MomentFamily::full ? "D x D = " : "D = ") + show(a.scatter_.size()) +
                   " for the mean's D = " + show(d));
  }
  for (std::int64_t j = 0; j < d; ++j) {
    if (!std::isfinite(mean[j])) {
      fail(kTag, "the mean must be finite, found " + show(mean[j]) + " at " + show(j));
    }
  }
  const std::int64_t stride = family == MomentFamily::full ? d + 1 : 1;
  for (std::int64_t k = 0; k < static_cast<std::int64_t>(scatter.size()); ++k) {
    if (!std::isfinite(scatter[k])) {
      fail(kTag,
           "the scatter must be finite, found " + show(scatter[k]) + " at " +
               (family == MomentFamily::full ? "row " + show(k / d) + ", column " + show(k % d)
                                             : show(k)));
    }
  }
  for (std::int64_t j = 0; j < d; ++j) {
    const double v = scatter[j * stride];
    if (v < 0)
      fail(kTag, "the scatter's diagonal must be >= 0, found " + show(v) + " at " + show(j));
  }
  if (family == MomentFamily::full) {
    for (std::int64_t i = 0; i < d; ++i) {
      for (std::int64_t j = 0; j < i; ++j) {
        if (scatter[i * d + j] != scatter[j * d + i]) {
          fail(kTag, "the scatter must be symmetric, found " + show(scatter[i * d + j]) +
                         " at row " + show(i) + ", column " + show(j) + " and " +
                         show(scatter[j * d + i]) + " at row " + show(j) + ", column " + show(i));
        }
      }
    }
  }
  if (count == 0) {
    const auto nonzero = [](double v) { return v != 0; };
    if (std::any_of(mean.begin(), mean.end(), nonzero) ||
        std::any_of(scatter.begin(), scatter.end(), nonzero)) {
      fail(kTag, "a state of count 0 must have a zero mean and scatter");
    }
  }
  a.count_ = count;
  std::copy(mean.begin(), mean.end(), a.mean_.begin());
  std::copy(scatter.begin(), scatter.end(), a.scatter_.begin());
  return a;
}

void MomentAccumulator::update(const View<float, 2>& x, std::int64_t first_row) {
  detail::MomentAccess::update(kTag, *this, x, first_row);
}
void MomentAccumulator::update(const View<double, 2>& x, std::int64_t first_row) {
  detail::MomentAccess::update(kTag, *this, x, first_row);
}

void MomentAccumulator::merge(const MomentAccumulator& other) {
  if (other.d_ != d_) {
    fail(kTag, "cannot merge moments of D = " + show(other.d_) + " into D = " + show(d_));
  }
  if (other.family_ != family_) {
    fail(kTag,
         std::string("cannot merge a ") + (other.family_ == MomentFamily::full ? "full" : "diag") +
             " accumulator into a " + (family_ == MomentFamily::full ? "full" : "diag") + " one");
  }
  detail::checked_add(kTag, count_, other.count_, "the row count");
  // Merging an accumulator into itself reads what it writes: take a copy first.
  if (&other == this) {
    const MomentAccumulator copy = other;
    merge(copy);
    return;
  }
  try {
    cpu::moments_merge(detail::MomentAccess::moments(*this), other.count_, other.mean_.data(),
                       other.scatter_.data());
  } catch (const std::bad_alloc&) {
    detail::fail_out_of_memory(kTag, "out of memory for the merge (D = " + show(d_) + ")");
  }
}

void MomentAccumulator::scatter(std::span<double> out) const {
  if (out.size() != scatter_.size()) {
    fail(kTag, "the scatter needs room for " + show(scatter_.size()) + " values, got " +
                   show(out.size()));
  }
  if (family_ == MomentFamily::diag) {
    std::copy(scatter_.begin(), scatter_.end(), out.begin());
    return;
  }
  for (std::int64_t i = 0; i < d_; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) {
      out[i * d_ + j] = scatter_[i * d_ + j];
      out[j * d_ + i] = scatter_[i * d_ + j];
    }
  }
}

void MomentAccumulator::covariance(std::span<double> out, std::int64_t ddof) const {
  detail::MomentAccess::covariance(kTag, *this, out, ddof);
}

void fit_gaussian(const View<float, 2>& x, std::span<double> mean, std::span<double> covariance,
                  std::int64_t ddof, MomentFamily family, int threads) {
  fit_impl(x, mean, covariance, ddof, family, threads);
}
void fit_gaussian(const View<double, 2>& x, std::span<double> mean, std::span<double> covariance,
                  std::int64_t ddof, MomentFamily family, int threads) {
  fit_impl(x, mean, covariance, ddof, family, threads);
}

}  // namespace gausskl
