// The rules for Options, shared by every public operation (and offered to the interfaces, which
// check an option before reading any input).
#include <cmath>
#include <string>

#include "gausskl/divergence_kinds.hpp"
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
  const auto kind = static_cast<std::size_t>(options.divergence);
  if (kind >= divergence_names.size()) {
    throw OptionError(op, "divergence", "must be one of " + divergence_list(),
                      "enum value " + show(kind));
  }
  if (options.divergence == Divergence::renyi) {
    if (!(std::isfinite(options.alpha) && options.alpha > 0 && options.alpha != 1)) {
      throw OptionError(op, "alpha",
                        "(the order of the renyi divergence) must be finite and in (0, 1) or "
                        "(1, inf)",
                        options.alpha == 0 ? std::string("0 (unset)") : show(options.alpha));
    }
  } else if (options.alpha != 0) {
    throw OptionError(op, "alpha",
                      std::string("is the order of the renyi divergence and must stay 0 (unset) "
                                  "for ") +
                          divergence_name(options.divergence),
                      show(options.alpha));
  }
}

}  // namespace gausskl
