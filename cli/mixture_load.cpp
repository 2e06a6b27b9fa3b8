#include "cli/mixture_load.hpp"

#include <algorithm>
#include <stdexcept>

#include "cli/file_names.hpp"
#include "io/npy.hpp"
#include "io/npz.hpp"

namespace gausskl::cli {
namespace {

bool is_weights(std::string_view name) {
  return name == "weights" || name == "logits";
}

}  // namespace

MixtureSide load_mixture_side(const std::string& name, const std::vector<std::string>& spec,
                              const Keys& keys, io::MemoryAllowance& allowance) {
  MixtureSide out;
  std::vector<std::string> rest;  // the spec without weights= / logits=
  std::vector<std::pair<std::string, io::Array>> found;
  if (spec.size() == 1 && spec[0].find('=') == std::string::npos) {
    if (!has_extension(spec[0], ".npz")) {
      fail_load("--" + name + " " + spec[0] +
                ": a mixture is read from a .npz file (component arrays and weights or logits) or "
                "NAME=FILE .npy items");
    }
    out.components = load_side(name, spec, keys, allowance);
    found = io::read_npz(
                spec[0], [](std::string_view n) { return is_weights(n); }, &allowance)
                .arrays;
    std::erase_if(out.components.ignored, [](const std::string& n) { return is_weights(n); });
  } else {
    for (const std::string& item : spec) {
      const auto eq = item.find('=');
      const std::string entry = eq == std::string::npos ? "" : item.substr(0, eq);
      if (!is_weights(entry)) {
        rest.push_back(item);
        continue;
      }
      const std::string path = item.substr(eq + 1);
      if (!has_extension(path, ".npy")) {
        fail_load("--" + name + " " + item + ": " + entry + " must be a .npy file");
      }
      found.emplace_back(entry, io::read_npy(path, &allowance));
    }
    out.components = load_side(name, rest, keys, allowance);
  }
  if (found.size() != 1) {
    fail_load(name +
              ": a mixture needs exactly one of weights and logits [M, C] beside its "
              "components, found " +
              (found.empty() ? std::string("neither") : std::string("both")));
  }
  out.logits = found[0].first == "logits";
  out.weights = std::move(found[0].second);
  const char* given = out.logits ? "logits" : "weights";
  std::vector<std::int64_t>& w = out.weights.shape;
  io::Array& mean = out.components.arrays.at("mean");
  if (w.size() == 1) w.insert(w.begin(), 1);  // one mixture
  if (w.size() != 2) {
    fail_load(name + "." + given + " has shape " + shape_text(w) + "; expected [M, C] or [C]");
  }
  const bool one = mean.shape.size() == 2;
  if (!(one && w[0] == 1 && mean.shape[0] == w[1]) &&
      !(mean.shape.size() == 3 && mean.shape[0] == w[0] && mean.shape[1] == w[1])) {
    fail_load(name + ".mean has shape " + shape_text(mean.shape) + " but " + name + "." + given +
              " has shape " + shape_text(out.weights.shape) +
              "; expected mean [M, C, D] (components on axis 1) or [C, D] for one mixture");
  }
  if (!one) {
    // Axes 0 and 1 (mixture, component) of every component array merged into one row axis.
    for (auto& [array, values] : out.components.arrays) {
      std::vector<std::int64_t>& s = values.shape;
      if (s.size() < 3 || s[0] != w[0] || s[1] != w[1]) {
        fail_load(name + "." + array + " has shape " + shape_text(s) +
                  "; its first axes must be [M, " + "C] = " + shape_text(w) + " as " + given +
                  "'s");
      }
      s[1] *= s[0];
      s.erase(s.begin());
    }
  }
  return out;
}

}  // namespace gausskl::cli
