#include <optional>
#include <vector>

#include "cpu/all_pairs.hpp"
#include "cpu/backend.hpp"
#include "cpu/parallel.hpp"

namespace gausskl::cpu {

template <class T, class U>
Failure kl_pairwise(const Gaussians<T>& p, const Gaussians<T>* q, U* out, int threads) {
  threads = resolve_threads(threads);
  std::optional<AllPairs> pairs;
  if (Failure f = AllPairs::prepare(p, q, threads, pairs); f.side) return f;
  const std::int64_t m = pairs->cols();
  const std::int64_t per_worker = m + pairs->scratch_size();
  std::vector<double> scratch(static_cast<std::size_t>(threads * per_worker));
  parallel_for(pairs->rows(), threads, [&](int w, std::int64_t lo, std::int64_t hi) {
    double* row = scratch.data() + w * per_worker;
    for (std::int64_t i = lo; i < hi; ++i) {
      pairs->row(i, row, row + m);
      for (std::int64_t j = 0; j < m; ++j)
        out[i * m + j] = static_cast<U>(row[j]);
    }
  });
  return {};
}

#define GAUSSKL_INSTANTIATE(T, U) \
  template Failure kl_pairwise<T, U>(const Gaussians<T>&, const Gaussians<T>*, U*, int);
GAUSSKL_INSTANTIATE(float, float)
GAUSSKL_INSTANTIATE(float, double)
GAUSSKL_INSTANTIATE(double, float)
GAUSSKL_INSTANTIATE(double, double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
