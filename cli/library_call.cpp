#include "cli/library_call.hpp"

#include <algorithm>

#include "util/show.hpp"

namespace gausskl::cli {

std::string reword(const std::string& message, const std::string& library_tag,
                   const std::string& command_tag, const BudgetUse& budget) {
  using detail::show_bytes;
  std::string text = message;
  const std::string from = "[" + library_tag + "] ", to = "[" + command_tag + "] ";
  if (text.starts_with(from)) text.replace(0, from.size(), to);
  // Options::memory_budget gets at least 1 B: 0 would mean no limit.
  const std::string small = to + "the memory budget (" +
                            show_bytes(std::max<std::int64_t>(budget.left, 1)) + ") is too small: ";
  if (budget.asked > 0 && text.starts_with(small)) {
    text = to + "--memory-budget " + show_bytes(budget.asked) + " is too small: the inputs took " +
           show_bytes(budget.inputs) +
           (budget.results > 0 ? " and the result " + show_bytes(budget.results) : "") +
           ", which left " + show_bytes(budget.left) + ", but " + text.substr(small.size());
  }
  return text;
}

}  // namespace gausskl::cli
