#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "io/input_file.hpp"
#include "io/io_error.hpp"
#include "io/little_endian.hpp"
#include "io/npy.hpp"
#include "io/npy_header.hpp"
#include "io/npy_image.hpp"

namespace gausskl::io {
namespace {

template <typename T>
void reverse_byte_order(std::vector<T>& values) {
  for (T& value : values) {
    auto* bytes = reinterpret_cast<std::byte*>(&value);
    std::reverse(bytes, bytes + sizeof(T));
  }
}

// In Fortran order element (i0, ..., ik) sits at i0 + d0 * (i1 + d1 * (...)): walk the C-order
// index (last dimension fastest) and keep that offset up to date.
template <typename T>
std::vector<T> fortran_to_c_order(const std::vector<T>& fortran,
                                  const std::vector<std::int64_t>& shape) {
  std::vector<T> c_order(fortran.size());
  if (c_order.empty()) return c_order;
  const std::size_t ndim = shape.size();
  std::vector<std::int64_t> stride(ndim), index(ndim, 0);
  std::int64_t step = 1;
  for (std::size_t k = 0; k < ndim; ++k) {
    stride[k] = step;
    step *= shape[k];
  }
  std::int64_t offset = 0;
  for (T& out : c_order) {
    out = fortran[static_cast<std::size_t>(offset)];
    for (std::size_t k = ndim; k-- > 0;) {
      if (++index[k] < shape[k]) {
        offset += stride[k];
        break;
      }
      offset -= (shape[k] - 1) * stride[k];
      index[k] = 0;
    }
  }
  return c_order;
}

template <typename T>
std::vector<T> read_values(ByteSource& source, const NpyHeader& header, std::int64_t count) {
  std::vector<T> values(static_cast<std::size_t>(count));
  source.read(std::as_writable_bytes(std::span(values)));
  if (header.big_endian != (std::endian::native == std::endian::big)) reverse_byte_order(values);
  if (header.fortran_order && header.shape.size() > 1) {
    return fortran_to_c_order(values, header.shape);
  }
  return values;
}

}  // namespace

NpyHeader read_npy_preamble(ByteSource& source, const std::string& where, std::int64_t& count,
                            std::int64_t& bytes) {
  // Magic (6 bytes), major and minor version (1 byte each), then the header length: 2 bytes in
  // version 1.0, 4 bytes in 2.0 and 3.0 (3.0 allows UTF-8 in the header).
  std::array<std::byte, kNpyMagicSize + 2> prefix{};
  if (source.remaining() < prefix.size()) {
    throw_read_error(
        where, "too short for a .npy file (" + std::to_string(source.remaining()) + " bytes)");
  }
  source.read(prefix);
  if (std::memcmp(prefix.data(), kNpyMagic, kNpyMagicSize) != 0) {
    throw_read_error(where, "not a .npy file (it does not start with \\x93NUMPY)");
  }
  const int major = std::to_integer<int>(prefix[6]);
  const int minor = std::to_integer<int>(prefix[7]);
  if (major < 1 || major > 3 || minor != 0) {
    throw_read_error(where, "unsupported .npy format version " + std::to_string(major) + "." +
                                std::to_string(minor) + " (1.0, 2.0 and 3.0 are supported)");
  }
  std::array<std::byte, 4> length_bytes{};
  const std::size_t length_size = major == 1 ? 2 : 4;
  if (source.remaining() < length_size) throw_read_error(where, ".npy header is truncated");
  source.read(std::span(length_bytes).first(length_size));
  const std::uint64_t header_size = load_le(length_bytes.data(), static_cast<int>(length_size));
  if (header_size > source.remaining()) {
    throw_read_error(where, ".npy header claims " + std::to_string(header_size) +
                                " bytes but only " + std::to_string(source.remaining()) +
                                " follow");
  }
  std::string text(static_cast<std::size_t>(header_size), '\0');
  source.read(std::as_writable_bytes(std::span(text)));
  const NpyHeader header = parse_npy_header(text, where);

  if (!shape_sizes(header.shape, dtype_size(header.dtype), count, bytes)) {
    throw_read_error(
        where, "shape " + shape_text(header.shape) + " is too large (its size overflows int64)");
  }
  if (static_cast<std::uint64_t>(bytes) != source.remaining()) {
    throw_read_error(where, "expected " + std::to_string(bytes) + " bytes of data for shape " +
                                shape_text(header.shape) + " " + dtype_name(header.dtype) +
                                ", found " + std::to_string(source.remaining()));
  }
  return header;
}

Array read_npy_image(ByteSource& source, const std::string& where, MemoryAllowance* allowance) {
  std::int64_t count = 0, bytes = 0;
  const NpyHeader header = read_npy_preamble(source, where, count, bytes);
  // Fortran order is reordered through a second copy, freed before returning.
  const bool reordered = header.fortran_order && header.shape.size() > 1;
  if (allowance) allowance->take(reordered ? 2 * bytes : bytes, "read", where);
  Array array;
  array.shape = header.shape;
  if (header.dtype == DType::float32) {
    array.data = read_values<float>(source, header, count);
  } else {
    array.data = read_values<double>(source, header, count);
  }
  if (allowance && reordered) allowance->give_back(bytes);
  return array;
}

Array read_npy(const std::string& path, MemoryAllowance* allowance) {
  const InputFile file(path);
  FileSource source(file, 0);
  return read_npy_image(source, path, allowance);
}

Array parse_npy(std::span<const std::byte> bytes, const std::string& where) {
  SpanSource source(bytes);
  return read_npy_image(source, where);
}

}  // namespace gausskl::io
