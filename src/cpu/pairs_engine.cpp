// PairsEngine (backend.hpp): one alternative per path. KL's live in diag_pairs/, full_pairs/ and
// lowrank_pairs/; every other kind's in divergence/pairs.hpp.
#include <type_traits>
#include <variant>

#include "cpu/backend.hpp"
#include "cpu/diag_pairs/plan.hpp"
#include "cpu/divergence/pairs.hpp"
#include "cpu/full_pairs/plan.hpp"
#include "cpu/knn/loops.hpp"
#include "cpu/lowrank_pairs/plan.hpp"

namespace gausskl::cpu {

template <class T>
struct PairsEngine<T>::Paths {
  std::variant<DiagPairs, FullPairs, LowRankPairs, DivergencePairs<T>> path;
  // block() is within tolerance * (|D| + 1) of the exact formula (0: it is exact).
  double tolerance;
  int workers;
};

namespace {

DivergenceConfig divergence_config(const PairsConfig& config) {
  return {config.kind,         config.alpha,      config.workers,
          config.blas_threads, config.diag_tiles, config.tolerance};
}

}  // namespace

double diag_float_kernel_bound(std::int64_t d) {
  return DiagPairs::float_kernel_bound(d);
}

template <class T>
PairsEngine<T>::PairsEngine(std::unique_ptr<Paths> paths) : paths_(std::move(paths)) {}
template <class T>
PairsEngine<T>::PairsEngine(PairsEngine&&) noexcept = default;
template <class T>
PairsEngine<T>& PairsEngine<T>::operator=(PairsEngine&&) noexcept = default;
template <class T>
PairsEngine<T>::~PairsEngine() = default;

template <class T>
Failure PairsEngine<T>::prepare(const Gaussians<T>& p, const Gaussians<T>* q,
                                const PairsConfig& config, Jitter& jitter,
                                std::optional<PairsEngine>& out) {
  const int workers = config.workers;
  const auto emplace = [&](auto path, double tolerance) {
    out.emplace(PairsEngine(std::make_unique<Paths>(Paths{std::move(path), tolerance, workers})));
  };
  switch (config.path) {
    case PairsPath::diag: {
      const auto& pd = std::get<DiagGaussians<T>>(p.variant());
      const auto* qd = q ? &std::get<DiagGaussians<T>>(q->variant()) : nullptr;
      emplace(DiagPairs(pd, qd, config.tolerance, config.kernel, workers), config.tolerance);
      return {};
    }
    case PairsPath::full: {
      std::optional<FullPairs> full;
      const Failure f = FullPairs::prepare(p, q, config.tolerance, workers, jitter, full);
      if (full) emplace(std::move(*full), config.tolerance);
      return f;
    }
    case PairsPath::lowrank: {
      std::optional<LowRankPairs> low;
      const Failure f = LowRankPairs::prepare(p, q, workers, jitter, low);
      if (low) emplace(std::move(*low), 0.0);
      return f;
    }
    case PairsPath::divergence: {
      std::optional<DivergencePairs<T>> pairs;
      const Failure f = DivergencePairs<T>::prepare(p, q, divergence_config(config), jitter, pairs);
      // knn takes the divergences' entries as exact (their tiles' tolerance is of the values).
      if (pairs) emplace(std::move(*pairs), 0.0);
      return f;
    }
  }
  return {};
}

template <class T>
PairsBytes PairsEngine<T>::footprint(const Gaussians<T>& p, const Gaussians<T>* q,
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
    case PairsPath::divergence:
      b = DivergencePairs<T>::footprint(p, q, divergence_config(config));
      break;
  }
  return b;
}

template <class T>
std::int64_t PairsEngine<T>::cols() const {
  return std::visit([](const auto& path) { return path.cols(); }, paths_->path);
}

template <class T>
Failure PairsEngine<T>::block(std::int64_t lo, std::int64_t hi, double* out) const {
  return std::visit(
      [&](const auto& path) -> Failure {
        if constexpr (std::is_same_v<std::decay_t<decltype(path)>, DivergencePairs<T>>) {
          return path.block(lo, hi, out);
        } else {
          path.block(lo, hi, out, paths_->workers);
          return {};
        }
      },
      paths_->path);
}

template <class T>
void PairsEngine<T>::block(std::int64_t lo, std::int64_t hi, float* out) const {
  std::get<DiagPairs>(paths_->path).block(lo, hi, out, paths_->workers);
}

template <class T>
void PairsEngine<T>::knn(std::int64_t lo, std::int64_t hi, const double* block, std::int64_t k,
                         bool exclude_self, std::int64_t* indices, double* values) const {
  const std::int64_t m = cols();
  std::visit(
      [&](const auto& path) {
        using Path = std::decay_t<decltype(path)>;
        ExactPair exact;
        std::int64_t scratch_size = 0;
        if constexpr (std::is_same_v<Path, DiagPairs>) {
          exact = [&path](std::int64_t i, std::int64_t j, double*) { return path.exact(i, j); };
        } else if constexpr (!std::is_same_v<Path, DivergencePairs<T>>) {
          exact = [&path](std::int64_t i, std::int64_t j, double* scratch) {
            return path.exact(i, j, scratch);
          };
          scratch_size = path.scratch_size();
        }
        knn_block(m, scratch_size, exact, lo, hi, block, paths_->tolerance, k, exclude_self,
                  indices, values, paths_->workers);
      },
      paths_->path);
}

template class PairsEngine<float>;
template class PairsEngine<double>;

}  // namespace gausskl::cpu
