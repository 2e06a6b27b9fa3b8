// sigma, 1 / sigma and log sigma of one diagonal entry, each straight from the parameter.
#pragma once

#include <cmath>

#include "gausskl/types.hpp"

namespace gausskl::cpu {

// No parameterization pays for a round trip through another: log sigma of logvar is exact,
// 1 / sigma of precision is one square root.
inline void diag_terms(DiagParam param, double x, double* b, double* inv_b, double* log_b) {
  switch (param) {
    case DiagParam::stddev:
      *b = x, *inv_b = 1 / x, *log_b = std::log(x);
      return;
    case DiagParam::var:
      *b = std::sqrt(x), *inv_b = 1 / std::sqrt(x), *log_b = 0.5 * std::log(x);
      return;
    case DiagParam::logvar:
      *b = std::exp(0.5 * x), *inv_b = std::exp(-0.5 * x), *log_b = 0.5 * x;
      return;
    case DiagParam::precision:
      *b = 1 / std::sqrt(x), *inv_b = std::sqrt(x), *log_b = -0.5 * std::log(x);
      return;
  }
}

// 1 / sigma alone, bitwise diag_terms' inv_b, without its logarithm (which, setting errno, the
// compiler cannot drop when unused).
inline double diag_inv_sigma(DiagParam param, double x) {
  switch (param) {
    case DiagParam::stddev:
      return 1 / x;
    case DiagParam::var:
      return 1 / std::sqrt(x);
    case DiagParam::logvar:
      return std::exp(-0.5 * x);
    case DiagParam::precision:
      return std::sqrt(x);
  }
  return 0;
}

}  // namespace gausskl::cpu
