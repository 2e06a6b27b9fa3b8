#include "io/zip_entry_source.hpp"

#include <algorithm>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <utility>

#include "io/io_error.hpp"
#include "io/zip_format.hpp"

namespace gausskl::io {
namespace {

constexpr std::size_t kInputChunk = 64 * 1024;
// zlib counts bytes in 32-bit uInt: hand it at most this much output per call.
constexpr std::size_t kMaxOutputChunk = std::size_t{1} << 30;

std::string hex32(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(value));
  return text;
}

}  // namespace

ZipEntrySource::ZipEntrySource(const RandomAccessInput& file, const ZipEntry& entry,
                               std::uint64_t data_offset, std::string where)
    : file_(file), entry_(entry), data_offset_(data_offset), where_(std::move(where)) {
  if (entry_.flags & zip::kFlagEncrypted) fail("encrypted entries are not supported");
  const std::uint64_t compressed = entry_.compressed_size;
  const std::uint64_t declared = entry_.uncompressed_size;
  if (entry_.method == zip::kMethodStored) {
    if (compressed != declared) {
      fail("stored entry has " + std::to_string(compressed) + " bytes but declares " +
           std::to_string(declared));
    }
    return;
  }
  if (entry_.method != zip::kMethodDeflate) {
    fail("compression method " + std::to_string(entry_.method) +
         " is not supported (only stored and deflate)");
  }
  std::uint64_t limit = 0;
  if (__builtin_mul_overflow(compressed, zip::kMaxDeflateRatio, &limit) ||
      declared > limit + zip::kDeflateSlack) {
    fail("declares " + std::to_string(declared) + " bytes from " + std::to_string(compressed) +
         " compressed bytes, more than deflate can produce (damaged archive or zip bomb)");
  }
  input_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(compressed, kInputChunk)));
  // Negative window bits: raw deflate data, as zip stores it (no zlib header or trailer).
  const int status = inflateInit2(&stream_, -MAX_WBITS);
  if (status == Z_MEM_ERROR) throw std::bad_alloc();
  if (status != Z_OK) throw std::runtime_error("[read] " + where_ + ": cannot start zlib");
  inflating_ = true;
}

ZipEntrySource::~ZipEntrySource() {
  if (inflating_) inflateEnd(&stream_);
}

void ZipEntrySource::fail(const std::string& what) const {
  throw_read_error(where_, what);
}

void ZipEntrySource::read(std::span<std::byte> out) {
  if (out.size() > remaining()) throw std::logic_error("ZipEntrySource: read past the end");
  // Also needed for the CRC: crc32_z(crc, nullptr, 0) returns the initial value, not `crc`.
  if (out.empty()) return;
  if (!inflating_) {
    file_.read_at(data_offset_ + produced_, out);
  } else {
    std::size_t done = 0;
    while (done < out.size()) {
      if (stream_ended_) {
        fail("deflate data ends after " + std::to_string(produced_ + done) + " of the declared " +
             std::to_string(entry_.uncompressed_size) + " bytes");
      }
      done += inflate_some(out.data() + done, out.size() - done);
    }
  }
  crc_ = static_cast<std::uint32_t>(
      crc32_z(crc_, reinterpret_cast<const Bytef*>(out.data()), out.size()));
  produced_ += out.size();
}

void ZipEntrySource::refill() {
  const std::uint64_t left = entry_.compressed_size - consumed_;
  if (left == 0) return;
  const auto size = static_cast<std::size_t>(std::min<std::uint64_t>(left, input_.size()));
  file_.read_at(data_offset_ + consumed_, std::span(input_).first(size));
  consumed_ += size;
  stream_.next_in = reinterpret_cast<Bytef*>(input_.data());
  stream_.avail_in = static_cast<uInt>(size);
}

// One call to inflate() writing at most `size` bytes to `out`; returns how many it wrote.
std::size_t ZipEntrySource::inflate_some(std::byte* out, std::size_t size) {
  if (stream_.avail_in == 0) refill();
  const auto room = static_cast<uInt>(std::min(size, kMaxOutputChunk));
  stream_.next_out = reinterpret_cast<Bytef*>(out);
  stream_.avail_out = room;
  const int status = inflate(&stream_, Z_NO_FLUSH);
  switch (status) {
    case Z_OK:
      break;
    case Z_STREAM_END:
      stream_ended_ = true;
      break;
    case Z_BUF_ERROR:
      // No progress was possible with room to write: every compressed byte has been used.
      fail("deflate data is truncated");
    case Z_MEM_ERROR:
      throw std::bad_alloc();
    default:
      fail(std::string("corrupted deflate data (zlib: ") +
           (stream_.msg != nullptr ? stream_.msg : "error") + ")");
  }
  return room - stream_.avail_out;
}

void ZipEntrySource::finish() {
  // Everything declared has been read; the stream must end here, with no more output.
  while (inflating_ && !stream_ended_) {
    std::byte extra{};
    if (inflate_some(&extra, 1) != 0) {
      fail("deflate data holds more than the declared " + std::to_string(entry_.uncompressed_size) +
           " bytes");
    }
  }
  if (crc_ != entry_.crc32) {
    fail("CRC-32 mismatch: the archive says " + hex32(entry_.crc32) + ", the data gives " +
         hex32(crc_));
  }
}

void ZipEntrySource::prove_declared_size() {
  if (!inflating_ || entry_.uncompressed_size <= entry_.compressed_size) return;
  std::vector<std::byte> scratch(kInputChunk);
  while (remaining() > 0) {
    read(std::span(scratch).first(
        static_cast<std::size_t>(std::min<std::uint64_t>(remaining(), scratch.size()))));
  }
  finish();
  if (inflateReset(&stream_) != Z_OK) {
    throw std::runtime_error("[read] " + where_ + ": cannot restart zlib");
  }
  stream_.avail_in = 0;
  produced_ = consumed_ = 0;
  crc_ = 0;
  stream_ended_ = false;
}

}  // namespace gausskl::io
