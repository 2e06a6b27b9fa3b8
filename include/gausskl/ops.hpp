// The operations. All results are in nats (natural log).
//
// Errors: bad input throws std::invalid_argument, a lack of resources std::runtime_error, each also
// a gausskl::Error (gausskl/errors.hpp) with its kind, op and hint as data; messages read
// "[op] what, where", e.g.
//   "[kl] p.scale (std) must be positive and finite, found -0.5 at row 17, column 3".
// Inputs are validated once, in full, before any output is written.
// Results are computed in double precision whatever the input type.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>

#include "gausskl/errors.hpp"
#include "gausskl/export.hpp"
#include "gausskl/types.hpp"

namespace gausskl {

// The rules for Options (threads, jitter, tolerance and memory_budget within the ranges of
// gausskl/limits.hpp; alpha set, finite and not 1 in (0, inf) exactly for renyi), which every
// operation checks first; throws OptionError, tagged `op`.
GAUSSKL_API void check_options(const char* op, const Options& options);

// Row-wise: out[i] = KL(p_i || q_i) for i < N. p and q have equal N, or one of them has N = 1
// and is paired with every row of the other: out has the other side's N elements (so 0 when
// that side is empty).
GAUSSKL_API void kl(const Gaussians<float>& p, const Gaussians<float>& q, std::span<float> out,
                    const Options& options = {});
GAUSSKL_API void kl(const Gaussians<float>& p, const Gaussians<float>& q, std::span<double> out,
                    const Options& options = {});
GAUSSKL_API void kl(const Gaussians<double>& p, const Gaussians<double>& q, std::span<double> out,
                    const Options& options = {});
GAUSSKL_API void kl(const Gaussians<double>& p, const Gaussians<double>& q, std::span<float> out,
                    const Options& options = {});

// Row-wise, any divergence: out[i] = D(p_i || q_i) for the kind options.divergence (with
// options.alpha for renyi), broadcasting as kl does. Exact in double whatever the input type;
// p_i = q_i gives exactly 0, and a symmetric kind the same value with p and q swapped. All pairs
// and nearest neighbours of any kind: pairwise, pairwise_rows, knn (below). The KL operations
// (kl, pairwise_kl, knn_kl, ...) compute KL and reject any other options.divergence.
GAUSSKL_API void divergence(const Gaussians<float>& p, const Gaussians<float>& q,
                            std::span<float> out, const Options& options);
GAUSSKL_API void divergence(const Gaussians<float>& p, const Gaussians<float>& q,
                            std::span<double> out, const Options& options);
GAUSSKL_API void divergence(const Gaussians<double>& p, const Gaussians<double>& q,
                            std::span<double> out, const Options& options);
GAUSSKL_API void divergence(const Gaussians<double>& p, const Gaussians<double>& q,
                            std::span<float> out, const Options& options);

// out[i] = KL(p_i || N(0, I)), the VAE prior term; out has p.n elements.
GAUSSKL_API void kl_standard_normal(const Gaussians<float>& p, std::span<float> out,
                                    const Options& options = {});
GAUSSKL_API void kl_standard_normal(const Gaussians<float>& p, std::span<double> out,
                                    const Options& options = {});
GAUSSKL_API void kl_standard_normal(const Gaussians<double>& p, std::span<double> out,
                                    const Options& options = {});
GAUSSKL_API void kl_standard_normal(const Gaussians<double>& p, std::span<float> out,
                                    const Options& options = {});

// All pairs: out[i * M + j] = KL(p_i || q_j), row-major [N, M]. Memory is O(N * M) plus the
// factored q; no [N, M, D] intermediate. Without q, q = p and the diagonal is exactly 0.
GAUSSKL_API void pairwise_kl(const Gaussians<float>& p, const Gaussians<float>& q,
                             std::span<float> out, const Options& options = {});
GAUSSKL_API void pairwise_kl(const Gaussians<float>& p, const Gaussians<float>& q,
                             std::span<double> out, const Options& options = {});
GAUSSKL_API void pairwise_kl(const Gaussians<double>& p, const Gaussians<double>& q,
                             std::span<double> out, const Options& options = {});
GAUSSKL_API void pairwise_kl(const Gaussians<double>& p, const Gaussians<double>& q,
                             std::span<float> out, const Options& options = {});
GAUSSKL_API void pairwise_kl(const Gaussians<float>& p, std::span<float> out,
                             const Options& options = {});
GAUSSKL_API void pairwise_kl(const Gaussians<float>& p, std::span<double> out,
                             const Options& options = {});
GAUSSKL_API void pairwise_kl(const Gaussians<double>& p, std::span<double> out,
                             const Options& options = {});
GAUSSKL_API void pairwise_kl(const Gaussians<double>& p, std::span<float> out,
                             const Options& options = {});

// All pairs, streamed: sink(first_row, rows, block) is called for consecutive blocks of rows of
// the [N, M] matrix, in order, block row-major [rows, M], so the matrix never has to be held
// whole (block size from options.memory_budget). q == nullptr means q = p. An exception thrown
// by sink stops the computation and propagates.
template <class U>
using RowSink = std::function<void(std::int64_t first_row, std::int64_t rows, std::span<const U>)>;
GAUSSKL_API void pairwise_kl_rows(const Gaussians<float>& p, const Gaussians<float>* q,
                                  const RowSink<float>& sink, const Options& options = {});
GAUSSKL_API void pairwise_kl_rows(const Gaussians<float>& p, const Gaussians<float>* q,
                                  const RowSink<double>& sink, const Options& options = {});
GAUSSKL_API void pairwise_kl_rows(const Gaussians<double>& p, const Gaussians<double>* q,
                                  const RowSink<double>& sink, const Options& options = {});
GAUSSKL_API void pairwise_kl_rows(const Gaussians<double>& p, const Gaussians<double>* q,
                                  const RowSink<float>& sink, const Options& options = {});
// The same with q given (as pairwise_kl(p, q, ...)), and without q: q = p.
GAUSSKL_API void pairwise_kl_rows(const Gaussians<float>& p, const Gaussians<float>& q,
                                  const RowSink<float>& sink, const Options& options = {});
GAUSSKL_API void pairwise_kl_rows(const Gaussians<float>& p, const Gaussians<float>& q,
                                  const RowSink<double>& sink, const Options& options = {});
GAUSSKL_API void pairwise_kl_rows(const Gaussians<double>& p, const Gaussians<double>& q,
                                  const RowSink<double>& sink, const Options& options = {});
GAUSSKL_API void pairwise_kl_rows(const Gaussians<double>& p, const Gaussians<double>& q,
                                  const RowSink<float>& sink, const Options& options = {});
GAUSSKL_API void pairwise_kl_rows(const Gaussians<float>& p, const RowSink<float>& sink,
                                  const Options& options = {});
GAUSSKL_API void pairwise_kl_rows(const Gaussians<float>& p, const RowSink<double>& sink,
                                  const Options& options = {});
GAUSSKL_API void pairwise_kl_rows(const Gaussians<double>& p, const RowSink<double>& sink,
                                  const Options& options = {});
GAUSSKL_API void pairwise_kl_rows(const Gaussians<double>& p, const RowSink<float>& sink,
                                  const Options& options = {});

// Nearest neighbours by KL: for each p_i, the k smallest KL(p_i || q_j), ascending, ties broken
// by the lower j. indices and values are row-major [N, k]. 1 <= k <= M (M - 1 with
// options.exclude_self). Without q, q = p. Rows are streamed in blocks; the [N, M] matrix is
// never held, and the candidates are re-scored exactly before the final order.
GAUSSKL_API void knn_kl(const Gaussians<float>& p, const Gaussians<float>& q, std::int64_t k,
                        std::span<std::int64_t> indices, std::span<float> values,
                        const Options& options = {});
GAUSSKL_API void knn_kl(const Gaussians<float>& p, const Gaussians<float>& q, std::int64_t k,
                        std::span<std::int64_t> indices, std::span<double> values,
                        const Options& options = {});
GAUSSKL_API void knn_kl(const Gaussians<double>& p, const Gaussians<double>& q, std::int64_t k,
                        std::span<std::int64_t> indices, std::span<double> values,
                        const Options& options = {});
GAUSSKL_API void knn_kl(const Gaussians<double>& p, const Gaussians<double>& q, std::int64_t k,
                        std::span<std::int64_t> indices, std::span<float> values,
                        const Options& options = {});
GAUSSKL_API void knn_kl(const Gaussians<float>& p, std::int64_t k, std::span<std::int64_t> indices,
                        std::span<float> values, const Options& options = {});
GAUSSKL_API void knn_kl(const Gaussians<float>& p, std::int64_t k, std::span<std::int64_t> indices,
                        std::span<double> values, const Options& options = {});
GAUSSKL_API void knn_kl(const Gaussians<double>& p, std::int64_t k, std::span<std::int64_t> indices,
                        std::span<double> values, const Options& options = {});
GAUSSKL_API void knn_kl(const Gaussians<double>& p, std::int64_t k, std::span<std::int64_t> indices,
                        std::span<float> values, const Options& options = {});

// ---- All pairs and nearest neighbours of any divergence ----
//
// pairwise, pairwise_rows and knn are pairwise_kl, pairwise_kl_rows and knn_kl for the kind
// options.divergence (with options.alpha for renyi); with kl they are exactly those (tagged
// "[pairwise]", "[knn]"). Same contract: out[i * M + j] = D(p_i || q_j), row-major [N, M],
// computed in blocks of rows within options.memory_budget, progress after each block, no
// [N, M, D] intermediate; without q, q = p and the diagonal is exactly 0. Two diagonal sides of
// jeffreys, bhattacharyya, hellinger and wasserstein2 are computed in SIMD tiles within
// options.tolerance as pairwise_kl's entries (each within tolerance * (|D| + 1) of exact); every
// other case exactly, per pair, in double (options.tolerance does not apply): two diagonal sides
// of renyi by the row-wise closed forms, other families with each distribution factored once and
// only the pair's mixed covariance per pair (docs/divergences.md). With q = p, a symmetric kind
// (all but renyi and kl) computes each pair of a block once and mirrors it: the matrix is
// bit-symmetric. A Renyi pair of order > 1 whose mixed covariance is not positive definite is an
// error naming p's and q's rows; rows of out before that pair's block may then have been written.
GAUSSKL_API void pairwise(const Gaussians<float>& p, const Gaussians<float>& q,
                          std::span<float> out, const Options& options);
GAUSSKL_API void pairwise(const Gaussians<float>& p, const Gaussians<float>& q,
                          std::span<double> out, const Options& options);
GAUSSKL_API void pairwise(const Gaussians<double>& p, const Gaussians<double>& q,
                          std::span<double> out, const Options& options);
GAUSSKL_API void pairwise(const Gaussians<double>& p, const Gaussians<double>& q,
                          std::span<float> out, const Options& options);
GAUSSKL_API void pairwise(const Gaussians<float>& p, std::span<float> out, const Options& options);
GAUSSKL_API void pairwise(const Gaussians<float>& p, std::span<double> out, const Options& options);
GAUSSKL_API void pairwise(const Gaussians<double>& p, std::span<double> out,
                          const Options& options);
GAUSSKL_API void pairwise(const Gaussians<double>& p, std::span<float> out, const Options& options);
// Streamed as pairwise_kl_rows; q == nullptr means q = p.
GAUSSKL_API void pairwise_rows(const Gaussians<float>& p, const Gaussians<float>* q,
                               const RowSink<float>& sink, const Options& options);
GAUSSKL_API void pairwise_rows(const Gaussians<float>& p, const Gaussians<float>* q,
                               const RowSink<double>& sink, const Options& options);
GAUSSKL_API void pairwise_rows(const Gaussians<double>& p, const Gaussians<double>* q,
                               const RowSink<double>& sink, const Options& options);
GAUSSKL_API void pairwise_rows(const Gaussians<double>& p, const Gaussians<double>* q,
                               const RowSink<float>& sink, const Options& options);
// The k smallest D(p_i || q_j) per row, ascending, ties to the lower j; exclude_self as knn_kl.
GAUSSKL_API void knn(const Gaussians<float>& p, const Gaussians<float>& q, std::int64_t k,
                     std::span<std::int64_t> indices, std::span<float> values,
                     const Options& options);
GAUSSKL_API void knn(const Gaussians<float>& p, const Gaussians<float>& q, std::int64_t k,
                     std::span<std::int64_t> indices, std::span<double> values,
                     const Options& options);
GAUSSKL_API void knn(const Gaussians<double>& p, const Gaussians<double>& q, std::int64_t k,
                     std::span<std::int64_t> indices, std::span<double> values,
                     const Options& options);
GAUSSKL_API void knn(const Gaussians<double>& p, const Gaussians<double>& q, std::int64_t k,
                     std::span<std::int64_t> indices, std::span<float> values,
                     const Options& options);
GAUSSKL_API void knn(const Gaussians<float>& p, std::int64_t k, std::span<std::int64_t> indices,
                     std::span<float> values, const Options& options);
GAUSSKL_API void knn(const Gaussians<float>& p, std::int64_t k, std::span<std::int64_t> indices,
                     std::span<double> values, const Options& options);
GAUSSKL_API void knn(const Gaussians<double>& p, std::int64_t k, std::span<std::int64_t> indices,
                     std::span<double> values, const Options& options);
GAUSSKL_API void knn(const Gaussians<double>& p, std::int64_t k, std::span<std::int64_t> indices,
                     std::span<float> values, const Options& options);

}  // namespace gausskl
