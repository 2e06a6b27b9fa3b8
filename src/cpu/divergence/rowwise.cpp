#include "cpu/backend.hpp"

#include <algorithm>
#include <vector>

#include "cpu/common/family_views.hpp"
#include "cpu/common/parallel.hpp"
#include "cpu/common/saturating.hpp"
#include "cpu/divergence/diag.hpp"
#include "cpu/divergence/slots.hpp"

namespace gausskl::cpu {

template <class T>
std::int64_t divergence_rowwise_footprint(const Gaussians<T>& p, const Gaussians<T>& q,
                                          std::int64_t n, const DivergenceConfig& config) {
  if (as_diag(p) && as_diag(q)) return sat_mul(8, n);
  const DivergenceSlots sizes(p, q, config);
  const std::int64_t doubles = sat_add(sat_add(sat_mul(config.workers, sizes.per_worker()), n),
                                       sizes.p_slot + sizes.q_slot + sizes.prep);
  return sat_mul(8, doubles);
}

template <class T, class U>
Failure divergence_rowwise(const Gaussians<T>& p, const Gaussians<T>& q, std::int64_t n, U* out,
                           const DivergenceConfig& config, Jitter& jitter) {
  const int threads = config.workers;
  std::vector<double> result(static_cast<std::size_t>(n));
  std::vector<Failure> failures(static_cast<std::size_t>(threads));
  if (as_diag(p) && as_diag(q)) {
    parallel_for(n, threads, [&](int w, std::int64_t lo, std::int64_t hi) {
      std::int64_t dim = 0;
      double value = 0;
      const std::int64_t bad = divergence_diag_rows(*as_diag(p), *as_diag(q), config, lo, hi,
                                                    result.data() + lo, &dim, &value);
      if (bad >= 0) failures[static_cast<std::size_t>(w)] = {"pair", {bad, dim, value}};
    });
  } else {
    const std::int64_t d = p.d();
    const Factoring fp = jitter.of_p(), fq = jitter.of_q();
    const DivergenceSlots sizes(p, q, config);
    const bool p_once = p.n() == 1, q_once = q.n() == 1;
    std::vector<double> fixed(static_cast<std::size_t>(sizes.p_slot + sizes.q_slot + sizes.prep));
    double* p_fixed = fixed.data();
    double* q_fixed = p_fixed + sizes.p_slot;
    if (p_once) {
      if (auto f = sizes.prepare(p, 0, true, p_fixed, q_fixed + sizes.q_slot, fp); f.index >= 0) {
        return {"p", f};
      }
    }
    if (q_once) {
      if (auto f = sizes.prepare(q, 0, false, q_fixed, q_fixed + sizes.q_slot, fq); f.index >= 0) {
        return {"q", f};
      }
    }
    const std::int64_t per_worker = sizes.per_worker();
    std::vector<double> work(static_cast<std::size_t>(threads * per_worker));
    parallel_for(n, threads, [&](int w, std::int64_t lo, std::int64_t hi) {
      double* p_slot = work.data() + w * per_worker;
      double* q_slot = p_slot + sizes.p_slot;
      double* prep = q_slot + sizes.q_slot;
      double* pair = prep + sizes.prep;
      Failure& failed = failures[static_cast<std::size_t>(w)];
      for (std::int64_t i = lo; i < hi; ++i) {
        if (!p_once) {
          if (auto f = sizes.prepare(p, i, true, p_slot, prep, fp); f.index >= 0) {
            failed = {"p", f};
            return;
          }
        }
        if (!q_once) {
          if (auto f = sizes.prepare(q, i, false, q_slot, prep, fq); f.index >= 0) {
            failed = {"q", f};
            return;
          }
        }
        FactorFailure f;
        const double value =
            sizes.value(config, d, p_once ? p_fixed : p_slot, q_once ? q_fixed : q_slot, pair, f);
        if (value < 0) {
          failed = {"pair", {i, f.pivot, f.value}};
          return;
        }
        result[static_cast<std::size_t>(i)] = value;
      }
    });
  }
  // Workers own increasing ranges and stop at their first failure: the first one found is the
  // lowest row.
  for (const Failure& f : failures) {
    if (f.side) return f;
  }
  std::transform(result.begin(), result.end(), out, [](double x) { return static_cast<U>(x); });
  return {};
}

template std::int64_t divergence_rowwise_footprint<float>(const Gaussians<float>&,
                                                          const Gaussians<float>&, std::int64_t,
                                                          const DivergenceConfig&);
template std::int64_t divergence_rowwise_footprint<double>(const Gaussians<double>&,
                                                           const Gaussians<double>&, std::int64_t,
                                                           const DivergenceConfig&);

#define GAUSSKL_INSTANTIATE(T, U)                                                     \
  template Failure divergence_rowwise<T, U>(const Gaussians<T>&, const Gaussians<T>&, \
                                            std::int64_t, U*, const DivergenceConfig&, Jitter&);
GAUSSKL_INSTANTIATE(float, float)
GAUSSKL_INSTANTIATE(float, double)
GAUSSKL_INSTANTIATE(double, float)
GAUSSKL_INSTANTIATE(double, double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
