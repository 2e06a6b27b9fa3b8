#include <algorithm>
#include <optional>
#include <vector>

#include "cpu/backend.hpp"
#include "cpu/kl_pair.hpp"
#include "cpu/parallel.hpp"

namespace gausskl::cpu {
namespace {

// Rows are prepared and computed in chunks so that the prepared copies stay near this many
// bytes per side whatever N is (a full-covariance row at D = 1024 alone takes 8 MiB).
constexpr std::int64_t kChunkBytes = 64 << 20;

}  // namespace

template <class T, class U>
Failure kl_rowwise(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n, U* out,
                   int threads) {
  threads = resolve_threads(threads);
  const bool p_tri = std::holds_alternative<FullGaussians<T>>(p.variant());
  const Layout p_layout = layout_for(p, false);
  const Layout q_layout = q ? layout_for(*q, !p_tri) : standard_normal(p.d()).layout();
  const bool p_once = p.n() == 1, q_once = !q || q->n() == 1;

  const std::int64_t widest = std::max(p_layout.size, q_layout.size);
  const std::int64_t chunk = std::min<std::int64_t>(
      std::max<std::int64_t>(kChunkBytes / (8 * widest), threads), std::max<std::int64_t>(n, 1));
  PreparedBatch ps(p_layout, p_once ? 1 : std::min(chunk, n));
  PreparedBatch qs =
      q ? PreparedBatch(q_layout, q_once ? 1 : std::min(chunk, n)) : standard_normal(p.d());
  if (p_once) {
    if (auto f = prepare_range(p, 0, 1, ps, threads); f.index >= 0) return {"p", f};
  }
  if (q && q_once) {
    if (auto f = prepare_range(*q, 0, 1, qs, threads); f.index >= 0) return {"q", f};
  }

  const std::int64_t scratch_size = pair_scratch_size(q_layout);
  std::vector<double> scratch(static_cast<std::size_t>(threads * scratch_size));
  for (std::int64_t lo = 0; lo < n; lo += chunk) {
    const std::int64_t hi = std::min(n, lo + chunk);
    if (!p_once) {
      if (auto f = prepare_range(p, lo, hi, ps, threads); f.index >= 0) return {"p", f};
    }
    if (q && !q_once) {
      if (auto f = prepare_range(*q, lo, hi, qs, threads); f.index >= 0) return {"q", f};
    }
    parallel_for(hi - lo, threads, [&](int w, std::int64_t a, std::int64_t b) {
      double* my_scratch = scratch.data() + w * scratch_size;
      for (std::int64_t k = a; k < b; ++k) {
        const Prepared pk = ps.get(p_once ? 0 : k);
        const Prepared qk = qs.get(q_once ? 0 : k);
        out[lo + k] = static_cast<U>(0.5 * two_kl(pk, qk, my_scratch));
      }
    });
  }
  return {};
}

#define GAUSSKL_INSTANTIATE(T, U)                                                               \
  template Failure kl_rowwise<T, U>(const Gaussians<T>&, const Gaussians<T>*, std::int64_t, U*, \
                                    int);
GAUSSKL_INSTANTIATE(float, float)
GAUSSKL_INSTANTIATE(float, double)
GAUSSKL_INSTANTIATE(double, float)
GAUSSKL_INSTANTIATE(double, double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
