// The array names the CLI reads (README.md, "Example session"): a mean and one scale description.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "gausskl/types.hpp"

namespace gausskl::cli {

// The library's names (gausskl/types.hpp), in the order of its enums.
inline constexpr const auto& kDiagScales = diag_param_names;
inline constexpr const auto& kFullScales = full_param_names;

// "expected mean and one of std, ..., packed_scale_tril, or cov_factor with cov_diag".
inline std::string expected_arrays() {
  std::string text = "expected mean and one of ";
  for (const char* n : kDiagScales)
    (text += n) += ", ";
  for (const char* n : kFullScales)
    (text += n) += ", ";
  return text + "or cov_factor with cov_diag";
}

inline bool is_diag_scale(std::string_view n) {
  return std::find(kDiagScales.begin(), kDiagScales.end(), n) != kDiagScales.end();
}

inline bool is_full_scale(std::string_view n) {
  return std::find(kFullScales.begin(), kFullScales.end(), n) != kFullScales.end();
}

inline bool is_array_name(std::string_view n) {
  return n == "mean" || n == "cov_factor" || n == "cov_diag" || is_diag_scale(n) ||
         is_full_scale(n);
}

}  // namespace gausskl::cli
