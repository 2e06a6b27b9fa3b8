// Reading one .npy image from any ByteSource (file, memory, zip entry).
#pragma once

#include <string>

#include "io/array.hpp"
#include "io/byte_source.hpp"

namespace gausskl::io {

// Reads the image, which must fill the source exactly. Every size claimed by the header is
// checked against source.remaining() before memory is allocated for it.
Array read_npy_image(ByteSource& source, const std::string& where);

}  // namespace gausskl::io
