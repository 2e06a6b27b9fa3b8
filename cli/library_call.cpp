#include "cli/library_call.hpp"

#include <algorithm>

#include "gausskl/errors.hpp"
#include "util/show.hpp"

namespace gausskl::cli {

std::string reword(const std::exception& e, const std::string& command_tag,
                   const BudgetUse& budget) {
  using detail::show_bytes;
  std::string text = e.what();
  const auto* error = dynamic_cast<const Error*>(&e);
  if (!error) return text;
  const std::string to = "[" + command_tag + "] ";
  text = to + text.substr(error->op().size() + 3);  // after "[op] "
  // Options::memory_budget gets at least 1 B: 0 would mean no limit.
  const auto* small = dynamic_cast<const MemoryBudgetError*>(&e);
  if (small && budget.asked > 0 && small->budget() == std::max<std::int64_t>(budget.left, 1)) {
    return to + "--memory-budget " + show_bytes(budget.asked) + " is too small: the inputs took " +
           show_bytes(budget.inputs) +
           (budget.results > 0 ? " and the result " + show_bytes(budget.results) : "") +
           ", which left " + show_bytes(budget.left) + ", but " + small->needs();
  }
  if (error->kind() == ErrorKind::not_positive_definite) {
    text += "; --jitter EPS does that for each such matrix";
  }
  // The library's hint names its option; here it is a flag.
  const std::string& option = error->hint_option();
  if (!option.empty() && text.ends_with("set " + option)) {
    std::string flag = option;
    std::replace(flag.begin(), flag.end(), '_', '-');
    text.replace(text.size() - option.size() - 4, std::string::npos, "pass --" + flag);
  }
  return text;
}

}  // namespace gausskl::cli
