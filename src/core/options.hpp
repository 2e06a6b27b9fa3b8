// The rules for Options, shared by every public operation.
#pragma once

#include <cmath>

#include "core/error.hpp"
#include "gausskl/types.hpp"

namespace gausskl::detail {

inline void check_options(const char* op, const Options& options) {
  if (options.threads < 0) {
    fail(op, "options.threads must be >= 0 (0 = all cores), found " + show(options.threads));
  }
  if (!(options.jitter >= 0 && std::isfinite(options.jitter))) {
    fail(op, "options.jitter must be finite and >= 0, found " + show(options.jitter));
  }
  if (!(options.tolerance >= 0 && options.tolerance <= Options::max_tolerance)) {
    fail(op, "options.tolerance must be 0 (the default) or at most 1e-3, found " +
                 show(options.tolerance));
  }
  if (options.memory_budget < 0) {
    fail(op,
         "options.memory_budget must be >= 0 (0 = default), found " + show(options.memory_budget));
  }
}

}  // namespace gausskl::detail
