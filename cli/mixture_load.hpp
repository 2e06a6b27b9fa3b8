// Reading one side's Gaussian mixtures (mixture-kl's --p or --q) from files: the component
// arrays as for the other commands, with components on axis 1 (mean [M, C, D], or [C, D] for one
// mixture), and `weights` or `logits` [M, C] (or [C]) beside them.
#pragma once

#include <string>
#include <vector>

#include "cli/keys.hpp"
#include "cli/load.hpp"
#include "io/array.hpp"
#include "io/memory_allowance.hpp"

namespace gausskl::cli {

struct MixtureSide {
  Side components;      // the arrays with axes 0 and 1 merged: mean [M * C, D]
  io::Array weights;    // [M, C]
  bool logits = false;  // `weights` holds logits
};

// SPEC is one FILE.npz holding the component arrays and `weights` or `logits`, or NAME=FILE
// items (.npy), weights=FILE or logits=FILE among them. Throws std::invalid_argument "[load] ..."
// or "[read] ..." for bad specs, names, shapes or files.
MixtureSide load_mixture_side(const std::string& name, const std::vector<std::string>& spec,
                              const Keys& keys, io::MemoryAllowance& allowance);

}  // namespace gausskl::cli
