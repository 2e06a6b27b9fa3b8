// Calls into the library, with its errors worded for the command line.
#pragma once

#include <cstdint>
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

// The library's message as the command should say it: the tag `library_tag` becomes
// `command_tag` (kl without --q calls kl_standard_normal, but the user ran kl), and "the memory
// budget (LEFT) is too small: ..." says what the user asked for, what the inputs took and what
// was left, since LEFT alone is a number the user never gave.
std::string reword(const std::string& message, const std::string& library_tag,
                   const std::string& command_tag, const BudgetUse& budget);

// Runs `call`, rethrowing its std::invalid_argument / std::runtime_error reworded.
template <class Call>
void call_library(const char* library_tag, const char* command_tag, const BudgetUse& budget,
                  Call&& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(reword(e.what(), library_tag, command_tag, budget));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(reword(e.what(), library_tag, command_tag, budget));
  }
}

}  // namespace gausskl::cli
