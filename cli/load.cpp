#include "cli/load.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string_view>

#include "cli/array_names.hpp"
#include "cli/file_names.hpp"
#include "io/csv.hpp"
#include "io/csv_columns.hpp"
#include "io/npy.hpp"
#include "io/npz.hpp"

namespace gausskl::cli {

void fail_load(const std::string& what) {
  throw std::invalid_argument("[load] " + what);
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string t = "[";
  for (std::size_t k = 0; k < shape.size(); ++k)
    t += (k ? ", " : "") + std::to_string(shape[k]);
  return t + "]";
}

namespace {

// As the file layer says it: "[read] path: line 1: ...".
[[noreturn]] void fail_read(const std::string& path, const std::string& what) {
  throw std::invalid_argument("[read] " + path + ": " + what);
}

// 'a', 'b', 'c', at most `most` of them ("and 12 more" after).
std::string quoted_list(const std::vector<std::string>& names, std::size_t most = SIZE_MAX) {
  std::string text;
  for (std::size_t k = 0; k < names.size() && k < most; ++k)
    text += (text.empty() ? "'" : ", '") + names[k] + "'";
  if (names.size() > most) text += " and " + std::to_string(names.size() - most) + " more";
  return text;
}

// A table's column name without its indices: mu_0 -> mu, L_0_1 -> L.
std::string base_of(const std::string& column) {
  std::string base = column;
  for (int k = 0; k < 2; ++k) {
    const std::size_t underscore = base.rfind('_');
    if (underscore == std::string::npos || underscore == 0 || underscore + 1 == base.size() ||
        base.find_first_not_of("0123456789", underscore + 1) != std::string::npos) {
      break;
    }
    base.resize(underscore);
  }
  return base;
}

std::string indexed(const std::string& name, std::initializer_list<std::int64_t> indices) {
  std::string text = name;
  for (const std::int64_t i : indices) {
    text += '_';
    text += std::to_string(i);
  }
  return text;
}

// Why an array the side needs may be missing: a --keys name the file does not have, or
// arrays (columns) that were ignored (perhaps it is stored under another name).
std::string missing_hint(const Side& side, const Keys& keys,
                         const std::vector<std::string>& wanted) {
  if (side.file.empty()) return "";
  constexpr std::size_t kMost = 6;  // a table may have thousands of columns
  const std::string others =
      side.ignored.empty() ? ""
                           : "; its columns " + quoted_list(side.ignored, kMost) + " are not read";
  for (const std::string& array : wanted) {
    if (keys.mapping_of(array).empty() || side.arrays.count(array)) continue;
    const std::string written = keys.written_of(array);
    if (side.table) {
      return "; " + side.file + " has no column '" + written + "_0' (" + keys.flag() + " " +
             keys.mapping_of(array) + " reads " + array + " from columns " + written + "_0, " +
             written + "_1, ...)" + others;
    }
    return "; " + side.file + " has no array '" + written + "' (" + keys.flag() + " " +
           keys.mapping_of(array) + ")";
  }
  if (side.ignored.empty()) return "";
  if (side.table) {
    const std::string base = base_of(side.ignored.front());
    const bool one = base == side.ignored.front();
    return "; " + side.file + " has columns " + quoted_list(side.ignored, kMost) + " (not read; " +
           keys.flag() + " " + wanted.front() + "=" + base + " would read " + wanted.front() +
           " from " + (one ? "'" + base + "'" : "'" + base + "_0', '" + base + "_1', ...") + ")";
  }
  // pytorch-fid's statistics (np.savez(path, mu=..., sigma=...)): sigma is the covariance
  // [D, D], which a reader of "sigma" takes for a std.
  const auto ignored = [&](const char* n) {
    return std::find(side.ignored.begin(), side.ignored.end(), n) != side.ignored.end();
  };
  if (ignored("sigma") && (ignored("mu") || side.arrays.count("mean"))) {
    const std::string mean = ignored("mu") ? "mean=mu" : keys.mapping_of("mean");
    return "; " + side.file + " holds " + quoted_list(side.ignored) + " (not read; " + keys.flag() +
           " " + (mean.empty() ? "" : mean + ",") +
           "covariance=sigma reads pytorch-fid's statistics, whose sigma is the covariance "
           "[D, D], not a std)";
  }
  return "; " + side.file + " holds " + quoted_list(side.ignored) + " (not read; --keys " +
         wanted.front() + "=" + side.ignored.front() + " would read " + wanted.front() + " from '" +
         side.ignored.front() + "')";
}

// The scale description's array names, after checking there is exactly one.
std::vector<std::string> scale_names(const Side& side, const Keys& keys = {}) {
  std::vector<std::string> found;
  for (const auto& [n, a] : side.arrays) {
    if (is_diag_scale(n) || is_full_scale(n)) found.push_back(n);
  }
  const bool factor = side.arrays.count("cov_factor"), diag = side.arrays.count("cov_diag");
  if (factor != diag) {
    fail_load(side.name + ": " +
              (factor ? "cov_factor needs cov_diag" : "cov_diag needs cov_factor") +
              missing_hint(side, keys, {factor ? "cov_diag" : "cov_factor"}));
  }
  if (factor) found.push_back("cov_factor");
  if (found.empty()) {
    std::vector<std::string> scales(kDiagScales.begin(), kDiagScales.end());
    scales.insert(scales.end(), kFullScales.begin(), kFullScales.end());
    scales.insert(scales.end(), {"cov_factor", "cov_diag"});
    fail_load(side.name + ": no scale array; " + expected_arrays() +
              missing_hint(side, keys, scales));
  }
  if (found.size() > 1) {
    fail_load(side.name + ": two scale descriptions, " + found[0] + " and " + found[1] +
              "; give exactly one");
  }
  if (found[0] == "cov_factor") return {"cov_factor", "cov_diag"};
  return found;
}

void read_npz_side(Side& side, const std::string& path, const Keys& keys,
                   io::MemoryAllowance& allowance) {
  const auto wanted = [&](std::string_view n) { return keys.array_of(n).has_value(); };
  io::NpzContents contents = io::read_npz(path, wanted, &allowance);
  for (auto& [entry, array] : contents.arrays)
    side.arrays.emplace(*keys.array_of(entry), std::move(array));
  side.ignored = std::move(contents.skipped);
}

std::string row_labels_note(const std::string& path) {
  return path +
         ": skipping column 1 (unnamed in the header: row labels, as pandas' to_csv "
         "writes them)";
}

// In a table, each array's columns must fit the D that the mean's give (or the mean's the D
// the scale's give): the first missing column, named, rather than a shape error later.
void check_elements(const Side& side, const Keys& keys, std::int64_t line) {
  const auto mean = side.arrays.find("mean");
  if (mean == side.arrays.end() || mean->second.shape.size() != 2) return;
  const std::int64_t d = mean->second.shape[1];
  const auto columns = [](std::int64_t n) {
    return std::to_string(n) + (n == 1 ? " column" : " columns");
  };
  const auto grid = [](std::int64_t a, std::int64_t b) {
    return std::to_string(a) + " x " + std::to_string(b) + " columns";
  };
  for (const auto& [array, values] : side.arrays) {
    const std::vector<std::int64_t>& s = values.shape;
    const std::string written = keys.written_of(array);
    std::int64_t scale_d = 0;  // the D the array's columns give (0: not a shape read here)
    bool short_of = false;     // fewer columns than D needs; then the first missing one:
    std::string first_missing, needs, has;
    if ((is_diag_scale(array) || array == "cov_diag") && s.size() == 2) {
      scale_d = s[1];
      short_of = s[1] < d;
      first_missing = indexed(written, {s[1]});
      needs = columns(d);
      has = columns(s[1]);
    } else if (array == param_name(FullParam::packed_scale_tril) && s.size() == 2) {
      while (scale_d * (scale_d + 1) / 2 < s[1])
        ++scale_d;
      short_of = s[1] < d * (d + 1) / 2;
      first_missing = indexed(written, {s[1]});
      needs = columns(d * (d + 1) / 2);
      has = columns(s[1]);
    } else if (is_full_scale(array) && s.size() == 3) {
      scale_d = std::max(s[1], s[2]);
      short_of = s[1] < d || s[2] < d;
      first_missing = s[2] < d ? indexed(written, {0, s[2]}) : indexed(written, {s[1], 0});
      needs = grid(d, d);
      has = grid(s[1], s[2]);
    } else if (array == "cov_factor" && s.size() == 3) {
      scale_d = s[1];
      short_of = s[1] < d;
      first_missing = indexed(written, {s[1], 0});
      needs = grid(d, s[2]);
      has = grid(s[1], s[2]);
    }
    if (scale_d > d) {
      fail_read(side.file, "line " + std::to_string(line) + ": no column '" +
                               indexed(keys.written_of("mean"), {d}) + "' (" + array + " has " +
                               has + ", for D = " + std::to_string(scale_d) + "; mean has " +
                               columns(d) + ")");
    }
    if (short_of) {
      fail_read(side.file, "line " + std::to_string(line) + ": no column '" + first_missing +
                               "' (mean has " + columns(d) + ", so " + array + " needs " + needs +
                               "; it has " + has + ")");
    }
  }
}

// A table whose header (or np.savetxt's '#' header line) names the columns; other columns are
// skipped (a note names them), as an .npz's other arrays are.
void read_csv_side(Side& side, const std::string& path, const Keys& keys,
                   io::MemoryAllowance& allowance) {
  io::CsvTable table = io::read_csv_table(path, &allowance);
  const io::CsvNames names = table.header.line ? table.header : table.comment;
  if (!names.line) {
    fail_load("--" + side.name + " " + path +
              ": a table needs a header row naming its columns, e.g. mean_0,mean_1,std_0,std_1 (or "
              "give each array as NAME=FILE)");
  }
  side.table = true;
  if (table.row_labels) side.notes.push_back(row_labels_note(path));
  const auto resolve = [&](std::string_view written) { return keys.array_of(written); };
  for (auto& [array, values] :
       io::csv_arrays(std::move(table), names, path, resolve, "", &allowance, &side.ignored)) {
    side.arrays.emplace(array, std::move(values));
  }
  check_elements(side, keys, names.line);
}

// One array from a .csv file, whose header row, if any, must name that array's elements; a
// header naming no array gausskl reads (pandas' 0, 1, ..., a, b, c) is skipped with a note.
io::Array read_csv_array(Side& side, const std::string& entry, const std::string& path,
                         const Keys& keys, io::MemoryAllowance& allowance) {
  io::CsvTable table = io::read_csv_table(path, &allowance);
  if (table.row_labels) side.notes.push_back(row_labels_note(path));
  if (!table.header.line) return std::move(table.values);
  const io::CsvNames names = table.header;
  const auto any_array = [&](std::string_view written) { return keys.array_of(written); };
  if (std::none_of(names.names.begin(), names.names.end(), [&](const std::string& name) {
        return io::array_of_column(name, any_array).has_value();
      })) {
    side.notes.push_back(path + ": skipping the header on line " + std::to_string(names.line) +
                         " (" + quoted_list(names.names, 6) + " name no array gausskl reads); " +
                         "its columns are read as " + entry + "'s elements, in order");
    return std::move(table.values);
  }
  const auto resolve = [&](std::string_view written) -> std::optional<std::string> {
    if (keys.array_of(written) == entry) return entry;
    return std::nullopt;
  };
  auto arrays = io::csv_arrays(std::move(table), names, path, resolve,
                               "is not an element of " + entry + " (the file is given as " + entry +
                                   "=" + path + "; name its columns " + keys.written_of(entry) +
                                   "_0, " + keys.written_of(entry) + "_1, ...)",
                               &allowance);
  return std::move(arrays.front().second);
}

}  // namespace

Side load_side(const std::string& name, const std::vector<std::string>& spec, const Keys& keys,
               io::MemoryAllowance& allowance) {
  Side side{name, {}, {}, {}, false, {}};
  if (spec.size() == 1 && spec[0].find('=') == std::string::npos) {
    side.file = spec[0];
    if (has_extension(spec[0], ".npz")) {
      read_npz_side(side, spec[0], keys, allowance);
    } else if (is_text_table(spec[0])) {
      read_csv_side(side, spec[0], keys, allowance);
    } else {
      fail_load(
          "--" + name + " " + spec[0] +
          ": give a .npz file, a .csv table with a header row (.tsv and .txt read as CSV), or "
          "NAME=FILE items (.npy or .csv)");
    }
  } else {
    for (const std::string& item : spec) {
      const auto eq = item.find('=');
      if (eq == std::string::npos) {
        fail_load("--" + name + " " + item + ": with several items, each must be NAME=FILE");
      }
      const std::string entry = item.substr(0, eq), path = item.substr(eq + 1);
      if (!is_array_name(entry)) {
        fail_load("--" + name + ": unknown array '" + entry + "'; " + expected_arrays());
      }
      if (side.arrays.count(entry)) fail_load("--" + name + ": " + entry + " given twice");
      if (has_extension(path, ".npy")) {
        side.arrays.emplace(entry, io::read_npy(path, &allowance));
      } else if (is_text_table(path)) {
        side.arrays.emplace(entry, read_csv_array(side, entry, path, keys, allowance));
      } else {
        fail_load("--" + name + " " + item + ": the file must be .npy or .csv (or .tsv, .txt)");
      }
    }
  }
  if (!side.arrays.count("mean")) {
    fail_load(name + ": no mean array; " + expected_arrays() + missing_hint(side, keys, {"mean"}));
  }
  scale_names(side, keys);
  return side;
}

std::string ignored_note(const Side& side) {
  if (side.ignored.empty()) return "";
  const char* what = side.table ? "column" : "array";
  return side.file + ": ignoring " + what + (side.ignored.size() == 1 ? " " : "s ") +
         quoted_list(side.ignored, side.table ? 12 : SIZE_MAX) + " (not distribution parameters)";
}

bool has_packed(const Side& side) {
  return side.arrays.count(param_name(FullParam::packed_scale_tril)) > 0;
}

bool has_float64(const Side& side) {
  return std::any_of(side.arrays.begin(), side.arrays.end(),
                     [](const auto& kv) { return kv.second.dtype() == io::DType::float64; });
}

template <class T>
Batch<T>::Batch(const Side& side, io::MemoryAllowance& allowance, bool log_diagonal) {
  const io::Array& mean = side.arrays.at("mean");
  if (mean.shape.size() != 1 && mean.shape.size() != 2) {
    fail_load(side.name + ".mean has shape " + shape_text(mean.shape) + "; expected [N, D] or [D]");
  }
  // A 1-D mean is one distribution: every array gets a leading dimension of 1.
  const bool single = mean.shape.size() == 1;
  auto shape_of = [&](const std::string& n, std::size_t rank) {
    std::vector<std::int64_t> s = side.arrays.at(n).shape;
    if (single) s.insert(s.begin(), 1);
    if (s.size() != rank) {
      fail_load(side.name + "." + n + " has shape " + shape_text(side.arrays.at(n).shape) +
                " but " + side.name + ".mean has shape " + shape_text(mean.shape) + "; expected " +
                std::to_string(rank - (single ? 1 : 0)) + "-D");
    }
    return s;
  };
  auto data_of = [&](const std::string& n) -> const T* {
    const io::Array& a = side.arrays.at(n);
    if (const auto* same = std::get_if<std::vector<T>>(&a.data)) return same->data();
    allowance.take(
        a.size() * static_cast<std::int64_t>(sizeof(T)), "load",
        side.name + "." + n + " converted to " + (sizeof(T) == 8 ? "float64" : "float32"));
    return std::visit(
        [&](const auto& v) {
          return storage_.emplace(n, std::vector<T>(v.begin(), v.end())).first->second.data();
        },
        a.data);
  };
  auto view2 = [&](const std::string& n) {
    const auto s = shape_of(n, 2);
    return contiguous<T, 2>(data_of(n), {s[0], s[1]});
  };
  auto view3 = [&](const std::string& n) {
    const auto s = shape_of(n, 3);
    return contiguous<T, 3>(data_of(n), {s[0], s[1], s[2]});
  };

  const std::vector<std::string> scale = scale_names(side);
  const View<T, 2> m = view2("mean");
  const std::string& s = scale[0];
  if (is_diag_scale(s)) {
    const auto at = std::find(kDiagScales.begin(), kDiagScales.end(), std::string_view(s));
    const auto param = static_cast<DiagParam>(at - kDiagScales.begin());
    gaussians_.emplace(DiagGaussians<T>{m, view2(s), param});
  } else if (s == "cov_factor") {
    gaussians_.emplace(LowRankGaussians<T>{m, view3("cov_factor"), view2("cov_diag")});
  } else if (s == param_name(FullParam::packed_scale_tril)) {
    // [N, D (D + 1) / 2] (the library checks K against D), as given: never unpacked here.
    gaussians_.emplace(
        FullGaussians<T>{m, {}, FullParam::packed_scale_tril, view2(s), log_diagonal});
  } else {
    const auto at = std::find(kFullScales.begin(), kFullScales.end(), std::string_view(s));
    const auto param = static_cast<FullParam>(at - kFullScales.begin());
    gaussians_.emplace(FullGaussians<T>{m, view3(s), param});
  }
}

template class Batch<float>;
template class Batch<double>;

}  // namespace gausskl::cli
