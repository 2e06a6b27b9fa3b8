#include "cpu/backend.hpp"

#include <algorithm>
#include <vector>

#include "cpu/moments/scatter.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {
namespace {

// Joins a chunk of n_b rows, of mean mean_b and (already added) scatter, to the n_a rows before
// it: the running mean moves by delta n_b / n, and the scatter gains delta delta^T n_a n_b / n.
// `delta` is room for d doubles.
void join(const Moments& m, std::int64_t n_b, const double* mean_b, double* delta) {
  const std::int64_t n_a = *m.count, n = n_a + n_b;
  if (n_b == 0) return;
  const double w = static_cast<double>(n_a) * static_cast<double>(n_b) / static_cast<double>(n);
  const double move = static_cast<double>(n_b) / static_cast<double>(n);
  const std::int64_t d = m.d;
  if (n_a > 0) {
    for (std::int64_t j = 0; j < d; ++j)
      delta[j] = mean_b[j] - m.mean[j];
    if (m.full) {
      for (std::int64_t i = 0; i < d; ++i) {
        const double wi = w * delta[i];
        double* row = m.scatter + i * d;
        for (std::int64_t j = 0; j <= i; ++j)
          row[j] += wi * delta[j];
      }
    } else {
      for (std::int64_t j = 0; j < d; ++j)
        m.scatter[j] += w * delta[j] * delta[j];
    }
    for (std::int64_t j = 0; j < d; ++j)
      m.mean[j] += delta[j] * move;
  } else {
    std::copy(mean_b, mean_b + d, m.mean);
  }
  *m.count = n;
}

}  // namespace

template <class T>
void moments_update(const Moments& m, const View<T, 2>& x, int workers) {
  const std::int64_t n = x.shape[0], d = m.d;
  if (n == 0) return;
  const std::int64_t chunk = std::max<std::int64_t>(
      1, std::min<std::int64_t>(n, kMomentChunkBytes / (d * std::int64_t{sizeof(double)})));
  std::vector<double> c(static_cast<std::size_t>(chunk * d)), mean_b(static_cast<std::size_t>(d)),
      delta(static_cast<std::size_t>(d));
  const std::int64_t rs = x.strides[0], cs = x.strides[1];
  for (std::int64_t r0 = 0; r0 < n; r0 += chunk) {
    const std::int64_t rows = std::min(chunk, n - r0);
    // The chunk in double, and its mean.
    std::fill(mean_b.begin(), mean_b.end(), 0.0);
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* in = x.data + (r0 + r) * rs;
      double* out = c.data() + r * d;
      for (std::int64_t j = 0; j < d; ++j) {
        out[j] = static_cast<double>(in[j * cs]);
        mean_b[j] += out[j];
      }
    }
    for (std::int64_t j = 0; j < d; ++j)
      mean_b[j] /= static_cast<double>(rows);
    // Centred on the chunk's own mean, its scatter is added where it cannot cancel.
    if (rows > 1) {
      for (std::int64_t r = 0; r < rows; ++r) {
        double* row = c.data() + r * d;
        for (std::int64_t j = 0; j < d; ++j)
          row[j] -= mean_b[j];
      }
      if (m.full) {
        scatter_add(d, rows, c.data(), m.scatter, workers);
      } else {
        for (std::int64_t r = 0; r < rows; ++r) {
          const double* row = c.data() + r * d;
          for (std::int64_t j = 0; j < d; ++j)
            m.scatter[j] += row[j] * row[j];
        }
      }
    }
    join(m, rows, mean_b.data(), delta.data());
  }
}

void moments_merge(const Moments& m, std::int64_t count_b, const double* mean_b,
                   const double* scatter_b) {
  if (count_b == 0) return;
  const std::int64_t d = m.d;
  std::vector<double> delta(static_cast<std::size_t>(d));
  if (m.full) {
    for (std::int64_t i = 0; i < d; ++i) {
      for (std::int64_t j = 0; j <= i; ++j)
        m.scatter[i * d + j] += scatter_b[i * d + j];
    }
  } else {
    for (std::int64_t j = 0; j < d; ++j)
      m.scatter[j] += scatter_b[j];
  }
  join(m, count_b, mean_b, delta.data());
}

template void moments_update(const Moments&, const View<float, 2>&, int);
template void moments_update(const Moments&, const View<double, 2>&, int);

}  // namespace gausskl::cpu
