// The words of the library's input rules, once: the core's validation fills them in, and the
// extension hands the same texts to the torch path (gausskl._torch_path checks device tensors in
// torch operations and must say what the library says). Fields are written {name}, as in
// Python's str.format.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "util/show.hpp"

namespace gausskl::detail::rules {

enum class Rule {
  finite,
  positive_finite,
  variance_range,
  lower_triangular,
  tril_diagonal,
  log_diagonal,
  symmetric,
  empty_d,
  same_d,
  rows,
  exclude_self,
  k_range,
  at2,
  at3,
  at_packed,
};

// (key, text) in the enum's order; the key is the name the extension exports it under.
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 15> texts = {{
    {"finite", "{name} must be finite, found {value} at {where}"},
    {"positive_finite", "{name} must be positive and finite, found {value} at {where}"},
    {"variance_range", "{name} gives a variance outside {range}, found {value} at {where}"},
    {"lower_triangular",
     "{name} must be lower triangular, found {value} above the diagonal at "
     "{where}"},
    {"tril_diagonal",
     "{name} must have a positive diagonal with squares in {range}, found "
     "{value} at {where}"},
    {"log_diagonal",
     "{name} must have diagonal entries x = log L_rr (log_diagonal) with exp(2 x) "
     "in {range}, found {value} at {where}"},
    {"symmetric",
     "{name} must be symmetric, found {value} and {other} at {where} and its "
     "transpose"},
    {"empty_d", "{side}.mean has D = 0; D must be at least 1"},
    {"same_d", "p and q have D = {p} and D = {q}; D must match"},
    {"rows", "p and q have N = {p} and N = {q}; N must match or one side must have N = 1"},
    {"exclude_self", "exclude_self needs q = p (call without q)"},
    {"k_range", "k = {k} must be between 1 and {bound} = {max}"},
    {"at2", "row {row}, column {column}"},
    {"at3", "distribution {index}, row {row}, column {column}"},
    {"at_packed", "row {row}, column {column} (L[{r}, {c}])"},
}};

// The rule's text with each {field} replaced by its value (fields not given stay as written).
inline std::string text(Rule rule,
                        std::initializer_list<std::pair<std::string_view, std::string>> fields) {
  const std::string_view words = texts[static_cast<std::size_t>(rule)].second;
  std::string out;
  out.reserve(words.size() + 32);
  for (std::size_t at = 0; at < words.size();) {
    const std::size_t open = words.find('{', at);
    if (open == std::string_view::npos) {
      out.append(words.substr(at));
      break;
    }
    const std::size_t close = words.find('}', open);
    out.append(words.substr(at, open - at));
    const std::string_view key = words.substr(open + 1, close - open - 1);
    bool filled = false;
    for (const auto& [field, value] : fields) {
      if (field == key) {
        out += value;
        filled = true;
        break;
      }
    }
    if (!filled) out.append(words.substr(open, close - open + 1));
    at = close + 1;
  }
  return out;
}

// A Renyi divergence of order > 1 infinite at `where` ("row 3", "p row 1 and q row 2"): its mixed
// covariance's Cholesky factorization fails at pivot `pivot` with `value` (shown).
inline std::string renyi_infinite(const std::string& where, std::int64_t pivot,
                                  const std::string& value) {
  return "the renyi divergence is infinite at " + where +
         ": its mixed covariance alpha * q.cov + (1 - alpha) * p.cov is not a "
         "positive-definite matrix (pivot " +
         show(pivot) + " is " + value +
         "); an order alpha > 1 needs q's covariance to dominate (alpha - 1) / alpha "
         "times p's";
}

}  // namespace gausskl::detail::rules
