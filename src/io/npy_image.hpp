// Reading one .npy image from any ByteSource (file, memory, zip entry).
#pragma once

#include <string>

#include "io/array.hpp"
#include "io/byte_source.hpp"
#include "io/memory_allowance.hpp"
#include "io/npy_header.hpp"

namespace gausskl::io {

// Reads the image, which must fill the source exactly. Every size claimed by the header is
// checked against source.remaining() before memory is allocated for it, and the values' bytes
// are taken from `allowance` (if given) first.
Array read_npy_image(ByteSource& source, const std::string& where,
                     MemoryAllowance* allowance = nullptr);

// Reads the image's magic, version and header, and checks that the data the header describes
// (count elements, `bytes` bytes) is exactly what is left in the source: read_npy_image's first
// half, for readers that take the data a block at a time (npy_rows.hpp).
NpyHeader read_npy_preamble(ByteSource& source, const std::string& where, std::int64_t& count,
                            std::int64_t& bytes);

}  // namespace gausskl::io
