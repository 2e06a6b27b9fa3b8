// Writing a whole buffer to a stdio stream, with the failure turned into an exception.
#pragma once

#include <cerrno>
#include <cstdio>

#include "io/io_error.hpp"

namespace gausskl::io {

// Throws std::runtime_error("[write] what: <reason>") unless all `size` bytes were written.
inline void write_all(std::FILE* out, const void* data, std::size_t size, std::string_view what) {
  if (size == 0) return;
  errno = 0;
  if (std::fwrite(data, 1, size, out) != size) throw_write_failure(what, errno != 0 ? errno : EIO);
}

}  // namespace gausskl::io
