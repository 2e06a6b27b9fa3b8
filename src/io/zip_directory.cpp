#include "io/zip_directory.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "io/byte_reader.hpp"
#include "io/io_error.hpp"
#include "io/little_endian.hpp"
#include "io/zip_format.hpp"

namespace gausskl::io {
namespace {

constexpr const char* kMultiDisk = "multi-disk archives are not supported";

struct EndRecord {
  std::uint64_t entries = 0;
  std::uint64_t directory_size = 0;
  std::uint64_t directory_offset = 0;
  std::uint64_t directory_limit = 0;  // the directory must end at or before this offset
};

std::vector<std::byte> read_bytes(const RandomAccessInput& file, std::uint64_t offset,
                                  std::size_t size) {
  std::vector<std::byte> bytes(size);
  file.read_at(offset, bytes);
  return bytes;
}

// Zip64 end record: the 64-bit counts and directory position that replace the saturated
// fields of the classic record.
void read_zip64_end(const RandomAccessInput& file, std::uint64_t locator_offset, EndRecord& end) {
  const std::string& where = file.path();
  const auto locator = read_bytes(file, locator_offset, zip::kZip64LocatorSize);
  ByteReader in_locator(locator, where, "Zip64 locator is truncated");
  in_locator.skip(4);  // signature
  const std::uint32_t record_disk = in_locator.u32();
  const std::uint64_t record_offset = in_locator.u64();
  const std::uint32_t disks = in_locator.u32();
  if (record_disk != 0 || disks > 1) throw_read_error(where, kMultiDisk);
  if (record_offset > locator_offset || locator_offset - record_offset < zip::kZip64EndSize) {
    throw_read_error(where, "Zip64 end record lies outside the archive");
  }
  const auto record = read_bytes(file, record_offset, zip::kZip64EndSize);
  ByteReader in(record, where, "Zip64 end record is truncated");
  if (in.u32() != zip::kZip64EndSignature) throw_read_error(where, "Zip64 end record is missing");
  in.skip(8 + 2 + 2);  // record size, version made by, version needed
  const std::uint32_t disk = in.u32();
  const std::uint32_t directory_disk = in.u32();
  const std::uint64_t disk_entries = in.u64();
  end.entries = in.u64();
  end.directory_size = in.u64();
  end.directory_offset = in.u64();
  end.directory_limit = record_offset;
  if (disk != 0 || directory_disk != 0 || disk_entries != end.entries) {
    throw_read_error(where, kMultiDisk);
  }
}

EndRecord read_end_record(const RandomAccessInput& file) {
  const std::string& where = file.path();
  constexpr const char* kNotZip =
      "not a zip archive (no end of central directory record; truncated?)";
  if (file.size() < zip::kEndSize) throw_read_error(where, kNotZip);
  // The record is the last thing in the file apart from a comment of at most 64 KiB, whose
  // length the record states: search backwards for a signature where that adds up.
  const std::size_t tail_size = static_cast<std::size_t>(
      std::min<std::uint64_t>(file.size(), zip::kEndSize + zip::kMaxCommentSize));
  const std::uint64_t tail_offset = file.size() - tail_size;
  const auto tail = read_bytes(file, tail_offset, tail_size);
  for (std::size_t i = tail_size - zip::kEndSize + 1; i-- > 0;) {
    const std::byte* p = tail.data() + i;
    if (load_le32(p) != zip::kEndSignature || i + zip::kEndSize + load_le16(p + 20) != tail_size) {
      continue;
    }
    ByteReader in{std::span(tail).subspan(i, zip::kEndSize), where, "end record is truncated"};
    in.skip(4);  // signature
    const std::uint16_t disk = in.u16();
    const std::uint16_t directory_disk = in.u16();
    const std::uint16_t disk_entries = in.u16();
    EndRecord end;
    end.entries = in.u16();
    end.directory_size = in.u32();
    end.directory_offset = in.u32();
    end.directory_limit = tail_offset + i;
    if (end.directory_limit >= zip::kZip64LocatorSize) {
      const std::uint64_t locator_offset = end.directory_limit - zip::kZip64LocatorSize;
      std::array<std::byte, 4> signature{};
      file.read_at(locator_offset, signature);
      if (load_le32(signature.data()) == zip::kZip64LocatorSignature) {
        read_zip64_end(file, locator_offset, end);
        return end;
      }
    }
    if (disk != 0 || directory_disk != 0 || disk_entries != end.entries) {
      throw_read_error(where, kMultiDisk);
    }
    return end;
  }
  throw_read_error(where, kNotZip);
}

// Sizes and offset saturated at 0xFFFFFFFF are stored, in this order, in the Zip64 extra field.
void apply_zip64_extra(std::span<const std::byte> extra, const std::string& where,
                       bool saturated_size, bool saturated_compressed, bool saturated_offset,
                       ZipEntry& entry) {
  if (!saturated_size && !saturated_compressed && !saturated_offset) return;
  ByteReader fields(extra, where, "extra field is truncated");
  while (fields.remaining() >= 4) {
    const std::uint16_t id = fields.u16();
    const std::uint16_t size = fields.u16();
    const auto data = fields.bytes(size);
    if (id != zip::kZip64ExtraId) continue;
    ByteReader in(data, where, "Zip64 extra field is too short");
    if (saturated_size) entry.uncompressed_size = in.u64();
    if (saturated_compressed) entry.compressed_size = in.u64();
    if (saturated_offset) entry.local_header_offset = in.u64();
    return;
  }
  throw_read_error(where, "Zip64 extra field is missing");
}

ZipEntry read_directory_entry(ByteReader& in, const std::string& path) {
  if (in.u32() != zip::kCentralHeaderSignature) {
    throw_read_error(path, "bad central directory entry signature");
  }
  in.skip(2 + 2);  // version made by, version needed
  ZipEntry entry;
  entry.flags = in.u16();
  entry.method = in.u16();
  in.skip(2 + 2);  // modification time and date
  entry.crc32 = in.u32();
  const std::uint32_t compressed_size = in.u32();
  const std::uint32_t uncompressed_size = in.u32();
  const std::uint16_t name_size = in.u16();
  const std::uint16_t extra_size = in.u16();
  const std::uint16_t comment_size = in.u16();
  in.skip(2 + 2 + 4);  // first disk, internal attributes, external attributes
  const std::uint32_t offset = in.u32();
  const auto name = in.bytes(name_size);
  entry.name.assign(reinterpret_cast<const char*>(name.data()), name.size());
  const auto extra = in.bytes(extra_size);
  in.skip(comment_size);

  entry.compressed_size = compressed_size;
  entry.uncompressed_size = uncompressed_size;
  entry.local_header_offset = offset;
  apply_zip64_extra(extra, path + ": entry " + quote_for_message(entry.name),
                    uncompressed_size == zip::kSaturated32, compressed_size == zip::kSaturated32,
                    offset == zip::kSaturated32, entry);
  return entry;
}

}  // namespace

ZipDirectory read_zip_directory(const RandomAccessInput& file) {
  const std::string& where = file.path();
  const EndRecord end = read_end_record(file);
  if (end.directory_offset > end.directory_limit ||
      end.directory_size > end.directory_limit - end.directory_offset) {
    throw_read_error(where, "central directory lies outside the archive");
  }
  if (end.entries > end.directory_size / zip::kCentralHeaderSize) {
    throw_read_error(
        where, "central directory is too small for " + std::to_string(end.entries) + " entries");
  }
  // Both sizes were just checked against the file's, so these allocations are bounded by it.
  const auto directory =
      read_bytes(file, end.directory_offset, static_cast<std::size_t>(end.directory_size));
  ByteReader in(directory, where, "central directory is truncated");
  ZipDirectory result;
  result.offset = end.directory_offset;
  result.entries.reserve(static_cast<std::size_t>(end.entries));
  for (std::uint64_t i = 0; i < end.entries; ++i) {
    result.entries.push_back(read_directory_entry(in, where));
  }
  return result;
}

std::uint64_t zip_entry_data_offset(const RandomAccessInput& file, const ZipDirectory& directory,
                                    const ZipEntry& entry, const std::string& where) {
  const std::uint64_t offset = entry.local_header_offset;
  if (offset > directory.offset || directory.offset - offset < zip::kLocalHeaderSize) {
    throw_read_error(where, "local header lies outside the archive");
  }
  std::array<std::byte, zip::kLocalHeaderSize> header{};
  file.read_at(offset, header);
  if (load_le32(header.data()) != zip::kLocalHeaderSignature) {
    throw_read_error(where, "bad local header signature");
  }
  const std::uint16_t name_size = load_le16(header.data() + 26);
  const std::uint16_t extra_size = load_le16(header.data() + 28);
  const std::uint64_t name_offset = offset + zip::kLocalHeaderSize;
  const std::uint64_t data_offset = name_offset + name_size + extra_size;
  if (data_offset > directory.offset || entry.compressed_size > directory.offset - data_offset) {
    throw_read_error(where, "entry data (" + std::to_string(entry.compressed_size) +
                                " bytes) lies outside the archive");
  }
  std::string local_name(name_size, '\0');
  file.read_at(name_offset, std::as_writable_bytes(std::span(local_name)));
  if (local_name != entry.name) {
    throw_read_error(where, "local header names it " + quote_for_message(local_name));
  }
  return data_offset;
}

void check_entries_apart(const ZipDirectory& directory, std::span<const std::uint64_t> data_offsets,
                         const std::string& where) {
  const auto& entries = directory.entries;
  std::vector<std::size_t> order(entries.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return entries[a].local_header_offset < entries[b].local_header_offset;
  });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const std::size_t before = order[k - 1], after = order[k];
    // zip_entry_data_offset() checked that the data ends before the directory: no overflow.
    if (data_offsets[before] + entries[before].compressed_size >
        entries[after].local_header_offset) {
      throw_read_error(where, "entries " + quote_for_message(entries[before].name) + " and " +
                                  quote_for_message(entries[after].name) +
                                  " overlap (a zip bomb or a damaged archive)");
    }
  }
}

}  // namespace gausskl::io
