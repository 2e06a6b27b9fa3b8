#include "io/memory_allowance.hpp"

#include <stdexcept>

#include "util/show.hpp"

namespace gausskl::io {

void MemoryAllowance::take(std::int64_t bytes, const char* op, const std::string& what) {
  using detail::show_bytes;
  if (limited() && bytes > left()) {
    // What the user asked for, what was taken and what that left: the numbers to act on.
    const std::string budget = "--memory-budget " + show_bytes(limit_);
    throw std::runtime_error(
        std::string("[") + op + "] " + what + ": needs " + show_bytes(bytes) + ", but " +
        (taken_ > 0 ? "the inputs before it took " + show_bytes(taken_) + " of " + budget +
                          ", which left " + show_bytes(left())
                    : budget + " is less"));
  }
  taken_ += bytes;
}

}  // namespace gausskl::io
