// The public operations: plan (core/plan.hpp), validate everything, then hand the plan to the CPU
// backend.
#include "gausskl/ops.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/plan.hpp"
#include "core/validate.hpp"
#include "cpu/all_pairs.hpp"
#include "cpu/backend.hpp"
#include "cpu/common/parallel.hpp"
#include "cpu/common/saturating.hpp"
#include "cpu/divergence/pairs.hpp"
#include "cpu/divergence/rowwise.hpp"
#include "cpu/knn/loops.hpp"
#include "gausskl/limits.hpp"
#include "util/block_buffer.hpp"
#include "util/rules.hpp"

namespace gausskl {
namespace {

using detail::check_size;
using detail::fail;
using detail::show;

// Tells options.on_jitter how many distributions of each side needed the jitter.
void report_jitter(const Options& options, const cpu::Jitter& jitter) {
  if (!options.on_jitter) return;
  if (const std::int64_t n = jitter.p.load()) options.on_jitter("p", n);
  if (const std::int64_t n = jitter.q.load()) options.on_jitter("q", n);
}

template <class T>
const char* full_param_name(const Gaussians<T>& g) {
  const auto* full = std::get_if<FullGaussians<T>>(&g.variant());
  return full ? param_name(full->param) : "scale";
}

// Runs a backend call; turns a failed factorization and a failed allocation into errors.
template <class T, class Call>
void run(const char* op, const Gaussians<T>& p, const Gaussians<T>* q, Call&& call) {
  cpu::Failure f;
  try {
    f = call();
  } catch (const std::bad_alloc&) {
    detail::fail_out_of_memory(
        op, "out of memory for the workspace (D = " + show(p.d()) + ", N = " + show(p.n()) + ")");
  }
  if (!f.side) return;
  if (std::string(f.side) == "pair") {  // only a Renyi divergence of order > 1 fails per pair
    const std::string where = f.column >= 0
                                  ? "p row " + show(f.where.index) + " and q row " + show(f.column)
                                  : "row " + show(f.where.index);
    fail(op, "the renyi divergence is infinite at " + where +
                 ": its mixed covariance alpha * q.cov + (1 - alpha) * p.cov is not a "
                 "positive-definite matrix (pivot " +
                 show(f.where.pivot) + " is " + show(f.where.value) +
                 "); an order alpha > 1 needs q's covariance to dominate (alpha - 1) / alpha "
                 "times p's");
  }
  const Gaussians<T>& g = (f.side[0] == 'q' && q) ? *q : p;
  if (f.where.indefinite) {  // wasserstein2, which accepts a singular covariance
    throw InputError(ErrorKind::not_positive_definite, op,
                     std::string(f.side) + ".scale (" + full_param_name(g) +
                         ") is not positive semi-definite at distribution " + show(f.where.index) +
                         ": eigenvalue " + show(f.where.value) +
                         " is negative beyond rounding (the largest is " + show(f.where.largest) +
                         ")",
                     f.side, f.where.index, hints::regularize);
  }
  throw NotPositiveDefiniteError(op, f.side, full_param_name(g), f.where.index, f.where.pivot,
                                 show(f.where.value));
}

template <class T, class U>
void kl_impl(const Gaussians<T>& p, const Gaussians<T>& q, std::span<U> out, const Options& options,
             const char* op = "kl") {
  check_options(op, options);
  detail::require_kl(op, options);
  const cpu::RowwiseConfig plan = detail::plan_rowwise(p, &q, std::max(p.n(), q.n()), options);
  detail::validate(op, "p", p, plan.workers);
  detail::validate(op, "q", q, plan.workers);
  detail::validate_same_d(op, p, q);
  const std::int64_t n = detail::broadcast_rows(op, p, q);
  check_size(op, "out", out.size(), n);
  detail::check_rowwise_budget(op, plan, p, &q, n, options);
  cpu::Jitter jitter{options.jitter};
  run(op, p, &q, [&] { return cpu::kl_rowwise(p, &q, n, out.data(), plan, jitter); });
  report_jitter(options, jitter);
}

// Any kind: KL by the KL kernels (kl_impl), every other kind by cpu/divergence/.
template <class T, class U>
void divergence_impl(const Gaussians<T>& p, const Gaussians<T>& q, std::span<U> out,
                     const Options& options) {
  const char* op = "divergence";
  check_options(op, options);
  if (options.divergence == Divergence::kl) {
    kl_impl(p, q, out, options, op);
    return;
  }
  const cpu::RowwiseConfig rows = detail::plan_rowwise(p, &q, std::max(p.n(), q.n()), options);
  cpu::DivergenceConfig plan{options.divergence, options.alpha, rows.workers};
  plan.blas_threads = rows.workers == 1 ? std::max(cpu::resolve_threads(options.threads), 1) : 1;
  detail::validate(op, "p", p, plan.workers);
  detail::validate(op, "q", q, plan.workers);
  detail::validate_same_d(op, p, q);
  const std::int64_t n = detail::broadcast_rows(op, p, q);
  check_size(op, "out", out.size(), n);
  if (options.memory_budget > 0) {
    const std::int64_t needed = cpu::divergence_rowwise_footprint(p, q, n, plan);
    if (needed > options.memory_budget) {
      throw MemoryBudgetError(op, options.memory_budget,
                              "the row-wise work takes " + detail::show_bytes(needed));
    }
  }
  cpu::Jitter jitter{options.jitter};
  run(op, p, &q, [&] { return cpu::divergence_rowwise(p, q, n, out.data(), plan, jitter); });
  report_jitter(options, jitter);
}

template <class T, class U>
void kl_standard_normal_impl(const Gaussians<T>& p, std::span<U> out, const Options& options) {
  const char* op = "kl_standard_normal";
  check_options(op, options);
  detail::require_kl(op, options);
  const Gaussians<T>* const standard = nullptr;  // q = N(0, I)
  const cpu::RowwiseConfig plan = detail::plan_rowwise(p, standard, p.n(), options);
  detail::validate(op, "p", p, plan.workers);
  check_size(op, "out", out.size(), p.n());
  detail::check_rowwise_budget(op, plan, p, standard, p.n(), options);
  cpu::Jitter jitter{options.jitter};
  run(op, p, standard,
      [&] { return cpu::kl_rowwise<T, U>(p, nullptr, p.n(), out.data(), plan, jitter); });
  report_jitter(options, jitter);
}

// knn's k (1 <= k <= M, M - 1 with exclude_self, which needs q = p) and its outputs' sizes.
void check_knn_outputs(const char* op, std::int64_t n, bool has_q, std::int64_t m, std::int64_t k,
                       std::size_t indices, std::size_t values, const Options& options) {
  using detail::rules::Rule;
  if (has_q && options.exclude_self) fail(op, detail::rules::text(Rule::exclude_self, {}));
  const std::int64_t max_k = options.exclude_self ? m - 1 : m;
  if (k < 1 || k > max_k) {
    fail(op, detail::rules::text(Rule::k_range, {{"k", show(k)},
                                                 {"bound", options.exclude_self ? "M - 1" : "M"},
                                                 {"max", show(max_k)}}));
  }
  const std::int64_t size = detail::checked_mul(op, n, k, "N * k");
  check_size(op, "indices", indices, size);
  check_size(op, "values", values, size);
}

// knn's buffers: a block of rows x m results and the best k of each of its rows.
struct KnnBuffers {
  detail::BlockBuffer<double> block, best;
};

KnnBuffers knn_buffers(const char* op, std::int64_t rows, std::int64_t m, std::int64_t k) {
  KnnBuffers buffers;
  try {
    buffers.block = detail::BlockBuffer<double>(rows * m);
    buffers.best = detail::BlockBuffer<double>(rows * k);
  } catch (const std::bad_alloc&) {
    detail::fail_out_of_memory(op, "out of memory for a block of " + show(rows) + " x " + show(m) +
                                       " results; lower options.memory_budget");
  }
  return buffers;
}

// Checks the options, plans and validates an all-pairs call; returns the plan.
template <class T>
detail::PairsPlan plan_and_validate(const char* op, const Gaussians<T>& p, const Gaussians<T>* q,
                                    const Options& options) {
  check_options(op, options);
  detail::require_kl(op, options);
  detail::PairsPlan plan = detail::plan_pairs(p, q, options);
  detail::validate(op, "p", p, plan.backend.workers);
  if (q) {
    detail::validate(op, "q", *q, plan.backend.workers);
    detail::validate_same_d(op, p, *q);
  }
  return plan;
}

// Prepares the path the plan chose, wording a failed factorization as an error.
template <class T>
cpu::AllPairs prepare_all_pairs(const char* op, const Gaussians<T>& p, const Gaussians<T>* q,
                                const detail::PairsPlan& plan, const Options& options) {
  std::optional<cpu::AllPairs> pairs;
  cpu::Jitter jitter{options.jitter};
  run(op, p, q, [&] { return cpu::AllPairs::prepare(p, q, plan.backend, jitter, pairs); });
  report_jitter(options, jitter);
  return std::move(*pairs);
}

// After validation: blocks of rows computed in order and either handed to sink or, when sink is
// null, written into `out`. Double results are computed in place; float results of a path that
// writes them (plan.writes_float) are written as floats by the backend (no block of doubles);
// other float results go through a block of doubles and are converted.
template <class T, class U>
void stream_pairwise(const char* op, const Gaussians<T>& p, const Gaussians<T>* q,
                     detail::PairsPlan plan, const RowSink<U>* sink, U* out,
                     const Options& options) {
  const std::int64_t n = p.n(), m = q ? q->n() : n;
  const int workers = plan.backend.workers;
  constexpr bool in_place = std::is_same_v<U, double>;
  const bool direct = !in_place && plan.writes_float;
  const bool to_out = sink == nullptr;
  const bool doubles = !in_place && !direct;  // a block of doubles, then converted
  // Per row: the block of doubles if any, the conversion for a sink in U. Direct writes to out
  // need neither; a nominal row of U still sizes the blocks (the progress reports).
  const std::int64_t row_bytes = detail::checked_mul(
      op, m, static_cast<std::int64_t>((doubles || in_place ? 8 : 0) + (!in_place ? sizeof(U) : 0)),
      "M * 8");
  detail::size_blocks(op, plan, p, q, options, row_bytes, false);
  const std::int64_t rows = plan.block_rows;
  const cpu::AllPairs pairs = prepare_all_pairs(op, p, q, plan, options);
  // Not value-initialized: every entry of a block is written before it is read.
  detail::BlockBuffer<double> block;
  detail::BlockBuffer<U> converted;
  try {
    if (doubles || (in_place && !to_out)) block = detail::BlockBuffer<double>(rows * m);
    if (!in_place && !to_out) converted = detail::BlockBuffer<U>(rows * m);
  } catch (const std::bad_alloc&) {
    detail::fail_out_of_memory(op, "out of memory for a block of " + show(rows) + " x " + show(m) +
                                       " results; lower options.memory_budget");
  }
  for (std::int64_t lo = 0; lo < n; lo += rows) {
    const std::int64_t hi = std::min(n, lo + rows), size = (hi - lo) * m;
    U* const dst = to_out ? out + lo * m : converted.get();
    if constexpr (in_place) {
      double* target = to_out ? dst : block.get();
      run(op, p, q, [&] {
        pairs.block(lo, hi, target, workers);
        return cpu::Failure{};
      });
      if (!to_out) {
        (*sink)(lo, hi - lo, std::span<const double>(target, static_cast<std::size_t>(size)));
      }
    } else {
      run(op, p, q, [&] {
        if (direct) {
          pairs.block(lo, hi, dst, workers);
        } else {
          pairs.block(lo, hi, block.get(), workers);
        }
        return cpu::Failure{};
      });
      if (!direct) {
        std::transform(block.get(), block.get() + size, dst, [](double x) { return U(x); });
      }
      if (!to_out) (*sink)(lo, hi - lo, std::span<const U>(dst, static_cast<std::size_t>(size)));
    }
    if (options.progress) options.progress(hi, n);
  }
}

template <class T, class U>
void pairwise_rows_impl(const Gaussians<T>& p, const Gaussians<T>* q, const RowSink<U>& sink,
                        const Options& options, const char* op = "pairwise_kl") {
  const detail::PairsPlan plan = plan_and_validate(op, p, q, options);
  detail::checked_mul(op, p.n(), q ? q->n() : p.n(), "N * M");
  stream_pairwise<T, U>(op, p, q, plan, &sink, nullptr, options);
}

template <class T, class U>
void pairwise_impl(const Gaussians<T>& p, const Gaussians<T>* q, std::span<U> out,
                   const Options& options, const char* op = "pairwise_kl") {
  const detail::PairsPlan plan = plan_and_validate(op, p, q, options);
  check_size(op, "out", out.size(), detail::checked_mul(op, p.n(), q ? q->n() : p.n(), "N * M"));
  stream_pairwise<T, U>(op, p, q, plan, nullptr, out.data(), options);
}

template <class T, class U>
void knn_impl(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t k,
              std::span<std::int64_t> indices, std::span<U> values, const Options& options,
              const char* op = "knn_kl") {
  detail::PairsPlan plan = plan_and_validate(op, p, q, options);
  const std::int64_t m = q ? q->n() : p.n();
  check_knn_outputs(op, p.n(), q != nullptr, m, k, indices.size(), values.size(), options);
  const std::int64_t n = p.n();
  const int workers = plan.backend.workers;
  // A row of the block and its best k.
  const std::int64_t row_bytes = detail::checked_mul(op, m + k, 8, "(M + k) * 8");
  detail::size_blocks(op, plan, p, q, options, row_bytes, true);
  const std::int64_t rows = plan.block_rows;
  const cpu::AllPairs pairs = prepare_all_pairs(op, p, q, plan, options);
  const KnnBuffers buffers = knn_buffers(op, rows, m, k);
  for (std::int64_t lo = 0; lo < n; lo += rows) {
    const std::int64_t hi = std::min(n, lo + rows);
    run(op, p, q, [&] {
      pairs.block(lo, hi, buffers.block.get(), workers);
      cpu::knn_block(pairs, lo, hi, buffers.block.get(), pairs.tolerance(), k, options.exclude_self,
                     indices.data() + lo * k, buffers.best.get(), workers);
      return cpu::Failure{};
    });
    std::transform(buffers.best.get(), buffers.best.get() + (hi - lo) * k, values.begin() + lo * k,
                   [](double x) { return static_cast<U>(x); });
    if (options.progress) options.progress(hi, n);
  }
}

// ---- all pairs of any divergence: KL by the KL paths above, the others by cpu/divergence/ ----

// Plans (detail::plan_divergence_pairs) and validates; q == nullptr: q = p.
template <class T>
cpu::DivergenceConfig plan_divergence_pairs(const char* op, const Gaussians<T>& p,
                                            const Gaussians<T>* q, const Options& options) {
  const cpu::DivergenceConfig config = detail::plan_divergence_pairs(p, q, options);
  detail::validate(op, "p", p, config.workers);
  if (q) {
    detail::validate(op, "q", *q, config.workers);
    detail::validate_same_d(op, p, *q);
  }
  return config;
}

// Rows per block of results of row_bytes each (plus knn's selection with `knn`), as size_blocks
// does for KL: what the prepared distributions and work buffers leave of the budget.
template <class T>
std::int64_t divergence_block_rows(const char* op, const Gaussians<T>& p, const Gaussians<T>* q,
                                   const cpu::DivergenceConfig& config, const Options& options,
                                   std::int64_t row_bytes, bool knn) {
  const std::int64_t n = std::max<std::int64_t>(p.n(), 1);
  row_bytes = std::max<std::int64_t>(row_bytes, 1);
  if (options.memory_budget == 0) {
    return std::clamp<std::int64_t>(limits::default_block_bytes / row_bytes, 1, n);
  }
  const cpu::PairsBytes bytes = cpu::DivergencePairs<T>::footprint(p, q, config);
  std::int64_t work = bytes.work;
  if (knn) work = cpu::sat_add(work, cpu::knn_block_bytes(q ? q->n() : p.n(), 0, config.workers));
  const std::int64_t fixed = cpu::sat_add(bytes.kept, work);
  const std::int64_t left = options.memory_budget - std::min(fixed, options.memory_budget);
  if (left < row_bytes) {
    throw MemoryBudgetError(op, options.memory_budget,
                            "the prepared distributions and work buffers take " +
                                detail::show_bytes(fixed) + ", and each row of results " +
                                detail::show_bytes(row_bytes) + " more");
  }
  return std::min(left / row_bytes, n);
}

template <class T>
cpu::DivergencePairs<T> prepare_divergence_pairs(const char* op, const Gaussians<T>& p,
                                                 const Gaussians<T>* q,
                                                 const cpu::DivergenceConfig& config,
                                                 const Options& options) {
  std::optional<cpu::DivergencePairs<T>> pairs;
  cpu::Jitter jitter{options.jitter};
  run(op, p, q, [&] { return cpu::DivergencePairs<T>::prepare(p, q, config, jitter, pairs); });
  report_jitter(options, jitter);
  return std::move(*pairs);
}

// All pairs of options.divergence, into out or (out == nullptr) handed to sink block by block.
template <class T, class U>
void pairwise_any(const Gaussians<T>& p, const Gaussians<T>* q, const RowSink<U>* sink,
                  const std::span<U>* out_span, const Options& options) {
  const char* op = "pairwise";
  check_options(op, options);
  if (options.divergence == Divergence::kl) {
    if (out_span) {
      pairwise_impl(p, q, *out_span, options, op);
    } else {
      pairwise_rows_impl(p, q, *sink, options, op);
    }
    return;
  }
  const cpu::DivergenceConfig config = plan_divergence_pairs(op, p, q, options);
  const std::int64_t n = p.n(), m = q ? q->n() : n;
  const std::int64_t total = detail::checked_mul(op, n, m, "N * M");
  if (out_span) check_size(op, "out", out_span->size(), total);
  U* const out = out_span ? out_span->data() : nullptr;
  constexpr bool in_place = std::is_same_v<U, double>;
  const bool to_out = out_span != nullptr;
  const bool doubles = !(in_place && to_out);   // a block of doubles (else written in place)
  const bool converted = !in_place && !to_out;  // and its conversion for the sink
  // Per row: the block of doubles (or, written in place, a nominal row of them that still sizes
  // the blocks, i.e. the progress reports) and the conversion for a sink in float.
  const std::int64_t row_bytes = detail::checked_mul(
      op, m, static_cast<std::int64_t>(8 + (converted ? sizeof(U) : 0)), "M * 8");
  const std::int64_t rows = divergence_block_rows(op, p, q, config, options, row_bytes, false);
  const cpu::DivergencePairs<T> pairs = prepare_divergence_pairs(op, p, q, config, options);
  detail::BlockBuffer<double> block;
  detail::BlockBuffer<U> conversion;
  try {
    if (doubles) block = detail::BlockBuffer<double>(rows * m);
    if (converted) conversion = detail::BlockBuffer<U>(rows * m);
  } catch (const std::bad_alloc&) {
    detail::fail_out_of_memory(op, "out of memory for a block of " + show(rows) + " x " + show(m) +
                                       " results; lower options.memory_budget");
  }
  for (std::int64_t lo = 0; lo < n; lo += rows) {
    const std::int64_t hi = std::min(n, lo + rows), size = (hi - lo) * m;
    double* target = block.get();
    if constexpr (in_place) {
      if (to_out) target = out + lo * m;
    }
    run(op, p, q, [&] { return pairs.block(lo, hi, target); });
    if (to_out) {
      if (doubles)
        std::transform(target, target + size, out + lo * m, [](double x) { return U(x); });
    } else if constexpr (in_place) {
      (*sink)(lo, hi - lo, std::span<const double>(target, static_cast<std::size_t>(size)));
    } else {
      std::transform(target, target + size, conversion.get(), [](double x) { return U(x); });
      (*sink)(lo, hi - lo, std::span<const U>(conversion.get(), static_cast<std::size_t>(size)));
    }
    if (options.progress) options.progress(hi, n);
  }
}

// Nearest neighbours by options.divergence.
template <class T, class U>
void knn_any(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t k,
             std::span<std::int64_t> indices, std::span<U> values, const Options& options) {
  const char* op = "knn";
  check_options(op, options);
  if (options.divergence == Divergence::kl) {
    knn_impl(p, q, k, indices, values, options, op);
    return;
  }
  const cpu::DivergenceConfig config = plan_divergence_pairs(op, p, q, options);
  const std::int64_t n = p.n(), m = q ? q->n() : n;
  check_knn_outputs(op, n, q != nullptr, m, k, indices.size(), values.size(), options);
  const std::int64_t row_bytes = detail::checked_mul(op, m + k, 8, "(M + k) * 8");
  const std::int64_t rows = divergence_block_rows(op, p, q, config, options, row_bytes, true);
  const cpu::DivergencePairs<T> pairs = prepare_divergence_pairs(op, p, q, config, options);
  const KnnBuffers buffers = knn_buffers(op, rows, m, k);
  for (std::int64_t lo = 0; lo < n; lo += rows) {
    const std::int64_t hi = std::min(n, lo + rows);
    run(op, p, q, [&] {
      const cpu::Failure f = pairs.block(lo, hi, buffers.block.get());
      if (!f.side) {
        cpu::knn_block_exact(m, lo, hi, buffers.block.get(), k, options.exclude_self,
                             indices.data() + lo * k, buffers.best.get(), config.workers);
      }
      return f;
    });
    std::transform(buffers.best.get(), buffers.best.get() + (hi - lo) * k, values.begin() + lo * k,
                   [](double x) { return static_cast<U>(x); });
    if (options.progress) options.progress(hi, n);
  }
}

}  // namespace

#define GAUSSKL_DEFINE(T, U)                                                                     \
  void kl(const Gaussians<T>& p, const Gaussians<T>& q, std::span<U> out,                        \
          const Options& options) {                                                              \
    kl_impl(p, q, out, options);                                                                 \
  }                                                                                              \
  void divergence(const Gaussians<T>& p, const Gaussians<T>& q, std::span<U> out,                \
                  const Options& options) {                                                      \
    divergence_impl(p, q, out, options);                                                         \
  }                                                                                              \
  void kl_standard_normal(const Gaussians<T>& p, std::span<U> out, const Options& options) {     \
    kl_standard_normal_impl(p, out, options);                                                    \
  }                                                                                              \
  void pairwise_kl(const Gaussians<T>& p, const Gaussians<T>& q, std::span<U> out,               \
                   const Options& options) {                                                     \
    pairwise_impl(p, &q, out, options);                                                          \
  }                                                                                              \
  void pairwise_kl(const Gaussians<T>& p, std::span<U> out, const Options& options) {            \
    pairwise_impl<T, U>(p, nullptr, out, options);                                               \
  }                                                                                              \
  void pairwise_kl_rows(const Gaussians<T>& p, const Gaussians<T>* q, const RowSink<U>& sink,    \
                        const Options& options) {                                                \
    pairwise_rows_impl<T, U>(p, q, sink, options);                                               \
  }                                                                                              \
  void pairwise_kl_rows(const Gaussians<T>& p, const Gaussians<T>& q, const RowSink<U>& sink,    \
                        const Options& options) {                                                \
    pairwise_rows_impl<T, U>(p, &q, sink, options);                                              \
  }                                                                                              \
  void pairwise_kl_rows(const Gaussians<T>& p, const RowSink<U>& sink, const Options& options) { \
    pairwise_rows_impl<T, U>(p, nullptr, sink, options);                                         \
  }                                                                                              \
  void knn_kl(const Gaussians<T>& p, const Gaussians<T>& q, std::int64_t k,                      \
              std::span<std::int64_t> indices, std::span<U> values, const Options& options) {    \
    knn_impl(p, &q, k, indices, values, options);                                                \
  }                                                                                              \
  void knn_kl(const Gaussians<T>& p, std::int64_t k, std::span<std::int64_t> indices,            \
              std::span<U> values, const Options& options) {                                     \
    knn_impl<T, U>(p, nullptr, k, indices, values, options);                                     \
  }                                                                                              \
  void pairwise(const Gaussians<T>& p, const Gaussians<T>& q, std::span<U> out,                  \
                const Options& options) {                                                        \
    pairwise_any<T, U>(p, &q, nullptr, &out, options);                                           \
  }                                                                                              \
  void pairwise(const Gaussians<T>& p, std::span<U> out, const Options& options) {               \
    pairwise_any<T, U>(p, nullptr, nullptr, &out, options);                                      \
  }                                                                                              \
  void pairwise_rows(const Gaussians<T>& p, const Gaussians<T>* q, const RowSink<U>& sink,       \
                     const Options& options) {                                                   \
    pairwise_any<T, U>(p, q, &sink, nullptr, options);                                           \
  }                                                                                              \
  void knn(const Gaussians<T>& p, const Gaussians<T>& q, std::int64_t k,                         \
           std::span<std::int64_t> indices, std::span<U> values, const Options& options) {       \
    knn_any<T, U>(p, &q, k, indices, values, options);                                           \
  }                                                                                              \
  void knn(const Gaussians<T>& p, std::int64_t k, std::span<std::int64_t> indices,               \
           std::span<U> values, const Options& options) {                                        \
    knn_any<T, U>(p, nullptr, k, indices, values, options);                                      \
  }
GAUSSKL_DEFINE(float, float)
GAUSSKL_DEFINE(float, double)
GAUSSKL_DEFINE(double, double)
GAUSSKL_DEFINE(double, float)
#undef GAUSSKL_DEFINE

}  // namespace gausskl
