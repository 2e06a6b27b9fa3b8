// The driver of the row-wise gradients (backward.hpp): where each side's gradients go, rows in
// chunks over the workers, and the sums of a side broadcast over the rows.
//
// A side with one distribution paired with n != 1 rows receives the sum of the rows' gradients.
// Each chunk of rows (tunables.hpp) adds its rows into a slot of its own, in row order,
// and the slots are added in chunk order: the same additions whatever the thread count (one
// worker adds each chunk into the running total as soon as it is done, which is the same
// order). Every other gradient is written by the kernel straight into the caller's span.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/backend.hpp"
#include "cpu/common/family_views.hpp"
#include "cpu/common/parallel.hpp"
#include "cpu/rowwise/ukr_diag_backward.hpp"
#include "cpu/rowwise/ukr_full_backward.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {
namespace {

// One wanted gradient array: the caller's span, its row size, and whether it is a sum.
template <class T>
struct Target {
  T* data = nullptr;
  std::int64_t row_size = 0;
  bool summed = false;
  std::int64_t slot_offset = 0;  // where a summed target's values sit in a chunk's slot
};

// Each worker's scratch starts on a cache line of its own (staged rows are read as whole
// vectors).
constexpr std::int64_t kLineDoubles = 8;

std::int64_t full_worker_doubles(std::int64_t d) {
  return (rowwise_full_backward_scratch(d) + kLineDoubles - 1) / kLineDoubles * kLineDoubles;
}

double* align64(std::vector<double>& v) {
  const auto misalign = reinterpret_cast<std::uintptr_t>(v.data()) % 64;
  return v.data() + (misalign ? (64 - misalign) / sizeof(double) : 0);
}

}  // namespace

template <class T>
void kl_rowwise_backward(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t n,
                         const T* grad, const Gradients<T>& dp, const Gradients<T>& dq,
                         int workers) {
  const std::int64_t d = p.d();
  // p.mean, p.scale, q.mean, q.scale.
  Target<T> targets[4];
  std::int64_t slot_size = 0;
  const auto plan = [&](Target<T>& t, std::span<T> span, const Gaussians<T>& side,
                        std::int64_t row_size) {
    if (span.empty()) return;
    t = {span.data(), row_size, side.n() == 1 && n != 1, slot_size};
    if (t.summed) slot_size += row_size;
  };
  plan(targets[0], dp.mean, p, d);
  plan(targets[1], dp.scale, p, describe(p).scale_row);
  if (q) {
    plan(targets[2], dq.mean, *q, d);
    plan(targets[3], dq.scale, *q, describe(*q).scale_row);
  }
  if (std::none_of(std::begin(targets), std::end(targets),
                   [](const Target<T>& t) { return t.data != nullptr; })) {
    return;
  }

  // p and q are of one family (diagonal or Cholesky factors).
  const auto* pd = as_diag(p);
  const auto* qd = q ? as_diag(*q) : nullptr;
  const auto* pf = as_tril(p);
  const auto* qf = q ? as_tril(*q) : nullptr;

  const std::int64_t chunk_rows = pd ? kRowwiseBackwardDiagChunk : kRowwiseBackwardFullChunk;
  const std::int64_t chunks = (n + chunk_rows - 1) / chunk_rows;
  // One slot per chunk with several workers; one slot reused with one.
  const std::int64_t slots = slot_size == 0 ? 0 : workers > 1 ? chunks : 1;
  std::vector<double> slot_memory(static_cast<std::size_t>(slots * slot_size), 0.0);
  std::vector<double> total(static_cast<std::size_t>(slot_size), 0.0);
  const std::int64_t per_worker = pd ? 0 : full_worker_doubles(d);
  std::vector<double> scratch_memory(
      pd ? 0 : static_cast<std::size_t>(workers * per_worker + kLineDoubles));
  double* scratch = pd ? nullptr : align64(scratch_memory);

  const auto run_chunk = [&](int worker, std::int64_t chunk, double* slot) {
    const std::int64_t lo = chunk * chunk_rows;
    const std::int64_t hi = std::min(n, lo + chunk_rows);
    const auto sink = [slot](const Target<T>& t) {
      GradSink<T> s;
      if (t.summed) {
        s.sum = slot + t.slot_offset;
      } else {
        s.rows = t.data;
      }
      return t.data ? s : GradSink<T>{};
    };
    const SideSinks<T> sp{sink(targets[0]), sink(targets[1])};
    const SideSinks<T> sq{sink(targets[2]), sink(targets[3])};
    if (pd) {
      rowwise_diag_backward(*pd, qd, lo, hi, grad, sp, sq);
    } else {
      rowwise_full_backward(*pf, qf, lo, hi, grad, sp, sq, scratch + worker * per_worker);
    }
  };
  const auto add_slot = [&](double* slot) {
    for (std::int64_t k = 0; k < slot_size; ++k) {
      total[k] += slot[k];
      slot[k] = 0;
    }
  };

  if (workers == 1) {
    for (std::int64_t c = 0; c < chunks; ++c) {
      run_chunk(0, c, slot_memory.data());
      if (slot_size) add_slot(slot_memory.data());
    }
  } else {
    // Chunks go out from a shared counter: a descheduled worker leaves its rows to the others.
    std::atomic<std::int64_t> next{0};
    parallel_for(workers, workers, [&](int w, std::int64_t, std::int64_t) {
      for (std::int64_t c; (c = next.fetch_add(1)) < chunks;)
        run_chunk(w, c, slot_size ? slot_memory.data() + c * slot_size : nullptr);
    });
    for (std::int64_t c = 0; c < slots; ++c)
      add_slot(slot_memory.data() + c * slot_size);
  }
  for (const Target<T>& t : targets) {
    if (!t.summed) continue;
    std::transform(total.begin() + t.slot_offset, total.begin() + t.slot_offset + t.row_size,
                   t.data, [](double x) { return static_cast<T>(x); });
  }
}

template <class T, class S>
void kl_rowwise_with_gradients(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t n,
                               T* out, const Gradients<S>& dp, const Gradients<S>& dq,
                               int workers) {
  const auto sink = [](std::span<S> s) {
    GradSink<S> g;
    g.rows = s.empty() ? nullptr : s.data();
    return g;
  };
  const SideSinks<S> sp{sink(dp.mean), sink(dp.scale)}, sq{sink(dq.mean), sink(dq.scale)};
  // Values through a block of doubles per chunk, converted as each chunk is done.
  const auto rows = [&](std::int64_t lo, std::int64_t hi) {
    double block[kRowwiseBackwardDiagChunk];
    for (std::int64_t b = lo; b < hi; b += kRowwiseBackwardDiagChunk) {
      const std::int64_t e = std::min(hi, b + kRowwiseBackwardDiagChunk);
      rowwise_diag_with_gradients(p, q, b, e, block, sp, sq);
      std::transform(block, block + (e - b), out + b, [](double x) { return static_cast<T>(x); });
    }
  };
  if (workers <= 1) {  // no std::function, no thread
    rows(0, n);
    return;
  }
  parallel_for(n, workers, [&](int, std::int64_t lo, std::int64_t hi) { rows(lo, hi); });
}

template void kl_rowwise_with_gradients<float, float>(const DiagGaussians<float>&,
                                                      const DiagGaussians<float>*, std::int64_t,
                                                      float*, const Gradients<float>&,
                                                      const Gradients<float>&, int);
template void kl_rowwise_with_gradients<float, double>(const DiagGaussians<float>&,
                                                       const DiagGaussians<float>*, std::int64_t,
                                                       float*, const Gradients<double>&,
                                                       const Gradients<double>&, int);
template void kl_rowwise_with_gradients<double, double>(const DiagGaussians<double>&,
                                                        const DiagGaussians<double>*, std::int64_t,
                                                        double*, const Gradients<double>&,
                                                        const Gradients<double>&, int);
template void kl_rowwise_backward<float>(const Gaussians<float>&, const Gaussians<float>*,
                                         std::int64_t, const float*, const Gradients<float>&,
                                         const Gradients<float>&, int);
template void kl_rowwise_backward<double>(const Gaussians<double>&, const Gaussians<double>*,
                                          std::int64_t, const double*, const Gradients<double>&,
                                          const Gradients<double>&, int);

}  // namespace gausskl::cpu
