#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/backend.hpp"
#include "cpu/common/family_views.hpp"
#include "cpu/common/parallel.hpp"
#include "cpu/common/saturating.hpp"
#include "cpu/pair/kl.hpp"
#include "cpu/rowwise/ukr_diag.hpp"
#include "cpu/rowwise/ukr_full.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {

// Each worker prepares its p_i and q_i into its own slots right before using them, so the
// prepared copies stay in cache and take O(threads) memory. A side with N = 1 is prepared once.
// Results go to a double buffer first: a factorization found to fail half-way leaves the
// caller's `out` untouched.
namespace {

// Diagonal p and diagonal q (or q = N(0, I)), the VAE KL term, skip all of that: the SIMD kernel
// of rowwise/ukr_diag.hpp reads the views in place and cannot fail, so it writes the results as it
// goes (through a small block of doubles for float results) and allocates nothing, unless `out`
// overlaps an input: then all results wait in a buffer until the last row has been read.

// The bytes [first, last) a view can reach (empty for no elements).
struct Bytes {
  std::uintptr_t first = 0, last = 0;
};
template <class T>
Bytes bytes_of(const View<T, 2>& v) {
  std::int64_t lo = 0, hi = 0;
  for (int k = 0; k < 2; ++k) {
    if (v.shape[k] == 0) return {};
    const std::int64_t reach = (v.shape[k] - 1) * v.strides[k];  // validated: no overflow
    (reach < 0 ? lo : hi) += reach;
  }
  const auto base = reinterpret_cast<std::uintptr_t>(v.data);
  return {base + static_cast<std::uintptr_t>(lo * std::int64_t{sizeof(T)}),
          base + static_cast<std::uintptr_t>((hi + 1) * std::int64_t{sizeof(T)})};
}
template <class T>
bool overlaps(const Bytes& out, const DiagGaussians<T>* g) {
  if (!g) return false;
  for (const Bytes b : {bytes_of(g->mean), bytes_of(g->scale)}) {
    if (b.first < out.last && out.first < b.last) return true;
  }
  return false;
}

// Rows [lo, hi) into out + lo: in place for double results, else block by block.
template <class T, class U>
void diag_rows(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo,
               std::int64_t hi, U* out) {
  if constexpr (std::is_same_v<U, double>) {
    rowwise_diag(p, q, lo, hi, out + lo);
  } else {
    double block[kRowwiseDiagBlock];
    for (std::int64_t b = lo; b < hi; b += kRowwiseDiagBlock) {
      const std::int64_t e = std::min(hi, b + kRowwiseDiagBlock);
      rowwise_diag(p, q, b, e, block);
      std::transform(block, block + (e - b), out + b, [](double x) { return static_cast<U>(x); });
    }
  }
}

template <class T, class U>
void kl_rowwise_diag(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n, U* out,
                     int threads) {
  const DiagGaussians<T>& pd = *as_diag(p);
  const DiagGaussians<T>* qd = q ? as_diag(*q) : nullptr;
  const auto first = reinterpret_cast<std::uintptr_t>(out);
  const Bytes out_bytes{first, first + static_cast<std::uintptr_t>(n) * sizeof(U)};
  if (n > 0 && (overlaps(out_bytes, &pd) || overlaps(out_bytes, qd))) {
    std::vector<double> result(static_cast<std::size_t>(n));
    parallel_for(n, threads, [&](int, std::int64_t lo, std::int64_t hi) {
      diag_rows(pd, qd, lo, hi, result.data());
    });
    std::transform(result.begin(), result.end(), out, [](double x) { return static_cast<U>(x); });
    return;
  }
  if (threads <= 1) {  // no std::function, no thread
    diag_rows(pd, qd, 0, n, out);
    return;
  }
  parallel_for(n, threads,
               [&](int, std::int64_t lo, std::int64_t hi) { diag_rows(pd, qd, lo, hi, out); });
}

// Full p and full q, both given by their factors, scale_tril or packed_scale_tril (the factors
// every full path would compute anyway): the SIMD kernel of rowwise/ukr_full.hpp reads the views in
// place and cannot fail, so only its scratch (per worker, a few tens of KiB at D = 32) and the
// result buffer are allocated.

// Each worker's scratch starts on a cache line of its own (staged rows are read as whole
// vectors).
constexpr std::int64_t kLineDoubles = 8;
std::int64_t tril_worker_doubles(std::int64_t d) {
  return (rowwise_full_scratch(d) + kLineDoubles - 1) / kLineDoubles * kLineDoubles;
}

template <class T, class U>
void kl_rowwise_tril(const Gaussians<T>& p, const Gaussians<T>& q, std::int64_t n, U* out,
                     int threads) {
  const std::int64_t per_worker = tril_worker_doubles(p.d());
  std::vector<double> scratch(static_cast<std::size_t>(threads * per_worker + kLineDoubles));
  const auto misalign = reinterpret_cast<std::uintptr_t>(scratch.data()) % 64;
  double* base = scratch.data() + (misalign ? (64 - misalign) / sizeof(double) : 0);
  std::vector<double> result(static_cast<std::size_t>(n));
  // Rows go out in chunks from a shared counter, not one range per worker: on a busy machine a
  // worker that is descheduled leaves its rows to the others. Any split gives the same bits.
  std::atomic<std::int64_t> next{0};
  parallel_for(threads, threads, [&](int w, std::int64_t, std::int64_t) {
    for (std::int64_t lo; (lo = next.fetch_add(kRowwiseFullChunk)) < n;) {
      rowwise_full(*as_tril(p), *as_tril(q), lo, std::min(n, lo + kRowwiseFullChunk), result.data(),
                   base + w * per_worker);
    }
  });
  std::transform(result.begin(), result.end(), out, [](double x) { return static_cast<U>(x); });
}

// What kl_rowwise allocates per distribution and per worker.
struct RowwiseSizes {
  Layout p_layout, q_layout;  // q_layout: N(0, I)'s without q
  std::int64_t prep_scratch, per_worker;

  template <class T>
  RowwiseSizes(const Gaussians<T>& p, const Gaussians<T>* q)
      : p_layout(layout_for(p, false)),
        q_layout(q ? q_layout_for(p, *q) : Layout(p.d(), 0, false, false)),
        prep_scratch(std::max(prepare_scratch_size(p_layout), prepare_scratch_size(q_layout))),
        // A p slot, a q slot, factorization scratch, pair scratch.
        per_worker(p_layout.size + q_layout.size + prep_scratch + pair_scratch_size(q_layout)) {}
};

}  // namespace

template <class T>
std::int64_t kl_rowwise_footprint(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n,
                                  const RowwiseConfig& config) {
  // kl_rowwise_diag's result buffer, which it needs only when `out` overlaps an input.
  if (config.path == RowwisePath::diag) return sat_mul(8, n);
  const int threads = config.workers;
  if (config.path == RowwisePath::tril) {  // kl_rowwise_tril's scratch and result buffer
    return sat_mul(8,
                   sat_add(sat_add(sat_mul(threads, tril_worker_doubles(p.d())), kLineDoubles), n));
  }
  const RowwiseSizes sizes(p, q);
  // The workers' slots and scratch, the result buffer, and the fixed p, q and scratch.
  const std::int64_t doubles =
      sat_add(sat_add(sat_mul(threads, sizes.per_worker), n),
              sizes.p_layout.size + sizes.q_layout.size + sizes.prep_scratch);
  return sat_mul(8, doubles);
}

template <class T, class U>
Failure kl_rowwise(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n, U* out,
                   const RowwiseConfig& config, Jitter& jitter) {
  const int threads = config.workers;
  if (config.path == RowwisePath::diag) {
    kl_rowwise_diag(p, q, n, out, threads);
    return {};
  }
  if (config.path == RowwisePath::tril) {
    kl_rowwise_tril(p, *q, n, out, threads);
    return {};
  }
  const Factoring fp = jitter.of_p(), fq = jitter.of_q();
  const RowwiseSizes sizes(p, q);
  const Layout &p_layout = sizes.p_layout, &q_layout = sizes.q_layout;
  PreparedBatch q_fixed = q ? PreparedBatch(q_layout, 1) : standard_normal(p.d());
  const bool p_once = p.n() == 1, q_once = !q || q->n() == 1;

  const std::int64_t prep_scratch = sizes.prep_scratch;
  std::vector<double> scratch(static_cast<std::size_t>(prep_scratch));
  PreparedBatch p_fixed(p_layout, p_once ? 1 : 0);
  if (p_once) {
    if (auto f = prepare_one(p, 0, p_layout, p_fixed.slot(0), scratch.data(), fp); f.index >= 0) {
      return {"p", f};
    }
  }
  if (q && q_once) {
    if (auto f = prepare_one(*q, 0, q_layout, q_fixed.slot(0), scratch.data(), fq); f.index >= 0) {
      return {"q", f};
    }
  }

  const std::int64_t per_worker = sizes.per_worker;
  std::vector<double> work(static_cast<std::size_t>(threads * per_worker));
  std::vector<double> result(static_cast<std::size_t>(n));
  std::vector<Failure> failures(static_cast<std::size_t>(threads));
  parallel_for(n, threads, [&](int w, std::int64_t lo, std::int64_t hi) {
    double* p_slot = work.data() + w * per_worker;
    double* q_slot = p_slot + p_layout.size;
    double* prep = q_slot + q_layout.size;
    double* pair = prep + prep_scratch;
    Failure& failed = failures[static_cast<std::size_t>(w)];
    for (std::int64_t i = lo; i < hi; ++i) {
      if (!p_once) {
        if (auto f = prepare_one(p, i, p_layout, p_slot, prep, fp); f.index >= 0) {
          failed = {"p", f};
          return;
        }
      }
      if (!q_once) {
        if (auto f = prepare_one(*q, i, q_layout, q_slot, prep, fq); f.index >= 0) {
          failed = {"q", f};
          return;
        }
      }
      const Prepared pi = p_once ? p_fixed.get(0) : p_layout.view(p_slot);
      const Prepared qi = q_once ? q_fixed.get(0) : q_layout.view(q_slot);
      result[static_cast<std::size_t>(i)] = 0.5 * two_kl(pi, qi, pair);
    }
  });
  // Workers own increasing ranges and stop at their first failure: the first one found is the
  // lowest row.
  for (const Failure& f : failures) {
    if (f.side) return f;
  }
  std::transform(result.begin(), result.end(), out, [](double x) { return static_cast<U>(x); });
  return {};
}

template std::int64_t kl_rowwise_footprint<float>(const Gaussians<float>&, const Gaussians<float>*,
                                                  std::int64_t, const RowwiseConfig&);
template std::int64_t kl_rowwise_footprint<double>(const Gaussians<double>&,
                                                   const Gaussians<double>*, std::int64_t,
                                                   const RowwiseConfig&);

#define GAUSSKL_INSTANTIATE(T, U)                                                               \
  template Failure kl_rowwise<T, U>(const Gaussians<T>&, const Gaussians<T>*, std::int64_t, U*, \
                                    const RowwiseConfig&, Jitter&);
GAUSSKL_INSTANTIATE(float, float)
GAUSSKL_INSTANTIATE(float, double)
GAUSSKL_INSTANTIATE(double, float)
GAUSSKL_INSTANTIATE(double, double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
