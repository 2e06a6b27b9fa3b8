#include "cpu/all_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu/common/parallel.hpp"
#include "cpu/common/saturating.hpp"
#include "cpu/pair/kl.hpp"
#include "cpu/pair/prepare.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {

// By default, entries of the diagonal and full-covariance paths left un-recomputed are within
// this of the exact value, relative to |KL| + 1: ten times below the accuracy promised for
// float32 and float64 inputs (1e-6 and 1e-12), so the paths never cost a digit of that promise.
template <class T>
constexpr double kDefaultTolerance = std::is_same_v<T, float> ? 1e-7 : 1e-13;

template <class T>
double AllPairs::tolerance_for(double requested) {
  return requested > 0 ? requested : kDefaultTolerance<T>;
}

AllPairs::AllPairs(std::optional<PreparedBatch> q, std::optional<PreparedBatch> p,
                   std::optional<DiagPairs> diag, std::optional<FullPairs> full, std::int64_t n,
                   std::int64_t m, double tolerance)
    : q_(std::move(q)),
      p_(std::move(p)),
      diag_(std::move(diag)),
      full_(std::move(full)),
      n_(n),
      m_(m),
      scratch_size_(q_ ? pair_scratch_size(q_->layout()) : 0),
      tolerance_(tolerance) {}

template <class T>
bool AllPairs::uses_full_pairs(const Gaussians<T>& p, const Gaussians<T>& q) {
  return std::holds_alternative<FullGaussians<T>>(q.variant()) &&
         !std::holds_alternative<LowRankGaussians<T>>(p.variant()) && q.d() >= kFullPairsMinD;
}

template <class T>
Failure AllPairs::prepare(const Gaussians<T>& p, const Gaussians<T>* q, int threads,
                          double tolerance, Jitter& jitter, std::optional<AllPairs>& out) {
  const Gaussians<T>& qq = q ? *q : p;
  const auto* p_diag = std::get_if<DiagGaussians<T>>(&p.variant());
  const auto* q_diag = std::get_if<DiagGaussians<T>>(&qq.variant());
  if (p_diag && q_diag) {
    out.emplace(AllPairs(std::nullopt, std::nullopt,
                         DiagPairs(*p_diag, q ? q_diag : nullptr, tolerance, threads), std::nullopt,
                         p.n(), qq.n(), tolerance));
    return {};
  }
  const bool p_tri = std::holds_alternative<FullGaussians<T>>(p.variant());
  PreparedBatch q_batch(layout_for(qq, !p_tri), qq.n());
  if (auto f = prepare_range(qq, 0, qq.n(), q_batch, threads, q ? jitter.of_q() : jitter.of_p());
      f.index >= 0) {
    return {q ? "q" : "p", f};
  }
  std::optional<PreparedBatch> p_batch;
  if (q) {
    p_batch.emplace(layout_for(p, false), p.n());
    if (auto f = prepare_range(p, 0, p.n(), *p_batch, threads, jitter.of_p()); f.index >= 0)
      return {"p", f};
  }
  std::optional<FullPairs> full;
  if (uses_full_pairs(p, qq)) {
    full.emplace(q_batch, qq.n(), p_batch ? &*p_batch : nullptr, p.n(), tolerance, threads);
  }
  out.emplace(AllPairs(std::move(q_batch), std::move(p_batch), std::nullopt, std::move(full), p.n(),
                       qq.n(), full ? tolerance : 0.0));
  return {};
}

template <class T>
int AllPairs::workers(const Gaussians<T>& p, const Gaussians<T>* q, int threads) {
  if (!writes_float(p, q)) return threads;  // the diagonal path
  const std::int64_t work = sat_mul(sat_mul(p.n(), (q ? *q : p).n()), p.d());
  return static_cast<int>(
      std::clamp<std::int64_t>(work / kDiagPairsWorkPerThread, 1, std::max(threads, 1)));
}

template <class T>
std::int64_t AllPairs::footprint(const Gaussians<T>& p, const Gaussians<T>* q, int threads,
                                 double tolerance, bool knn) {
  const Gaussians<T>& qq = q ? *q : p;
  const std::int64_t n = p.n(), m = qq.n();
  std::int64_t kept = 0, work = 0, scratch = 0;
  if (std::holds_alternative<DiagGaussians<T>>(p.variant()) &&
      std::holds_alternative<DiagGaussians<T>>(qq.variant())) {
    kept = DiagPairs::footprint<T>(n, m, p.d(), q == nullptr, tolerance, threads);
    // The per-worker buffers of float results (counted whatever the result type).
    work = DiagPairs::float_block_bytes(m, threads);
  } else {
    const Layout q_layout = layout_for(qq, !std::holds_alternative<FullGaussians<T>>(p.variant()));
    const Layout p_layout = layout_for(p, false);
    kept = sat_mul(8, sat_add(sat_mul(q_layout.size, m), q ? sat_mul(p_layout.size, n) : 0));
    // Preparing's scratch is freed before the blocks' is allocated: the larger of the two.
    scratch = pair_scratch_size(q_layout);
    work = sat_mul(sat_mul(8, threads), std::max({prepare_scratch_size(q_layout),
                                                  prepare_scratch_size(p_layout), scratch}));
    if (uses_full_pairs(p, qq)) {
      // The GEMM operands are kept; building them needs a centre and long-double scratch
      // after preparing's scratch is freed.
      kept = sat_add(kept, FullPairs::footprint(n, q ? m : n, p.d()));
      work = std::max(work, FullPairs::build_scratch(p.d(), threads));
    }
  }
  // knn_block: per thread an index order [M] (int64) and exact values [M] plus pair scratch.
  if (knn) work = sat_add(work, sat_mul(sat_mul(8, threads), sat_add(2 * m, scratch)));
  return sat_add(kept, work);
}

double AllPairs::exact(std::int64_t i, std::int64_t j, double* scratch) const {
  if (diag_) return diag_->exact(i, j);
  if (!p_ && i == j) return 0;  // KL(p_i || p_i) = 0 by definition, whatever round-off says
  const Prepared pi = p_ ? p_->get(i) : q_->get(i);
  return 0.5 * two_kl(pi, q_->get(j), scratch);
}

template <class T>
bool AllPairs::writes_float(const Gaussians<T>& p, const Gaussians<T>* q) {
  return std::holds_alternative<DiagGaussians<T>>(p.variant()) &&
         std::holds_alternative<DiagGaussians<T>>((q ? *q : p).variant());
}

void AllPairs::block(std::int64_t lo, std::int64_t hi, float* out, int threads) const {
  diag_->block(lo, hi, out, threads);  // writes_float(): the diagonal path
}

void AllPairs::block(std::int64_t lo, std::int64_t hi, double* out, int threads) const {
  if (diag_) {
    diag_->block(lo, hi, out, threads);
    return;
  }
  const std::int64_t rows = hi - lo, m = m_;
  std::vector<double> scratch(static_cast<std::size_t>(threads * scratch_size_));
  // Split rows over the workers; with fewer rows than workers (one query against a large q),
  // split each row's columns instead.
  const bool by_rows = rows >= threads;
  const std::int64_t units = by_rows ? rows : m;
  parallel_for(units, threads, [&](int w, std::int64_t a, std::int64_t b) {
    double* s = scratch.data() + w * scratch_size_;
    const std::int64_t i0 = by_rows ? lo + a : lo, i1 = by_rows ? lo + b : hi;
    const std::int64_t j0 = by_rows ? 0 : a, j1 = by_rows ? m : b;
    // The GEMM path leaves NaN where an entry must be re-scored exactly.
    if (full_) full_->rows(i0, i1, j0, j1, out + (i0 - lo) * m + j0, m);
    for (std::int64_t i = i0; i < i1; ++i) {
      double* row = out + (i - lo) * m;
      for (std::int64_t j = j0; j < j1; ++j) {
        if (!full_ || std::isnan(row[j])) row[j] = exact(i, j, s);
      }
    }
  });
}

template int AllPairs::workers<float>(const Gaussians<float>&, const Gaussians<float>*, int);
template int AllPairs::workers<double>(const Gaussians<double>&, const Gaussians<double>*, int);
template bool AllPairs::writes_float<float>(const Gaussians<float>&, const Gaussians<float>*);
template bool AllPairs::writes_float<double>(const Gaussians<double>&, const Gaussians<double>*);
template bool AllPairs::uses_full_pairs<float>(const Gaussians<float>&, const Gaussians<float>&);
template bool AllPairs::uses_full_pairs<double>(const Gaussians<double>&, const Gaussians<double>&);
template std::int64_t AllPairs::footprint<float>(const Gaussians<float>&, const Gaussians<float>*,
                                                 int, double, bool);
template std::int64_t AllPairs::footprint<double>(const Gaussians<double>&,
                                                  const Gaussians<double>*, int, double, bool);
template Failure AllPairs::prepare<float>(const Gaussians<float>&, const Gaussians<float>*, int,
                                          double, Jitter&, std::optional<AllPairs>&);
template Failure AllPairs::prepare<double>(const Gaussians<double>&, const Gaussians<double>*, int,
                                           double, Jitter&, std::optional<AllPairs>&);
template double AllPairs::tolerance_for<float>(double);
template double AllPairs::tolerance_for<double>(double);

}  // namespace gausskl::cpu
