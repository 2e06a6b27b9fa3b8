// The families and their parameterizations, described once: each code of a spec tuple (the
// package's batches hand (code, mean, scale) or (code, mean, cov_factor, cov_diag)) with its
// family, the keyword it is given by, its arrays and their event ranks, whether the library
// factors its matrix, and which gradients the library has for it. Exported as _ext.FAMILIES
// (indexed by code) and _ext.CODES (code by name); the sides, the batch classes, the autograd
// and the torch path read it.
#pragma once

#include <array>
#include <cstddef>

#include "gausskl/types.hpp"

namespace gausskl::python {

enum class Family { diag, full, low_rank };
inline constexpr std::array<const char*, 3> family_names = {"diag", "full", "low_rank"};
inline constexpr std::array<const char*, 3> family_classes = {"DiagGaussian", "FullGaussian",
                                                              "LowRankGaussian"};

// The gradients the library computes for a code, if any (gausskl/gradients.hpp): of diagonal
// pairs, or of full pairs given by a triangular factor.
enum class LibraryGradients { none, diag, tril };
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
          .family = Family::diag,
          .param = name,
          .log_diagonal = false,
          .count = 2,
          .arrays = {"mean", "scale"},
          .event_rank = {1, 1},
          .factored = false,
          .gradients = LibraryGradients::diag,
          .diag = p};
}
// packed_scale_tril: L's lower triangle as [..., D (D + 1) / 2]; the others a matrix [..., D, D].
constexpr Form full_form(const char* name, FullParam p, bool factored, LibraryGradients gradients,
                         bool log_diagonal = false) {
  return {.name = name,
          .family = Family::full,
          .param = full_param_names[static_cast<std::size_t>(p)],
          .log_diagonal = log_diagonal,
          .count = 2,
          .arrays = {"mean", "scale"},
          .event_rank = {1, p == FullParam::packed_scale_tril ? 1 : 2},
          .factored = factored,
          .gradients = gradients,
          .full = p};
}
constexpr Form low_rank_form() {
  return {.name = "cov_factor",
          .family = Family::low_rank,
          .param = "cov_factor",
          .log_diagonal = false,
          .count = 3,
          .arrays = {"mean", "cov_factor", "cov_diag"},
          .event_rank = {1, 2, 1},
          .factored = false,
          .gradients = LibraryGradients::none};
}

// Indexed by code: the diagonal parameterizations, then the full ones, in the order of
// gausskl/types.hpp's enums, then packed_log_diagonal and low rank.
inline constexpr std::array<Form, 10> forms = {
    diag_form(DiagParam::stddev),
    diag_form(DiagParam::var),
    diag_form(DiagParam::logvar),
    diag_form(DiagParam::precision),
    full_form("scale_tril", FullParam::scale_tril, false, LibraryGradients::tril),
    full_form("covariance", FullParam::covariance, true, LibraryGradients::none),
    full_form("precision_matrix", FullParam::precision_matrix, true, LibraryGradients::none),
    full_form("packed_scale_tril", FullParam::packed_scale_tril, false, LibraryGradients::tril),
    full_form("packed_log_diagonal", FullParam::packed_scale_tril, false, LibraryGradients::tril,
              true),
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
