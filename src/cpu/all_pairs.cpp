#include "cpu/all_pairs.hpp"

#include <algorithm>

#include <type_traits>

namespace gausskl::cpu {

template <class T>
Failure AllPairs::prepare(const Gaussians<T>& p, const Gaussians<T>* q, const PairsConfig& config,
                          Jitter& jitter, std::optional<AllPairs>& out) {
  const int workers = config.workers;
  switch (config.path) {
    case PairsPath::diag: {
      const auto& pd = std::get<DiagGaussians<T>>(p.variant());
      const auto* qd = q ? &std::get<DiagGaussians<T>>(q->variant()) : nullptr;
      out.emplace(
          AllPairs(DiagPairs(pd, qd, config.tolerance, config.kernel, workers), config.tolerance));
      return {};
    }
    case PairsPath::full: {
      std::optional<FullPairs> full;
      const Failure f = FullPairs::prepare(p, q, config.tolerance, workers, jitter, full);
      if (full) out.emplace(AllPairs(std::move(*full), config.tolerance));
      return f;
    }
    case PairsPath::lowrank: {
      std::optional<LowRankPairs> low;
      const Failure f = LowRankPairs::prepare(p, q, workers, jitter, low);
      if (low) out.emplace(AllPairs(std::move(*low), 0.0));
      return f;
    }
  }
  return {};
}

template <class T>
PairsBytes AllPairs::footprint(const Gaussians<T>& p, const Gaussians<T>* q,
                               const PairsConfig& config) {
  const std::int64_t n = p.n(), m = q ? q->n() : n;
  const int workers = config.workers;
  PairsBytes b;
  switch (config.path) {
    case PairsPath::diag:
      b.kept = DiagPairs::footprint<T>(n, m, p.d(), q == nullptr, config.kernel, workers);
      // The per-worker buffers of float results (counted whatever the result type).
      b.work = DiagPairs::float_block_bytes(m, workers);
      break;
    case PairsPath::full:
      b = FullPairs::bytes(p, q, workers);
      break;
    case PairsPath::lowrank:
      b = LowRankPairs::bytes(p, q, workers);
      break;
  }
  return b;
}

std::int64_t AllPairs::rows() const {
  return std::visit([](const auto& path) { return path.rows(); }, path_);
}
std::int64_t AllPairs::cols() const {
  return std::visit([](const auto& path) { return path.cols(); }, path_);
}
std::int64_t AllPairs::scratch_size() const {
  return std::visit(
      [](const auto& path) -> std::int64_t {
        if constexpr (std::is_same_v<std::decay_t<decltype(path)>, DiagPairs>) {
          return 0;
        } else {
          return path.scratch_size();
        }
      },
      path_);
}

double AllPairs::exact(std::int64_t i, std::int64_t j, double* scratch) const {
  return std::visit(
      [&](const auto& path) {
        if constexpr (std::is_same_v<std::decay_t<decltype(path)>, DiagPairs>) {
          return path.exact(i, j);
        } else {
          return path.exact(i, j, scratch);
        }
      },
      path_);
}

void AllPairs::block(std::int64_t lo, std::int64_t hi, double* out, int workers) const {
  std::visit([&](const auto& path) { path.block(lo, hi, out, workers); }, path_);
}

void AllPairs::block(std::int64_t lo, std::int64_t hi, float* out, int workers) const {
  std::get<DiagPairs>(path_).block(lo, hi, out, workers);
}

#define GAUSSKL_INSTANTIATE(T)                                                                  \
  template Failure AllPairs::prepare<T>(const Gaussians<T>&, const Gaussians<T>*,               \
                                        const PairsConfig&, Jitter&, std::optional<AllPairs>&); \
  template PairsBytes AllPairs::footprint<T>(const Gaussians<T>&, const Gaussians<T>*,          \
                                             const PairsConfig&);
GAUSSKL_INSTANTIATE(float)
GAUSSKL_INSTANTIATE(double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
