#include "io/memory_allowance.hpp"

#include <stdexcept>

#include "util/show.hpp"

namespace gausskl::io {

void MemoryAllowance::take(std::int64_t bytes, const char* op, const std::string& what) {
  using detail::show_bytes;
  if (limited() && bytes > left()) {
    throw std::runtime_error(std::string("[") + op + "] " + what + ": needs " + show_bytes(bytes) +
                             ", but only " + show_bytes(left()) + " of the " + show_bytes(limit_) +
                             " memory budget is left");
  }
  taken_ += bytes;
}

}  // namespace gausskl::io
