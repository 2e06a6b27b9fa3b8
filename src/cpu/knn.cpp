#include <algorithm>
#include <numeric>
#include <optional>
#include <vector>

#include "cpu/all_pairs.hpp"
#include "cpu/backend.hpp"
#include "cpu/parallel.hpp"

namespace gausskl::cpu {

template <class T, class U>
Failure kl_knn(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t k, bool exclude_self,
               std::int64_t* indices, U* values, int threads) {
  threads = resolve_threads(threads);
  std::optional<AllPairs> pairs;
  if (Failure f = AllPairs::prepare(p, q, threads, pairs); f.side) return f;
  const std::int64_t m = pairs->cols();
  const std::int64_t per_worker = m + pairs->scratch_size();
  std::vector<double> scratch(static_cast<std::size_t>(threads * per_worker));
  std::vector<std::int64_t> order(static_cast<std::size_t>(threads * m));
  parallel_for(pairs->rows(), threads, [&](int w, std::int64_t lo, std::int64_t hi) {
    double* row = scratch.data() + w * per_worker;
    std::int64_t* idx = order.data() + w * m;
    for (std::int64_t i = lo; i < hi; ++i) {
      pairs->row(i, row, row + m);
      std::iota(idx, idx + m, std::int64_t{0});
      std::int64_t* end = idx + m;
      if (exclude_self) end = std::remove(idx, end, i);
      // Compare by (value, index): the order is total, so ties go to the lower index and the
      // result does not depend on the sort algorithm.
      std::partial_sort(idx, idx + k, end, [row](std::int64_t a, std::int64_t b) {
        return row[a] < row[b] || (row[a] == row[b] && a < b);
      });
      for (std::int64_t r = 0; r < k; ++r) {
        indices[i * k + r] = idx[r];
        values[i * k + r] = static_cast<U>(row[idx[r]]);
      }
    }
  });
  return {};
}

#define GAUSSKL_INSTANTIATE(T, U)                                                             \
  template Failure kl_knn<T, U>(const Gaussians<T>&, const Gaussians<T>*, std::int64_t, bool, \
                                std::int64_t*, U*, int);
GAUSSKL_INSTANTIATE(float, float)
GAUSSKL_INSTANTIATE(float, double)
GAUSSKL_INSTANTIATE(double, float)
GAUSSKL_INSTANTIATE(double, double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
