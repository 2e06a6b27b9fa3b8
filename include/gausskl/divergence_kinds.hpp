// The divergence kinds, described once: the enum and one row per kind with what the library, the
// Python package and the CLI read (its name; symmetric: the all-pairs of q = p mirror;
// takes_alpha: renyi's order; the range of values). A new kind is a value and a row here, then
// its formulas (cpu/divergence/diag.cpp, dense.cpp; core/reference.cpp; the package's _formulas).
#pragma once

#include <array>
#include <cstddef>
#include <limits>
#include <string>

namespace gausskl {

// What gausskl::divergence computes between p = N(mu_1, Sigma_1) and q = N(mu_2, Sigma_2), in nats
// (docs/divergences.md has the formulas and their sources):
//   kl             KL(p || q)
//   jeffreys       KL(p || q) + KL(q || p)
//   bhattacharyya  1/8 d^T Sigma^-1 d + 1/2 ln(det Sigma / sqrt(det Sigma_1 det Sigma_2)),
//                  Sigma = (Sigma_1 + Sigma_2) / 2, d = mu_1 - mu_2
//   hellinger      the squared Hellinger distance 1 - exp(-bhattacharyya), in [0, 1]
//   wasserstein2   the squared 2-Wasserstein distance
//                  |d|^2 + tr(Sigma_1 + Sigma_2 - 2 (Sigma_2^1/2 Sigma_1 Sigma_2^1/2)^1/2)
//   renyi          the Renyi divergence of order Options::alpha, D_alpha(p || q) (-> KL as
//                  alpha -> 1)
enum class Divergence { kl, jeffreys, bhattacharyya, hellinger, wasserstein2, renyi };

struct DivergenceKind {
  Divergence kind;
  const char* name;  // what users write: the Python keyword `kind`, the CLI's --divergence
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

// The names, in the enum's order.
inline constexpr std::array<const char*, divergence_kinds.size()> divergence_names = [] {
  std::array<const char*, divergence_kinds.size()> names{};
  for (std::size_t i = 0; i < names.size(); ++i)
    names[i] = divergence_kinds[i].name;
  return names;
}();
inline constexpr const char* divergence_name(Divergence d) {
  return divergence_kind(d).name;
}
inline constexpr bool is_symmetric(Divergence d) {
  return divergence_kind(d).symmetric;
}

// "kl, jeffreys, ..., renyi": the kinds' names as the messages list them.
inline std::string divergence_list() {
  std::string names;
  for (const DivergenceKind& k : divergence_kinds)
    names += (names.empty() ? "" : ", ") + std::string(k.name);
  return names;
}

namespace detail {
constexpr bool kinds_follow_the_enum() {
  for (std::size_t i = 0; i < divergence_kinds.size(); ++i) {
    if (static_cast<std::size_t>(divergence_kinds[i].kind) != i) return false;
  }
  return true;
}
static_assert(kinds_follow_the_enum(),
              "divergence_kinds has one row per kind, in the enum's order");
}  // namespace detail

}  // namespace gausskl
