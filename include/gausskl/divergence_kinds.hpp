// Each divergence kind's properties, described once: what the Python package and the CLI read
// (symmetric: the all-pairs of q = p mirror; takes_alpha: renyi's order; the range of values).
#pragma once

#include <array>
#include <cstddef>
#include <limits>
#include <string>

#include "gausskl/types.hpp"

namespace gausskl {

struct DivergenceKind {
  Divergence kind;
  const char* name;
  bool symmetric;    // D(p || q) = D(q || p)
  bool takes_alpha;  // an order parameter (renyi's alpha)
  double min_value;
  double max_value;
};

inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// In the order of the enum.
inline constexpr std::array<DivergenceKind, 6> divergence_kinds = {{
    {Divergence::kl, "kl", false, false, 0.0, kUnbounded},
    {Divergence::jeffreys, "jeffreys", true, false, 0.0, kUnbounded},
    {Divergence::bhattacharyya, "bhattacharyya", true, false, 0.0, kUnbounded},
    {Divergence::hellinger, "hellinger", true, false, 0.0, 1.0},
    {Divergence::wasserstein2, "wasserstein2", true, false, 0.0, kUnbounded},
    {Divergence::renyi, "renyi", false, true, 0.0, kUnbounded},
}};

inline constexpr const DivergenceKind& divergence_kind(Divergence d) {
  return divergence_kinds[static_cast<std::size_t>(d)];
}

// "kl, jeffreys, ..., renyi": the kinds' names as the messages list them.
inline std::string divergence_list() {
  std::string names;
  for (const DivergenceKind& k : divergence_kinds)
    names += (names.empty() ? "" : ", ") + std::string(k.name);
  return names;
}

namespace detail {
constexpr bool same_kind_name(const char* a, const char* b) {
  for (; *a && *a == *b; ++a, ++b) {
  }
  return *a == *b;
}
constexpr bool kinds_agree() {
  static_assert(divergence_kinds.size() == divergence_names.size());
  for (std::size_t i = 0; i < divergence_kinds.size(); ++i) {
    const DivergenceKind& k = divergence_kinds[i];
    if (static_cast<std::size_t>(k.kind) != i || !same_kind_name(k.name, divergence_names[i]) ||
        k.symmetric != is_symmetric(k.kind))
      return false;
  }
  return true;
}
static_assert(kinds_agree(), "divergence_kinds follows the enum, its names and is_symmetric");
}  // namespace detail

}  // namespace gausskl
