#include "cli/load.hpp"

#include <algorithm>
#include <stdexcept>

#include "io/csv.hpp"
#include "io/npy.hpp"
#include "io/npz.hpp"

namespace gausskl::cli {
namespace {

const std::vector<std::string> kDiagScales = {"std", "var", "logvar", "precision"};
const std::vector<std::string> kFullScales = {"scale_tril", "covariance", "precision_matrix",
                                              "packed_scale_tril"};
const char* kExpected =
    "expected mean and one of std, var, logvar, precision, scale_tril, covariance, "
    "precision_matrix, packed_scale_tril, or cov_factor with cov_diag";

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("[load] " + what);
}

bool contains(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

bool known(const std::string& n) {
  return n == "mean" || n == "cov_factor" || n == "cov_diag" || contains(kDiagScales, n) ||
         contains(kFullScales, n);
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string t = "[";
  for (std::size_t k = 0; k < shape.size(); ++k)
    t += (k ? ", " : "") + std::to_string(shape[k]);
  return t + "]";
}

// The scale description's array names, after checking there is exactly one.
std::vector<std::string> scale_names(const Side& side) {
  std::vector<std::string> found;
  for (const auto& [n, a] : side.arrays) {
    if (contains(kDiagScales, n) || contains(kFullScales, n)) found.push_back(n);
  }
  const bool factor = side.arrays.count("cov_factor"), diag = side.arrays.count("cov_diag");
  if (factor != diag) {
    fail(side.name + ": " + (factor ? "cov_factor needs cov_diag" : "cov_diag needs cov_factor"));
  }
  if (factor) found.push_back("cov_factor");
  if (found.empty()) fail(side.name + ": no scale array; " + kExpected);
  if (found.size() > 1) {
    fail(side.name + ": two scale descriptions, " + found[0] + " and " + found[1] +
         "; give exactly one");
  }
  if (found[0] == "cov_factor") return {"cov_factor", "cov_diag"};
  return found;
}

}  // namespace

Side load_side(const std::string& name, const std::vector<std::string>& spec,
               io::MemoryAllowance& allowance) {
  Side side{name, {}};
  if (spec.size() == 1 && spec[0].find('=') == std::string::npos) {
    if (!spec[0].ends_with(".npz")) {
      fail("--" + name + " " + spec[0] + ": give a .npz file, or NAME=FILE items (.npy or .csv)");
    }
    for (auto& [entry, array] : io::read_npz(spec[0], &allowance)) {
      if (!known(entry)) fail(spec[0] + ": unknown array '" + entry + "'; " + kExpected);
      side.arrays.emplace(entry, std::move(array));
    }
  } else {
    for (const std::string& item : spec) {
      const auto eq = item.find('=');
      if (eq == std::string::npos) {
        fail("--" + name + " " + item + ": with several items, each must be NAME=FILE");
      }
      const std::string entry = item.substr(0, eq), path = item.substr(eq + 1);
      if (!known(entry)) fail("--" + name + ": unknown array '" + entry + "'; " + kExpected);
      if (side.arrays.count(entry)) fail("--" + name + ": " + entry + " given twice");
      if (path.ends_with(".npy")) {
        side.arrays.emplace(entry, io::read_npy(path, &allowance));
      } else if (path.ends_with(".csv")) {
        side.arrays.emplace(entry, io::read_csv(path, &allowance));
      } else {
        fail("--" + name + " " + item + ": the file must be .npy or .csv");
      }
    }
  }
  if (!side.arrays.count("mean")) fail(name + ": no mean array; " + kExpected);
  scale_names(side);
  return side;
}

bool has_packed(const Side& side) {
  return side.arrays.count("packed_scale_tril") > 0;
}

bool has_float64(const Side& side) {
  return std::any_of(side.arrays.begin(), side.arrays.end(),
                     [](const auto& kv) { return kv.second.dtype() == io::DType::float64; });
}

template <class T>
Batch<T>::Batch(const Side& side, io::MemoryAllowance& allowance, bool log_diagonal) {
  const io::Array& mean = side.arrays.at("mean");
  if (mean.shape.size() != 1 && mean.shape.size() != 2) {
    fail(side.name + ".mean has shape " + shape_text(mean.shape) + "; expected [N, D] or [D]");
  }
  // A 1-D mean is one distribution: every array gets a leading dimension of 1.
  const bool single = mean.shape.size() == 1;
  auto shape_of = [&](const std::string& n, std::size_t rank) {
    std::vector<std::int64_t> s = side.arrays.at(n).shape;
    if (single) s.insert(s.begin(), 1);
    if (s.size() != rank) {
      fail(side.name + "." + n + " has shape " + shape_text(side.arrays.at(n).shape) + " but " +
           side.name + ".mean has shape " + shape_text(mean.shape) + "; expected " +
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
  if (s == "std" || s == "var" || s == "logvar" || s == "precision") {
    const DiagParam param = s == "std"      ? DiagParam::stddev
                            : s == "var"    ? DiagParam::var
                            : s == "logvar" ? DiagParam::logvar
                                            : DiagParam::precision;
    gaussians_.emplace(DiagGaussians<T>{m, view2(s), param});
  } else if (s == "cov_factor") {
    gaussians_.emplace(LowRankGaussians<T>{m, view3("cov_factor"), view2("cov_diag")});
  } else if (s == "packed_scale_tril") {
    // [N, D (D + 1) / 2] (the library checks K against D), as given: never unpacked here.
    gaussians_.emplace(
        FullGaussians<T>{m, {}, FullParam::packed_scale_tril, view2(s), log_diagonal});
  } else {
    const FullParam param = s == "scale_tril"   ? FullParam::scale_tril
                            : s == "covariance" ? FullParam::covariance
                                                : FullParam::precision_matrix;
    gaussians_.emplace(FullGaussians<T>{m, view3(s), param});
  }
}

template class Batch<float>;
template class Batch<double>;

}  // namespace gausskl::cli
