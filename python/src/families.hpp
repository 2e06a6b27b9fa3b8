// The families and their parameterizations as the package hands them: each code of a spec tuple
// (the package's batches hand (code, mean, scale) or (code, mean, cov_factor, cov_diag)) with its
// family, the keyword it is given by, its arrays and their event ranks, and what the library's
// description (gausskl/families.hpp) says of it: whether it factors the matrix, which gradients it
// has. Exported as _ext.FAMILIES (indexed by code) and _ext.CODES (code by name); the sides, the
// batch classes, the autograd and the torch path read it.
#pragma once

#include <array>
#include <cstddef>

#include "gausskl/families.hpp"
#include "gausskl/types.hpp"

namespace gausskl::python {

// The package's names of gausskl::Family's values and their batch classes, in its order.
inline constexpr std::array<const char*, 3> family_names = {"diag", "full", "low_rank"};
inline constexpr std::array<const char*, 3> family_classes = {"DiagGaussian", "FullGaussian",
                                                              "LowRankGaussian"};

// The names of gausskl::LibraryGradients' values as _ext.FAMILIES gives them.
inline constexpr std::array<const char*, 3> gradients_names = {"", "diag", "tril"};

struct Form {
  const char* name;  // the code's name: the parameter, packed_log_diagonal, cov_factor
  Family family;
  const char* param;  // the constructor's keyword
  bool log_diagonal;  // packed_scale_tril with log L_rr on its diagonal
  int count;          // arrays after the code
  std::array<const char*, 3> arrays;
  std::array<int, 3> event_rank;
  bool factored;  // a symmetric matrix the library factors (Cholesky; jitter applies)
  LibraryGradients gradients;
  DiagParam diag = DiagParam::stddev;
  FullParam full = FullParam::scale_tril;
};

// Each family's arrays and event ranks, once.
constexpr Form diag_form(DiagParam p) {
  const char* name = diag_param_names[static_cast<std::size_t>(p)];
  return {.name = name,
          .family = describe_family(p).family,
          .param = name,
          .log_diagonal = false,
          .count = 2,
          .arrays = {"mean", "scale"},
          .event_rank = {1, 1},
          .factored = describe_family(p).factored,
          .gradients = describe_family(p).gradients,
          .diag = p};
}
// packed_scale_tril: L's lower triangle as [..., D (D + 1) / 2]; the others a matrix [..., D, D].
constexpr Form full_form(const char* name, FullParam p, bool log_diagonal = false) {
  return {.name = name,
          .family = describe_family(p).family,
          .param = full_param_names[static_cast<std::size_t>(p)],
          .log_diagonal = log_diagonal,
          .count = 2,
          .arrays = {"mean", "scale"},
          .event_rank = {1, p == FullParam::packed_scale_tril ? 1 : 2},
          .factored = describe_family(p).factored,
          .gradients = describe_family(p).gradients,
          .full = p};
}
constexpr Form low_rank_form() {
  return {.name = "cov_factor",
          .family = describe_low_rank().family,
          .param = "cov_factor",
          .log_diagonal = false,
          .count = 3,
          .arrays = {"mean", "cov_factor", "cov_diag"},
          .event_rank = {1, 2, 1},
          .factored = describe_low_rank().factored,
          .gradients = describe_low_rank().gradients};
}

// Indexed by code: the diagonal parameterizations, then the full ones, in the order of
// gausskl/types.hpp's enums, then packed_log_diagonal and low rank.
inline constexpr std::array<Form, 10> forms = {
    diag_form(DiagParam::stddev),
    diag_form(DiagParam::var),
    diag_form(DiagParam::logvar),
    diag_form(DiagParam::precision),
    full_form("scale_tril", FullParam::scale_tril),
    full_form("covariance", FullParam::covariance),
    full_form("precision_matrix", FullParam::precision_matrix),
    full_form("packed_scale_tril", FullParam::packed_scale_tril),
    full_form("packed_log_diagonal", FullParam::packed_scale_tril, true),
    low_rank_form(),
};
inline constexpr int kCodes = static_cast<int>(forms.size());

constexpr bool forms_follow_the_enums() {
  for (std::size_t i = 0; i < forms.size(); ++i) {
    const Form& f = forms[i];
    if (f.family == Family::diag && static_cast<std::size_t>(f.diag) != i) return false;
    if (f.family == Family::full && !f.log_diagonal &&
        static_cast<std::size_t>(f.full) + diag_param_names.size() != i)
      return false;
  }
  return true;
}
static_assert(forms_follow_the_enums(),
              "the diagonal codes, then the full ones, in the order of gausskl/types.hpp's enums");

}  // namespace gausskl::python
