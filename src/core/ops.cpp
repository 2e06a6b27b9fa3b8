// The public operations: check the options, plan (core/plan.hpp), validate, call the backend
// (cpu/backend.hpp) and word its failures. One path per shape of result, the kind a parameter.
#include "gausskl/ops.hpp"

#include <algorithm>
#include <new>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/plan.hpp"
#include "core/validate.hpp"
#include "cpu/backend.hpp"
#include "gausskl/families.hpp"
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

// A failed factorization (or Renyi pair) as its error; nothing when nothing failed.
template <class T>
void word_failure(const char* op, const Gaussians<T>& p, const Gaussians<T>* q,
                  const cpu::Failure& f) {
  if (!f.side) return;
  if (std::string(f.side) == "pair") {  // only a Renyi divergence of order > 1 fails per pair
    const std::string where = f.column >= 0
                                  ? "p row " + show(f.where.index) + " and q row " + show(f.column)
                                  : "row " + show(f.where.index);
    fail(op, detail::rules::renyi_infinite(where, f.where.pivot, show(f.where.value)));
  }
  const Gaussians<T>& g = (f.side[0] == 'q' && q) ? *q : p;
  if (f.where.indefinite) {  // wasserstein2, which accepts a singular covariance
    throw InputError(ErrorKind::not_positive_definite, op,
                     std::string(f.side) + ".scale (" + describe(g).scale_param +
                         ") is not positive semi-definite at distribution " + show(f.where.index) +
                         ": eigenvalue " + show(f.where.value) +
                         " is negative beyond rounding (the largest is " + show(f.where.largest) +
                         ")",
                     f.side, f.where.index, hints::regularize);
  }
  throw NotPositiveDefiniteError(op, f.side, describe(g).scale_param, f.where.index, f.where.pivot,
                                 show(f.where.value));
}

// Runs a backend call; turns a failed factorization and a failed allocation into errors.
template <class T, class Call>
void run(const char* op, const Gaussians<T>& p, const Gaussians<T>* q, Call&& call) {
  cpu::Failure f;
  try {
    f = call();
  } catch (const std::bad_alloc&) {
    detail::fail_workspace(op, p.d(), p.n());
  }
  word_failure(op, p, q, f);
}

// out[i] = D(p_i || q_i) of options.divergence; q == nullptr: q = N(0, I) (kl_standard_normal).
template <class T, class U>
void rowwise_impl(const char* op, const Gaussians<T>& p, const Gaussians<T>* q, std::span<U> out,
                  const Options& options) {
  const cpu::RowwiseConfig plan =
      detail::plan_rowwise(p, q, q ? std::max(p.n(), q->n()) : p.n(), options);
  detail::validate(op, "p", p, plan.workers);
  std::int64_t n = p.n();
  if (q) {
    detail::validate(op, "q", *q, plan.workers);
    detail::validate_same_d(op, p, *q);
    n = detail::broadcast_rows(op, p, *q);
  }
  check_size(op, "out", out.size(), n);
  detail::check_rowwise_budget(op, plan, p, q, n, options);
  cpu::Jitter jitter{options.jitter};
  run(op, p, q, [&] { return cpu::rowwise(p, q, n, out.data(), plan, jitter); });
  report_jitter(options, jitter);
}

// The operations named for KL take only kind kl.
const Options& kl_only(const char* op, const Options& options) {
  check_options(op, options);
  detail::require_kl(op, options);
  return options;
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

// Checks the options, plans and validates an all-pairs call; returns the plan.
template <class T>
detail::PairsPlan plan_and_validate(const char* op, const Gaussians<T>& p, const Gaussians<T>* q,
                                    const Options& options) {
  check_options(op, options);
  detail::PairsPlan plan = detail::plan_pairs(p, q, options);
  detail::validate(op, "p", p, plan.backend.workers);
  if (q) {
    detail::validate(op, "q", *q, plan.backend.workers);
    detail::validate_same_d(op, p, *q);
  }
  return plan;
}

// Prepares the engine the plan chose, wording a failed factorization as an error.
template <class T>
cpu::PairsEngine<T> prepare_engine(const char* op, const Gaussians<T>& p, const Gaussians<T>* q,
                                   const detail::PairsPlan& plan, const Options& options) {
  std::optional<cpu::PairsEngine<T>> engine;
  cpu::Jitter jitter{options.jitter};
  run(op, p, q, [&] { return cpu::PairsEngine<T>::prepare(p, q, plan.backend, jitter, engine); });
  report_jitter(options, jitter);
  return std::move(*engine);
}

// How the backend's block loop ended, as an error if it did not finish.
template <class T>
void word_stream_end(const char* op, const Gaussians<T>& p, const Gaussians<T>* q,
                     const cpu::StreamEnd& end, std::int64_t rows, std::int64_t m) {
  using Memory = cpu::StreamEnd::Memory;
  if (end.memory == Memory::block) {
    detail::fail_out_of_memory(op, "out of memory for a block of " + show(rows) + " x " + show(m) +
                                       " results; lower options.memory_budget");
  }
  if (end.memory == Memory::workspace) detail::fail_workspace(op, p.d(), p.n());
  word_failure(op, p, q, end.failure);
}

// All pairs of options.divergence, into out or (out == nullptr) handed to sink block by block.
template <class T, class U>
void pairwise_impl(const char* op, const Gaussians<T>& p, const Gaussians<T>* q,
                   const RowSink<U>* sink, const std::span<U>* out, const Options& options) {
  detail::PairsPlan plan = plan_and_validate(op, p, q, options);
  const std::int64_t n = p.n(), m = q ? q->n() : n;
  const std::int64_t total = detail::checked_mul(op, n, m, "N * M");
  if (out) check_size(op, "out", out->size(), total);
  const std::int64_t row_bytes = detail::result_row_bytes<U>(op, plan, m, out != nullptr);
  detail::size_blocks(op, plan, p, q, options, row_bytes, false);
  const cpu::PairsEngine<T> engine = prepare_engine(op, p, q, plan, options);
  const cpu::StreamEnd end =
      cpu::pairwise_stream(engine, n, plan.block_rows, plan.writes_float,
                           out ? out->data() : nullptr, out ? nullptr : sink, options.progress);
  word_stream_end(op, p, q, end, plan.block_rows, m);
}

// The k nearest q_j of each p_i by options.divergence.
template <class T, class U>
void knn_impl(const char* op, const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t k,
              std::span<std::int64_t> indices, std::span<U> values, const Options& options) {
  detail::PairsPlan plan = plan_and_validate(op, p, q, options);
  const std::int64_t n = p.n(), m = q ? q->n() : n;
  check_knn_outputs(op, n, q != nullptr, m, k, indices.size(), values.size(), options);
  // A row of the block and its best k.
  const std::int64_t row_bytes = detail::checked_mul(op, m + k, 8, "(M + k) * 8");
  detail::size_blocks(op, plan, p, q, options, row_bytes, true);
  const cpu::PairsEngine<T> engine = prepare_engine(op, p, q, plan, options);
  const cpu::StreamEnd end = cpu::knn_stream(engine, n, plan.block_rows, k, options.exclude_self,
                                             indices.data(), values.data(), options.progress);
  word_stream_end(op, p, q, end, plan.block_rows, m);
}

}  // namespace

#define GAUSSKL_DEFINE(T, U)                                                                     \
  void kl(const Gaussians<T>& p, const Gaussians<T>& q, std::span<U> out,                        \
          const Options& options) {                                                              \
    rowwise_impl("kl", p, &q, out, kl_only("kl", options));                                      \
  }                                                                                              \
  void divergence(const Gaussians<T>& p, const Gaussians<T>& q, std::span<U> out,                \
                  const Options& options) {                                                      \
    check_options("divergence", options);                                                        \
    rowwise_impl("divergence", p, &q, out, options);                                             \
  }                                                                                              \
  void kl_standard_normal(const Gaussians<T>& p, std::span<U> out, const Options& options) {     \
    const char* op = "kl_standard_normal";                                                       \
    rowwise_impl<T, U>(op, p, nullptr, out, kl_only(op, options));                               \
  }                                                                                              \
  void pairwise_kl(const Gaussians<T>& p, const Gaussians<T>& q, std::span<U> out,               \
                   const Options& options) {                                                     \
    pairwise_impl<T, U>("pairwise_kl", p, &q, nullptr, &out, kl_only("pairwise_kl", options));   \
  }                                                                                              \
  void pairwise_kl(const Gaussians<T>& p, std::span<U> out, const Options& options) {            \
    pairwise_impl<T, U>("pairwise_kl", p, nullptr, nullptr, &out,                                \
                        kl_only("pairwise_kl", options));                                        \
  }                                                                                              \
  void pairwise_kl_rows(const Gaussians<T>& p, const Gaussians<T>* q, const RowSink<U>& sink,    \
                        const Options& options) {                                                \
    pairwise_impl<T, U>("pairwise_kl", p, q, &sink, nullptr, kl_only("pairwise_kl", options));   \
  }                                                                                              \
  void pairwise_kl_rows(const Gaussians<T>& p, const Gaussians<T>& q, const RowSink<U>& sink,    \
                        const Options& options) {                                                \
    pairwise_impl<T, U>("pairwise_kl", p, &q, &sink, nullptr, kl_only("pairwise_kl", options));  \
  }                                                                                              \
  void pairwise_kl_rows(const Gaussians<T>& p, const RowSink<U>& sink, const Options& options) { \
    pairwise_impl<T, U>("pairwise_kl", p, nullptr, &sink, nullptr,                               \
                        kl_only("pairwise_kl", options));                                        \
  }                                                                                              \
  void knn_kl(const Gaussians<T>& p, const Gaussians<T>& q, std::int64_t k,                      \
              std::span<std::int64_t> indices, std::span<U> values, const Options& options) {    \
    knn_impl<T, U>("knn_kl", p, &q, k, indices, values, kl_only("knn_kl", options));             \
  }                                                                                              \
  void knn_kl(const Gaussians<T>& p, std::int64_t k, std::span<std::int64_t> indices,            \
              std::span<U> values, const Options& options) {                                     \
    knn_impl<T, U>("knn_kl", p, nullptr, k, indices, values, kl_only("knn_kl", options));        \
  }                                                                                              \
  void pairwise(const Gaussians<T>& p, const Gaussians<T>& q, std::span<U> out,                  \
                const Options& options) {                                                        \
    pairwise_impl<T, U>("pairwise", p, &q, nullptr, &out, options);                              \
  }                                                                                              \
  void pairwise(const Gaussians<T>& p, std::span<U> out, const Options& options) {               \
    pairwise_impl<T, U>("pairwise", p, nullptr, nullptr, &out, options);                         \
  }                                                                                              \
  void pairwise_rows(const Gaussians<T>& p, const Gaussians<T>* q, const RowSink<U>& sink,       \
                     const Options& options) {                                                   \
    pairwise_impl<T, U>("pairwise", p, q, &sink, nullptr, options);                              \
  }                                                                                              \
  void knn(const Gaussians<T>& p, const Gaussians<T>& q, std::int64_t k,                         \
           std::span<std::int64_t> indices, std::span<U> values, const Options& options) {       \
    knn_impl<T, U>("knn", p, &q, k, indices, values, options);                                   \
  }                                                                                              \
  void knn(const Gaussians<T>& p, std::int64_t k, std::span<std::int64_t> indices,               \
           std::span<U> values, const Options& options) {                                        \
    knn_impl<T, U>("knn", p, nullptr, k, indices, values, options);                              \
  }
GAUSSKL_DEFINE(float, float)
GAUSSKL_DEFINE(float, double)
GAUSSKL_DEFINE(double, double)
GAUSSKL_DEFINE(double, float)
#undef GAUSSKL_DEFINE

}  // namespace gausskl
