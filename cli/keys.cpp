#include "cli/keys.hpp"

#include <stdexcept>

#include "cli/array_names.hpp"

namespace gausskl::cli {

Keys Keys::parse(std::string_view text) {
  Keys keys;
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument(what +
                                "; expected ARRAY=NAME[,ARRAY=NAME...], e.g. "
                                "mean=mu,std=sigma");
  };
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail("'" + std::string(item) + "' has no '='");
    const std::string array(item.substr(0, eq)), written(item.substr(eq + 1));
    if (!is_array_name(array)) {
      fail("'" + array +
           "' is not an array gausskl reads (mean, std, var, logvar, precision, "
           "scale_tril, covariance, precision_matrix, packed_scale_tril, cov_factor, cov_diag)");
    }
    if (written.empty()) fail("'" + array + "=' names no array");
    if (keys.written_.count(array)) fail(array + " given twice");
    for (const auto& [other, name] : keys.written_) {
      if (name == written) fail("'" + written + "' given for both " + other + " and " + array);
    }
    keys.written_.emplace(array, written);
    start = comma + 1;
  }
  return keys;
}

std::optional<std::string> Keys::array_of(std::string_view written) const {
  for (const auto& [array, name] : written_) {
    if (name == written) return array;
  }
  if (is_array_name(written) && !written_.count(std::string(written))) {
    return std::string(written);
  }
  return std::nullopt;
}

std::string Keys::written_of(const std::string& array) const {
  const auto it = written_.find(array);
  return it == written_.end() ? array : it->second;
}

std::string Keys::mapping_of(const std::string& array) const {
  const auto it = written_.find(array);
  return it == written_.end() ? "" : array + "=" + it->second;
}

}  // namespace gausskl::cli
