// One distribution of any family prepared for the divergences' per-pair forms, shared by the
// row-wise (rowwise.cpp) and all-pairs (pairs.cpp) paths: for jeffreys the pair formula's layouts
// (pair/kl.hpp; both sides with B^-1, as either may be the q of a direction), for every other kind
// the dense factor and covariance (dense.hpp). Sizes are in doubles.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/backend.hpp"
#include "cpu/divergence/dense.hpp"
#include "cpu/pair/kl.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

struct DivergenceSlots {
  bool jeffreys = false;
  bool w2 = false;  // wasserstein2: OpenBLAS's factorizations for full sides (dense.hpp)
  int blas_threads = 1;
  Layout p_layout, q_layout;
  // One prepared p, one prepared q, the scratch of preparing one and of one pair's value.
  std::int64_t p_slot = 0, q_slot = 0, prep = 0, pair = 0;

  template <class T>
  DivergenceSlots(const Gaussians<T>& p, const Gaussians<T>& q, const DivergenceConfig& config)
      : jeffreys(config.kind == Divergence::jeffreys),
        w2(config.kind == Divergence::wasserstein2),
        blas_threads(config.blas_threads) {
    const std::int64_t d = p.d();
    if (jeffreys) {
      p_layout = layout_for(p, true);
      q_layout = layout_for(q, true);
      p_slot = p_layout.size;
      q_slot = q_layout.size;
      prep = std::max(prepare_scratch_size(p_layout), prepare_scratch_size(q_layout));
      pair = std::max(pair_scratch_size(p_layout), pair_scratch_size(q_layout));
    } else {
      p_slot = q_slot = dense_slot_size(d);
      prep = dense_prepare_scratch(d, w2);
      pair = dense_pair_scratch(d);
    }
  }
  std::int64_t per_worker() const { return p_slot + q_slot + prep + pair; }

  // Distribution i of g (the p side when is_p) into slot.
  template <class T>
  FactorFailure prepare(const Gaussians<T>& g, std::int64_t i, bool is_p, double* slot,
                        double* scratch, const Factoring& factoring) const {
    if (jeffreys) {
      return prepare_one(g, i, is_p ? p_layout : q_layout, slot, scratch, factoring);
    }
    return dense_prepare(g, i, slot, scratch, factoring, w2, blas_threads);
  }

  // D(p || q) of two prepared slots; -1 with fail's pivot and value set for a Renyi pair whose
  // mixed covariance is not positive definite.
  double value(const DivergenceConfig& config, std::int64_t d, const double* ps, const double* qs,
               double* scratch, FactorFailure& fail) const {
    if (jeffreys) {
      const Prepared p = p_layout.view(ps), q = q_layout.view(qs);
      return 0.5 * (two_kl(p, q, scratch) + two_kl(q, p, scratch));
    }
    return dense_pair(config, dense_view(d, ps), dense_view(d, qs), scratch, fail);
  }
};

}  // namespace gausskl::cpu
