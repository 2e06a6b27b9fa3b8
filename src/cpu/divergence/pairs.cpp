#include "cpu/divergence/pairs.hpp"

#include <algorithm>

#include "cpu/common/family_views.hpp"
#include "cpu/common/parallel.hpp"
#include "cpu/common/saturating.hpp"
#include "cpu/divergence/diag.hpp"

namespace gausskl::cpu {
namespace {

// Prepares distributions [0, g.n()) of g into consecutive slots on `workers` workers; the failure
// of the lowest index, if any.
template <class T>
Failure prepare_all(const DivergenceSlots& slots, const Gaussians<T>& g, bool is_p, double* out,
                    const Factoring& factoring, int workers) {
  const std::int64_t n = g.n(), size = is_p ? slots.p_slot : slots.q_slot;
  std::vector<double> scratch(static_cast<std::size_t>(workers * slots.prep));
  std::vector<Failure> failures(static_cast<std::size_t>(workers));
  parallel_for(n, workers, [&](int w, std::int64_t lo, std::int64_t hi) {
    double* s = scratch.data() + w * slots.prep;
    for (std::int64_t i = lo; i < hi; ++i) {
      if (auto f = slots.prepare(g, i, is_p, out + i * size, s, factoring); f.index >= 0) {
        failures[static_cast<std::size_t>(w)] = {is_p ? "p" : "q", f};
        return;
      }
    }
  });
  // Workers own increasing ranges and stop at their first failure: the first found is the lowest.
  for (const Failure& f : failures) {
    if (f.side) return f;
  }
  return {};
}

}  // namespace

template <class T>
Failure DivergencePairs<T>::prepare(const Gaussians<T>& p, const Gaussians<T>* q,
                                    const DivergenceConfig& config, Jitter& jitter,
                                    std::optional<DivergencePairs>& out) {
  const Gaussians<T>& qq = q ? *q : p;
  DivergencePairs pairs(p, qq, q == nullptr, config);
  if (config.diag_tiles && as_diag(p) && as_diag(qq)) {
    pairs.tiles_ =
        std::make_unique<DiagDivergenceTiles<T>>(*as_diag(p), q ? as_diag(*q) : nullptr, config);
  } else if (!(as_diag(p) && as_diag(qq))) {
    const DivergenceSlots& slots = pairs.slots_.emplace(p, qq, config);
    pairs.p_prepared_.resize(static_cast<std::size_t>(p.n() * slots.p_slot));
    if (Failure f =
            prepare_all(slots, p, true, pairs.p_prepared_.data(), jitter.of_p(), config.workers);
        f.side) {
      return f;
    }
    if (q) {
      pairs.q_prepared_.resize(static_cast<std::size_t>(q->n() * slots.q_slot));
      if (Failure f = prepare_all(slots, *q, false, pairs.q_prepared_.data(), jitter.of_q(),
                                  config.workers);
          f.side) {
        return f;
      }
    }
  }
  out.emplace(std::move(pairs));
  return {};
}

template <class T>
PairsBytes DivergencePairs<T>::footprint(const Gaussians<T>& p, const Gaussians<T>* q,
                                         const DivergenceConfig& config) {
  const Gaussians<T>& qq = q ? *q : p;
  PairsBytes b;
  if (config.diag_tiles && as_diag(p) && as_diag(qq))
    return DiagDivergenceTiles<T>::footprint(p.n(), qq.n(), p.d(), q == nullptr, config);
  if (as_diag(p) && as_diag(qq)) return b;
  const DivergenceSlots slots(p, qq, config);
  const std::int64_t kept =
      sat_add(sat_mul(p.n(), slots.p_slot), q ? sat_mul(q->n(), slots.q_slot) : 0);
  b.kept = sat_mul(8, kept);
  b.work = sat_mul(sat_mul(8, config.workers), std::max(slots.prep, slots.pair));
  return b;
}

template <class T>
std::int64_t DivergencePairs<T>::range(std::int64_t i, std::int64_t j0, std::int64_t j1,
                                       double* dst, double* scratch, FactorFailure& fail) const {
  if (j0 >= j1) return -1;
  if (!slots_) {
    const DiagGaussians<T> pi = rows_of(*as_diag(p_), i, 1);
    const DiagGaussians<T> qj = rows_of(*as_diag(q_), j0, j1 - j0);
    const std::int64_t bad =
        divergence_diag_rows(pi, qj, config_, 0, j1 - j0, dst, &fail.pivot, &fail.value);
    return bad < 0 ? -1 : j0 + bad;
  }
  const DivergenceSlots& s = *slots_;
  const std::int64_t d = p_.d();
  const double* ps = p_prepared_.data() + i * s.p_slot;
  const double* qs = self_ ? p_prepared_.data() : q_prepared_.data();
  for (std::int64_t j = j0; j < j1; ++j) {
    const double value = s.value(config_, d, ps, qs + j * s.q_slot, scratch, fail);
    if (value < 0) return j;
    dst[j - j0] = value;
  }
  return -1;
}

template <class T>
Failure DivergencePairs<T>::block(std::int64_t lo, std::int64_t hi, double* out) const {
  if (tiles_) {
    tiles_->block(lo, hi, out);
    return {};
  }
  const std::int64_t m = cols();
  const int workers = config_.workers;
  const bool mirror = self_ && is_symmetric(config_.kind);
  const std::int64_t scratch_size = slots_ ? slots_->pair : 0;
  std::vector<double> scratch(static_cast<std::size_t>(workers * scratch_size));
  std::vector<Failure> failures(static_cast<std::size_t>(workers));
  parallel_for(hi - lo, workers, [&](int w, std::int64_t a, std::int64_t b) {
    double* s = scratch.data() + w * scratch_size;
    for (std::int64_t i = lo + a; i < lo + b; ++i) {
      double* row = out + (i - lo) * m;
      // The columns this row computes, in increasing order: with the mirror, those left of the
      // block and right of the diagonal (the block's own pairs left of it come from the rows
      // above); with q = p, all but the diagonal; else all.
      const std::int64_t segments[2][2] = {{0, mirror ? lo : (self_ ? i : m)},
                                           {self_ ? i + 1 : m, m}};
      for (const auto& seg : segments) {
        FactorFailure f;
        const std::int64_t bad = range(i, seg[0], seg[1], row + seg[0], s, f);
        if (bad >= 0) {
          failures[static_cast<std::size_t>(w)] = {"pair", {i, f.pivot, f.value}, bad};
          return;
        }
      }
      if (self_) row[i] = 0;
    }
  });
  for (const Failure& f : failures) {
    if (f.side) return f;
  }
  if (mirror) {
    for (std::int64_t i = lo + 1; i < hi; ++i) {
      for (std::int64_t j = lo; j < i; ++j)
        out[(i - lo) * m + j] = out[(j - lo) * m + i];
    }
  }
  return {};
}

template class DivergencePairs<float>;
template class DivergencePairs<double>;

}  // namespace gausskl::cpu
