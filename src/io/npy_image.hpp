// Reading one .npy image from any ByteSource (file, memory, zip entry).
#pragma once

#include <string>

#include "io/array.hpp"
#include "io/byte_source.hpp"
#include "io/memory_allowance.hpp"

namespace gausskl::io {

// Reads the image, which must fill the source exactly. Every size claimed by the header is
// checked against source.remaining() before memory is allocated for it, and the values' bytes
// are taken from `allowance` (if given) first.
Array read_npy_image(ByteSource& source, const std::string& where,
                     MemoryAllowance* allowance = nullptr);

}  // namespace gausskl::io
