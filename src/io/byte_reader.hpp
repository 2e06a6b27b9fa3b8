// A cursor over bytes in memory that never reads past the end: a read that would is an
// error with a message chosen by the caller ("central directory is truncated").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "io/io_error.hpp"
#include "io/little_endian.hpp"

namespace gausskl::io {

class ByteReader {
 public:
  ByteReader(std::span<const std::byte> bytes, std::string_view where, std::string_view truncated)
      : bytes_(bytes), where_(where), truncated_(truncated) {}

  std::size_t remaining() const { return bytes_.size() - pos_; }

  std::span<const std::byte> bytes(std::size_t n) {
    if (n > remaining()) throw_read_error(where_, truncated_);
    auto out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  void skip(std::size_t n) { bytes(n); }
  std::uint16_t u16() { return load_le16(bytes(2).data()); }
  std::uint32_t u32() { return load_le32(bytes(4).data()); }
  std::uint64_t u64() { return load_le64(bytes(8).data()); }

 private:
  std::span<const std::byte> bytes_;
  std::size_t pos_ = 0;
  std::string_view where_;
  std::string_view truncated_;
};

}  // namespace gausskl::io
