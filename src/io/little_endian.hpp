// Little-endian integers as zip and .npy store them, independent of the host's byte order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gausskl::io {

inline std::uint64_t load_le(const std::byte* p, int bytes) {
  std::uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i)
    value = (value << 8) | std::to_integer<std::uint64_t>(p[i]);
  return value;
}
inline std::uint16_t load_le16(const std::byte* p) {
  return static_cast<std::uint16_t>(load_le(p, 2));
}
inline std::uint32_t load_le32(const std::byte* p) {
  return static_cast<std::uint32_t>(load_le(p, 4));
}
inline std::uint64_t load_le64(const std::byte* p) {
  return load_le(p, 8);
}

// Appends the `bytes` low bytes of `value`, least significant first.
inline void append_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

}  // namespace gausskl::io
