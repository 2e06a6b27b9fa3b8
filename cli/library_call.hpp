// Calls into the library, with its errors worded for the command line.
#pragma once

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

namespace gausskl::cli {

// What --memory-budget had given out when the library was called (asked 0: no budget).
struct BudgetUse {
  std::int64_t asked = 0;
  std::int64_t inputs = 0;   // the inputs as read and converted
  std::int64_t results = 0;  // results the command keeps in memory (kl, knn)
  std::int64_t left = 0;     // passed on as Options::memory_budget
};

// The library's error as the command should say it, decided by its data (gausskl/errors.hpp):
// the tag, the error's op, becomes `command_tag`. The rule (README, "Messages"): the CLI's tag
// is the command's name, [kl], [pairwise] or [knn], whatever --divergence is and whichever
// library function runs (kl without --q calls kl_standard_normal, pairwise calls pairwise_rows);
// files' errors are [read], [load] and [write]. Python's tag is the function's name. Also: "the
// memory budget (LEFT) is too small: ..." says what the user asked for, what the inputs took and
// what was left, since LEFT alone is a number the user never gave; a matrix that is not positive
// definite gets the --jitter hint; a hint to set an option names its flag. Errors that are not the
// library's keep their text.
std::string reword(const std::exception& e, const std::string& command_tag,
                   const BudgetUse& budget);

// Runs `call`, rethrowing its std::invalid_argument / std::runtime_error reworded.
template <class Call>
void call_library(const char* command_tag, const BudgetUse& budget, Call&& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(reword(e, command_tag, budget));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(reword(e, command_tag, budget));
  }
}

}  // namespace gausskl::cli
