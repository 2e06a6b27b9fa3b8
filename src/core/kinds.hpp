// The one rule of Options::divergence that depends on the operation: the operations named for KL
// (kl, kl_standard_normal, pairwise_kl, pairwise_kl_rows, knn_kl and the gradients) take kind kl
// only; divergence, pairwise, pairwise_rows and knn take any kind.
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
