// The error classes of gausskl/errors.hpp, each building its what() from its data, and the texts
// of core/error.hpp.
#include "gausskl/errors.hpp"

#include <utility>

#include "core/error.hpp"
#include "util/show.hpp"

namespace gausskl {

const char* error_kind_name(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::invalid_input:
      return "invalid_input";
    case ErrorKind::option:
      return "option";
    case ErrorKind::overflow:
      return "overflow";
    case ErrorKind::not_positive_definite:
      return "not_positive_definite";
    case ErrorKind::memory_budget:
      return "memory_budget";
    case ErrorKind::out_of_memory:
      return "out_of_memory";
  }
  return "invalid_input";
}

Error::Error(ErrorKind kind, std::string op, std::string side, std::int64_t index, std::string hint,
             std::string hint_option)
    : kind_(kind),
      op_(std::move(op)),
      side_(std::move(side)),
      index_(index),
      hint_(std::move(hint)),
      hint_option_(std::move(hint_option)) {}

Error::~Error() = default;

InputError::InputError(ErrorKind kind, const std::string& op, const std::string& what,
                       std::string side, std::int64_t index, std::string hint,
                       std::string hint_option)
    : std::invalid_argument("[" + op + "] " + what + (hint.empty() ? "" : "; " + hint)),
      Error(kind, op, std::move(side), index, std::move(hint), std::move(hint_option)) {}

InputError::InputError(Whole, ErrorKind kind, const std::string& op, const std::string& what_text,
                       std::string side, std::int64_t index, std::string hint)
    : std::invalid_argument(what_text), Error(kind, op, std::move(side), index, std::move(hint)) {}

InputError::~InputError() = default;

ResourceError::ResourceError(ErrorKind kind, const std::string& op, const std::string& what)
    : std::runtime_error("[" + op + "] " + what), Error(kind, op) {}

ResourceError::~ResourceError() = default;

OptionError::OptionError(const std::string& op, std::string option, std::string rule,
                         const std::string& found)
    : InputError(ErrorKind::option, op, "options." + option + " " + rule + ", found " + found),
      option_(std::move(option)),
      rule_(std::move(rule)) {}

OptionError::~OptionError() = default;

NotPositiveDefiniteError::NotPositiveDefiniteError(const std::string& op, const std::string& side,
                                                   const std::string& param, std::int64_t index,
                                                   std::int64_t pivot, const std::string& value)
    : InputError(Whole{}, ErrorKind::not_positive_definite, op,
                 "[" + op + "] " + side + ".scale (" + param +
                     ") is not positive definite at distribution " + detail::show(index) +
                     ": pivot " + detail::show(pivot) + " is " + value + " (" + hints::regularize +
                     ")",
                 side, index, hints::regularize),
      pivot_(pivot) {}

NotPositiveDefiniteError::~NotPositiveDefiniteError() = default;

MemoryBudgetError::MemoryBudgetError(const std::string& op, std::int64_t budget, std::string needs)
    : ResourceError(
          ErrorKind::memory_budget, op,
          "the memory budget (" + detail::show_bytes(budget) + ") is too small: " + needs),
      budget_(budget),
      needs_(std::move(needs)) {}

MemoryBudgetError::~MemoryBudgetError() = default;

}  // namespace gausskl
