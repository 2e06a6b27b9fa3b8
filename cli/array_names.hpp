// The array names of the file contract (DESIGN.md §3): a mean and one scale description.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

namespace gausskl::cli {

inline constexpr std::array<std::string_view, 4> kDiagScales = {"std", "var", "logvar",
                                                                "precision"};
inline constexpr std::array<std::string_view, 4> kFullScales = {
    "scale_tril", "covariance", "precision_matrix", "packed_scale_tril"};

inline constexpr const char* kExpectedArrays =
    "expected mean and one of std, var, logvar, precision, scale_tril, covariance, "
    "precision_matrix, packed_scale_tril, or cov_factor with cov_diag";

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
