// The uncompressed bytes of one zip entry, read straight from the file (stored) or inflated
// through zlib (deflate), with the CRC-32 computed on the way.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/byte_source.hpp"
#include "io/input_file.hpp"
#include "io/zip_directory.hpp"

namespace gausskl::io {

class ZipEntrySource final : public ByteSource {
 public:
  // Rejects encrypted entries, methods other than stored and deflate, and size claims the
  // method cannot produce, before anything is read. `data_offset` comes from
  // zip_entry_data_offset(); `where` names the entry in errors.
  ZipEntrySource(const RandomAccessInput& file, const ZipEntry& entry, std::uint64_t data_offset,
                 std::string where);
  ZipEntrySource(const ZipEntrySource&) = delete;
  ZipEntrySource& operator=(const ZipEntrySource&) = delete;
  ~ZipEntrySource() override;

  std::uint64_t remaining() const override { return entry_.uncompressed_size - produced_; }
  void read(std::span<std::byte> out) override;

  // Call after reading everything: checks that a deflate stream ends exactly at the declared
  // size and that the CRC-32 matches.
  void finish();

  // For a deflate entry that declares more bytes than it occupies in the archive: inflates it
  // once without keeping the output and checks it as finish() does, then starts over. Memory
  // for the entry is allocated only after this, so a declared size that is a lie costs no
  // allocation. Stored entries occupy what they declare: nothing to do.
  void prove_declared_size();

 private:
  [[noreturn]] void fail(const std::string& what) const;
  void refill();
  std::size_t inflate_some(std::byte* out, std::size_t size);

  const RandomAccessInput& file_;
  ZipEntry entry_;
  std::uint64_t data_offset_;
  std::string where_;
  std::uint64_t produced_ = 0;  // uncompressed bytes handed out
  std::uint64_t consumed_ = 0;  // compressed bytes read from the file
  std::uint32_t crc_ = 0;
  z_stream stream_{};
  bool inflating_ = false;
  bool stream_ended_ = false;
  std::vector<std::byte> input_;
};

}  // namespace gausskl::io
