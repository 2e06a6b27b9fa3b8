// The one rule of Options::divergence that depends on the operation: only gausskl::divergence
// computes a kind other than KL (for now; issue 15 adds the all-pairs ones).
#pragma once

#include <string>

#include "gausskl/ops.hpp"

namespace gausskl::detail {

inline void require_kl(const char* op, const Options& options) {
  if (options.divergence != Divergence::kl) {
    throw OptionError(op, "divergence",
                      std::string("must be kl (the default) for ") + op +
                          "; the other divergences are computed row-wise by gausskl::divergence",
                      divergence_name(options.divergence));
  }
}

}  // namespace gausskl::detail
