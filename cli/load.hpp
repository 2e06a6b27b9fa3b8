// Reading one side's distributions (--p or --q) from files, and viewing them for the library.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gausskl/types.hpp"
#include "io/array.hpp"

namespace gausskl::cli {

// The arrays of one side, by name (mean, std, ..., cov_factor, cov_diag), as read.
struct Side {
  std::string name;  // "p" or "q"
  std::map<std::string, io::Array> arrays;
};

// SPEC is either one FILE.npz, or NAME=FILE items with FILE a .npy or .csv holding one array.
// Checks names: a mean, exactly one scale description, nothing else.
// Throws std::invalid_argument "[load] ..." on bad specs or names.
Side load_side(const std::string& name, const std::vector<std::string>& spec);

// True if any array of the side is float64.
bool has_float64(const Side& side);

// The side's arrays converted to T (float32 -> float64 is exact) and viewed as Gaussians.
// A 1-D mean [D] is one distribution; the other arrays then have one dimension less.
template <class T>
class Batch {
 public:
  explicit Batch(const Side& side);
  const Gaussians<T>& gaussians() const { return *gaussians_; }

 private:
  std::map<std::string, std::vector<T>> storage_;
  std::optional<Gaussians<T>> gaussians_;
};

}  // namespace gausskl::cli
