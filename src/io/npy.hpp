// NumPy .npy files (format versions 1.0, 2.0 and 3.0).
//
// Readers accept little- and big-endian float32/float64 ('<f4', '>f8', ...) in C or Fortran
// order and return C order, native byte order. Any other dtype, a malformed header, a shape whose
// element count or byte size overflows int64, or data shorter or longer than the header says
// is an error. Errors: std::invalid_argument for bad content or a file that cannot be opened
// ("[read] path: what"), std::runtime_error for I/O failures while reading.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

#include "io/array.hpp"
#include "io/memory_allowance.hpp"

namespace gausskl::io {

// With `allowance`, the values' bytes are taken from it before they are allocated.
Array read_npy(const std::string& path, MemoryAllowance* allowance = nullptr);

// Parses a whole .npy image held in memory; `where` names it in error messages
// (e.g. "P.npz: entry 'std.npy'").
Array parse_npy(std::span<const std::byte> bytes, const std::string& where);

// Writes a version 1.0 .npy image ('<f4', '<f8' or '<i8', C order). `data` holds
// product(shape) elements of `dtype`. Throws std::runtime_error if the write fails.
void write_npy(std::FILE* out, DType dtype, std::span<const std::int64_t> shape, const void* data);

}  // namespace gausskl::io
