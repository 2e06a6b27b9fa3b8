// What the divergences receive from the plan (src/core): the kind, Renyi's order, the workers and,
// for all pairs of two diagonal sides, whether the tiled path runs (divergence/diag_tiles.hpp) and
// the tolerance its entries are computed to.
#pragma once

#include "gausskl/types.hpp"

namespace gausskl::cpu {

struct DivergenceConfig {
  Divergence kind = Divergence::jeffreys;
  double alpha = 0;  // renyi only
  int workers = 1;   // >= 1
  // OpenBLAS's threads in each worker's factorizations (wasserstein2 of full sides): the
  // library's threads when one worker does the call, else 1.
  int blas_threads = 1;
  // All pairs only: two diagonal sides by DiagDivergenceTiles, each entry within
  // tolerance * (|D| + 1) of exact; otherwise every entry exact per pair.
  bool diag_tiles = false;
  double tolerance = 0;
};

}  // namespace gausskl::cpu
