// The names of parameterizations as users write them (the array names of the file contract).
#pragma once

#include "gausskl/types.hpp"

namespace gausskl::detail {

inline const char* param_name(DiagParam p) {
  switch (p) {
    case DiagParam::stddev:
      return "std";
    case DiagParam::var:
      return "var";
    case DiagParam::logvar:
      return "logvar";
    case DiagParam::precision:
      return "precision";
  }
  return "?";
}

inline const char* param_name(FullParam p) {
  switch (p) {
    case FullParam::scale_tril:
      return "scale_tril";
    case FullParam::covariance:
      return "covariance";
    case FullParam::precision_matrix:
      return "precision_matrix";
    case FullParam::packed_scale_tril:
      return "packed_scale_tril";
  }
  return "?";
}

}  // namespace gausskl::detail
