// The .npy header in both directions: the dict that describes an array, parsed from text or
// formatted for writing, and the overflow-checked size of the data it describes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/array.hpp"

namespace gausskl::io {

inline constexpr char kNpyMagic[] = "\x93NUMPY";
inline constexpr std::size_t kNpyMagicSize = 6;

struct NpyHeader {
  DType dtype = DType::float64;  // float32 or float64: the only dtypes read
  bool big_endian = false;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

// Parses the header dict. Throws std::invalid_argument("[read] where: ...") for a malformed
// header or an unsupported dtype.
NpyHeader parse_npy_header(std::string_view text, std::string_view where);

inline std::int64_t dtype_size(DType dtype) {
  return dtype == DType::float32 ? 4 : 8;
}

// Element count and byte size of an array of `shape`, or false if a dimension is negative or
// either product overflows int64.
bool shape_sizes(std::span<const std::int64_t> shape, std::int64_t item_size, std::int64_t& count,
                 std::int64_t& bytes);

// "()", "(5,)", "(3, 4)": the shape as Python writes a tuple.
std::string shape_text(std::span<const std::int64_t> shape);

struct NpyPreamble {
  std::string bytes;         // magic, version 1.0, header length, padded header dict
  std::uint64_t data_bytes;  // size of the data that follows
};

// The preamble for a C-order little-endian array, padded so the data starts at a multiple of
// 64 bytes. Throws std::invalid_argument("[write] ...") for a negative or overflowing shape.
NpyPreamble make_npy_preamble(DType dtype, std::span<const std::int64_t> shape);

}  // namespace gausskl::io
