#include "core/plan.hpp"

#include <algorithm>
#include <type_traits>

#include "core/error.hpp"
#include "cpu/backend.hpp"
#include "gausskl/families.hpp"
#include "gausskl/limits.hpp"

namespace gausskl::detail {
namespace {

using cpu::sat_add;
using cpu::sat_mul;

template <class T>
bool is_diag(const Gaussians<T>& g) {
  return describe(g).family == Family::diag;
}

// options.threads, 0 meaning one per hardware thread.
int threads_of(const Options& options) {
  return std::max(cpu::resolve_threads(options.threads), 1);
}

// The diagonal all-pairs kernels' workers: fewer for calls too small to pay for waking them.
template <class T>
int diag_pairs_workers(const Gaussians<T>& p, const Gaussians<T>& q, int threads) {
  const std::int64_t work = sat_mul(sat_mul(p.n(), q.n()), p.d());
  return static_cast<int>(
      std::clamp<std::int64_t>(work / cpu::kDiagPairsWorkPerThread, 1, threads));
}

}  // namespace

template <class T>
cpu::RowwiseConfig plan_rowwise(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n,
                                const Options& options) {
  cpu::RowwiseConfig plan;
  plan.kind = options.divergence;
  plan.alpha = options.alpha;
  // Two diagonal sides (or q = N(0, I)) and two sides given by their factors have SIMD kernels
  // that read the views in place; every other pair of families is prepared pair by pair.
  if (is_diag(p) && (!q || is_diag(*q))) {
    plan.path = cpu::RowwisePath::diag;
  } else if (q && describe(p).by_factor && describe(*q).by_factor) {
    plan.path = cpu::RowwisePath::tril;
  } else {
    plan.path = cpu::RowwisePath::exact;
  }
  // One worker per kRowwiseWorkPerThread of work, at most one per row. Work per row, roughly in
  // multiply-adds: D for two diagonal sides, D^3 / 3 for a Cholesky or triangular solve, D R^2
  // for a low-rank side's Woodbury factors.
  const std::int64_t d = p.d();
  const auto weight = [d](const Gaussians<T>& g) -> std::int64_t {
    const BatchDescription family = describe(g);
    return family.dense ? sat_mul(d, d) / 3 + 1 : sat_mul(family.rank, family.rank) + 1;
  };
  const std::int64_t per_row = sat_mul(d, std::max(weight(p), q ? weight(*q) : 1));
  const std::int64_t wanted = sat_mul(n, per_row) / cpu::kRowwiseWorkPerThread;
  plan.workers = static_cast<int>(
      std::clamp<std::int64_t>(std::min<std::int64_t>(wanted, n), 1, threads_of(options)));
  plan.blas_threads = plan.workers == 1 ? threads_of(options) : 1;
  return plan;
}

template <class T>
void check_rowwise_budget(const char* op, const cpu::RowwiseConfig& plan, const Gaussians<T>& p,
                          const Gaussians<T>* q, std::int64_t n, const Options& options) {
  if (options.memory_budget == 0) return;
  const std::int64_t needed = cpu::rowwise_footprint(p, q, n, plan);
  if (needed > options.memory_budget) {
    throw MemoryBudgetError(op, options.memory_budget,
                            "the row-wise work takes " + show_bytes(needed));
  }
}

template <class T>
double effective_tolerance(double requested) {
  return requested > 0 ? requested : limits::default_tolerance<T>;
}

template <class T>
PairsPlan plan_pairs(const Gaussians<T>& p, const Gaussians<T>* q, const Options& options) {
  const Gaussians<T>& qq = q ? *q : p;
  PairsPlan plan;
  cpu::PairsConfig& b = plan.backend;
  b.kind = options.divergence;
  b.alpha = options.alpha;
  const int threads = threads_of(options);
  b.workers = threads;
  if (b.kind != Divergence::kl) {
    b.path = cpu::PairsPath::divergence;
    if (is_diag(p) && is_diag(qq) && cpu::diag_tiles_kind(b.kind, b.alpha)) {
      b.diag_tiles = true;
      b.tolerance = effective_tolerance<T>(options.tolerance);
      b.workers = diag_pairs_workers(p, qq, threads);
    } else {
      b.workers = plan_rowwise(p, &qq, sat_mul(p.n(), qq.n()), options).workers;
    }
    b.blas_threads = b.workers == 1 ? threads : 1;
    return plan;
  }
  if (is_diag(p) && is_diag(qq)) {
    b.path = cpu::PairsPath::diag;
  } else if (describe(qq).dense && describe(p).family != Family::low_rank &&
             qq.d() >= cpu::kFullPairsMinD) {
    b.path = cpu::PairsPath::full;
  } else {
    b.path = cpu::PairsPath::lowrank;
  }
  b.tolerance = effective_tolerance<T>(options.tolerance);
  if (b.path == cpu::PairsPath::diag) {
    // The float kernel when its bound leaves the tolerance a margin (kDiagFloatKernelMargin);
    // with q = p otherwise the kernel that gives both directions of a pair at once.
    const bool use_float =
        std::is_same_v<T, float> &&
        b.tolerance >= cpu::kDiagFloatKernelMargin * cpu::diag_float_kernel_bound(p.d());
    b.kernel = use_float ? cpu::DiagKernelKind::float_kernel
               : q       ? cpu::DiagKernelKind::double_kernel
                         : cpu::DiagKernelKind::sym;
    b.workers = diag_pairs_workers(p, qq, threads);
    plan.writes_float = true;
  }
  return plan;
}

template <class U>
std::int64_t result_row_bytes(const char* op, const PairsPlan& plan, std::int64_t m, bool to_out) {
  constexpr bool in_place = std::is_same_v<U, double>;
  const bool direct = !in_place && plan.writes_float;
  // The block of doubles unless the engine writes the floats itself, and for float results the
  // conversion for a sink (KL counts it for results into out too: it sizes KL's blocks, so its
  // progress reports and budget messages, as they are).
  const bool converted = !in_place && (!to_out || plan.backend.kind == Divergence::kl);
  const std::int64_t bytes =
      (direct ? 0 : 8) + (converted ? static_cast<std::int64_t>(sizeof(U)) : 0);
  return checked_mul(op, m, bytes, "M * 8");
}

template <class T>
void size_blocks(const char* op, PairsPlan& plan, const Gaussians<T>& p, const Gaussians<T>* q,
                 const Options& options, std::int64_t row_bytes, bool knn) {
  const std::int64_t n = std::max<std::int64_t>(p.n(), 1);
  row_bytes = std::max<std::int64_t>(row_bytes, 1);
  if (options.memory_budget == 0) {
    plan.block_rows = std::clamp<std::int64_t>(limits::default_block_bytes / row_bytes, 1, n);
    return;
  }
  const cpu::PairsBytes bytes = cpu::PairsEngine<T>::footprint(p, q, plan.backend);
  std::int64_t work = bytes.work;
  if (knn) {
    const std::int64_t m = q ? q->n() : p.n();
    work = sat_add(work, cpu::knn_block_bytes(m, bytes.pair_scratch, plan.backend.workers));
  }
  const std::int64_t fixed = sat_add(bytes.kept, work);
  const std::int64_t left = options.memory_budget - std::min(fixed, options.memory_budget);
  if (left < row_bytes) {
    throw MemoryBudgetError(op, options.memory_budget,
                            "the prepared distributions and work buffers take " +
                                show_bytes(fixed) + ", and each row of results " +
                                show_bytes(row_bytes) + " more");
  }
  plan.block_rows = std::min(left / row_bytes, n);
}

cpu::PairsBackwardConfig plan_pairs_backward(std::int64_t n, std::int64_t m, std::int64_t d,
                                             bool self, const Options& options) {
  const int threads = threads_of(options);
  cpu::PairsBackwardConfig plan;
  // The closed forms: per dimension, about 6 ns per element of the batches.
  const std::int64_t elements = (n + (self ? 0 : m)) * d;
  plan.uniform_workers = static_cast<int>(std::clamp<std::int64_t>(
      std::min(elements / cpu::kBackwardUniformWorkPerThread, d), 1, threads));
  // The GEMM forms: four products of n x m x d multiply-adds.
  const std::int64_t work = 4 * n * m * std::max<std::int64_t>(d, 1);
  plan.gemm_workers =
      static_cast<int>(std::clamp<std::int64_t>(work / cpu::kBackwardWorkPerThread, 1, threads));
  return plan;
}

#define GAUSSKL_INSTANTIATE(T)                                                                    \
  template cpu::RowwiseConfig plan_rowwise<T>(const Gaussians<T>&, const Gaussians<T>*,           \
                                              std::int64_t, const Options&);                      \
  template void check_rowwise_budget<T>(const char*, const cpu::RowwiseConfig&,                   \
                                        const Gaussians<T>&, const Gaussians<T>*, std::int64_t,   \
                                        const Options&);                                          \
  template double effective_tolerance<T>(double);                                                 \
  template PairsPlan plan_pairs<T>(const Gaussians<T>&, const Gaussians<T>*, const Options&);     \
  template void size_blocks<T>(const char*, PairsPlan&, const Gaussians<T>&, const Gaussians<T>*, \
                               const Options&, std::int64_t, bool);                               \
  template std::int64_t result_row_bytes<T>(const char*, const PairsPlan&, std::int64_t, bool);
GAUSSKL_INSTANTIATE(float)
GAUSSKL_INSTANTIATE(double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::detail
