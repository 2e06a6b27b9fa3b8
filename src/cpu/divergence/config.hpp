// What the row-wise divergences receive from the plan (src/core): the kind, Renyi's order and the
// workers.
#pragma once

#include "gausskl/types.hpp"

namespace gausskl::cpu {

struct DivergenceConfig {
  Divergence kind = Divergence::jeffreys;
  double alpha = 0;  // renyi only
  int workers = 1;   // >= 1
};

}  // namespace gausskl::cpu
