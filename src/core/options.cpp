// The rules for Options, shared by every public operation (and offered to the interfaces, which
// check an option before reading any input).
#include <cmath>
#include <string>

#include "gausskl/limits.hpp"
#include "gausskl/ops.hpp"
#include "util/show.hpp"

namespace gausskl {

void check_options(const char* op, const Options& options) {
  using detail::show;
  if (options.threads < 0) {
    throw OptionError(op, "threads", "must be >= 0 (0 = all cores)", show(options.threads));
  }
  if (!(options.jitter >= 0 && std::isfinite(options.jitter))) {
    throw OptionError(op, "jitter", "must be finite and >= 0", show(options.jitter));
  }
  if (!(options.tolerance >= 0 && options.tolerance <= limits::max_tolerance)) {
    throw OptionError(op, "tolerance",
                      std::string("must be 0 (the default) or at most ") +
                          detail::show_limit(limits::max_tolerance),
                      show(options.tolerance));
  }
  if (options.memory_budget < 0) {
    throw OptionError(op, "memory_budget", "must be >= 0 (0 = default)",
                      show(options.memory_budget));
  }
}

}  // namespace gausskl
