// Throwing the library's errors (gausskl/errors.hpp): "[op] what, where".
#pragma once

#include <cstdint>
#include <string>

#include "gausskl/errors.hpp"
#include "util/show.hpp"

namespace gausskl::detail {

[[noreturn]] inline void fail(const char* op, const std::string& what) {
  throw InputError(ErrorKind::invalid_input, op, what);
}

// An allocation that failed.
[[noreturn]] inline void fail_out_of_memory(const char* op, const std::string& what) {
  throw ResourceError(ErrorKind::out_of_memory, op, what);
}

// An allocation of a computation's workspace that failed, for distributions of dimension d, n
// of them.
[[noreturn]] inline void fail_workspace(const char* op, std::int64_t d, std::int64_t n) {
  fail_out_of_memory(op,
                     "out of memory for the workspace (D = " + show(d) + ", N = " + show(n) + ")");
}

// a * b, or a tagged error if it does not fit in int64 (sizes are never allowed to wrap).
inline std::int64_t checked_mul(const char* op, std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw InputError(ErrorKind::overflow, op,
                     std::string(what) + " overflows int64 (" + show(a) + " * " + show(b) + ")");
  }
  return r;
}

inline std::int64_t checked_add(const char* op, std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) {
    throw InputError(ErrorKind::overflow, op,
                     std::string(what) + " overflows int64 (" + show(a) + " + " + show(b) + ")");
  }
  return r;
}

}  // namespace gausskl::detail
