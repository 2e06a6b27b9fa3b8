#include "io/npy.hpp"
#include "io/npy_header.hpp"
#include "io/write_all.hpp"

namespace gausskl::io {

void write_npy(std::FILE* out, DType dtype, std::span<const std::int64_t> shape, const void* data) {
  const NpyPreamble preamble = make_npy_preamble(dtype, shape);
  write_all(out, preamble.bytes.data(), preamble.bytes.size(), ".npy output");
  write_all(out, data, static_cast<std::size_t>(preamble.data_bytes), ".npy output");
}

}  // namespace gausskl::io
