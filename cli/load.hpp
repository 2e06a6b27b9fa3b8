// Reading one side's distributions (--p or --q) from files, and viewing them for the library.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/keys.hpp"
#include "gausskl/types.hpp"
#include "io/array.hpp"
#include "io/memory_allowance.hpp"

namespace gausskl::cli {

// The arrays of one side, by name (mean, std, ..., cov_factor, cov_diag), as read.
struct Side {
  std::string name;  // "p" or "q"
  std::map<std::string, io::Array> arrays;
  std::string file;                  // the one file a side came from (FILE.npz or FILE.csv)
  std::vector<std::string> ignored;  // arrays of that .npz, or columns of that table, not read
  bool table = false;                // `file` is a CSV table (`ignored` holds column names)
  std::vector<std::string> notes;    // what was skipped otherwise (pandas' row labels, ...)
};

// SPEC is either one FILE.npz, one FILE.csv table with named columns (io/csv_columns.hpp), or
// NAME=FILE items with FILE a .npy or .csv holding one array (.tsv and .txt are CSV too;
// cli/file_names.hpp). `keys` names the arrays as the files store them (--keys). Checks names:
// a mean and exactly one scale description, and in a table each array's columns for the D its
// mean has; other arrays of an .npz and other columns of a table are not read (listed in
// `ignored`), nor pandas' row labels, nor a one-array file's header that names no array (notes).
// Throws std::invalid_argument
// "[load] ..." or "[read] ..." on bad specs, names or files. The arrays' bytes are taken from
// `allowance` as they are read (std::runtime_error when it runs out).
Side load_side(const std::string& name, const std::vector<std::string>& spec, const Keys& keys,
               io::MemoryAllowance& allowance);

// "P.npz: ignoring arrays 'labels', 'weights' (not distribution parameters)" ("columns" for a
// table), or empty when nothing was ignored.
std::string ignored_note(const Side& side);

// Throws std::invalid_argument "[load] what": a bad spec, name or shape.
[[noreturn]] void fail_load(const std::string& what);

// "[2, 3, 4]".
std::string shape_text(const std::vector<std::int64_t>& shape);

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
