// Reading one side's distributions (--p or --q) from files, and viewing them for the library.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gausskl/types.hpp"
#include "io/array.hpp"
#include "io/memory_allowance.hpp"

namespace gausskl::cli {

// The arrays of one side, by name (mean, std, ..., cov_factor, cov_diag), as read.
struct Side {
  std::string name;  // "p" or "q"
  std::map<std::string, io::Array> arrays;
};

// SPEC is either one FILE.npz, or NAME=FILE items with FILE a .npy or .csv holding one array.
// Checks names: a mean, exactly one scale description, nothing else.
// Throws std::invalid_argument "[load] ..." on bad specs or names. The arrays' bytes are taken
// from `allowance` as they are read (std::runtime_error when it runs out).
Side load_side(const std::string& name, const std::vector<std::string>& spec,
               io::MemoryAllowance& allowance);

// True if any array of the side is float64.
bool has_float64(const Side& side);

// True if the side's scale is packed_scale_tril (what --log-diagonal applies to).
bool has_packed(const Side& side);

// The side's arrays viewed as Gaussians in T: in place when an array is already T, else
// through a converted copy (float32 -> float64 is exact) whose bytes are taken from `allowance`.
// A 1-D mean [D] is one distribution; the other arrays then have one dimension less. With
// log_diagonal, a packed_scale_tril's diagonal holds log L_rr. `side` must outlive the Batch.
template <class T>
class Batch {
 public:
  Batch(const Side& side, io::MemoryAllowance& allowance, bool log_diagonal);
  const Gaussians<T>& gaussians() const { return *gaussians_; }

 private:
  std::map<std::string, std::vector<T>> storage_;
  std::optional<Gaussians<T>> gaussians_;
};

}  // namespace gausskl::cli
