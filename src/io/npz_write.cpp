#include <zlib.h>

#include <set>
#include <stdexcept>

#include "io/little_endian.hpp"
#include "io/npy_header.hpp"
#include "io/npz.hpp"
#include "io/write_all.hpp"
#include "io/zip_format.hpp"

namespace gausskl::io {
namespace {

// Entries are stored (not compressed) and always carry Zip64 sizes and offsets, as NumPy's
// own archives do: one code path for archives of any size. The fixed 1980-01-01 timestamp
// (DOS date 0x0021) keeps the output reproducible.
constexpr std::uint16_t kDosDate = 0x0021;
constexpr std::uint16_t kDosTime = 0;
constexpr std::uint16_t kMadeByUnix = (3 << 8) | zip::kVersionZip64;
constexpr std::uint32_t kRegularFile0644 = 0100644u << 16;

struct Written {
  std::string name;
  std::uint32_t crc32;
  std::uint64_t size;
  std::uint64_t offset;
};

std::string local_header(const std::string& name, std::uint32_t crc, std::uint64_t size) {
  std::string h;
  append_le(h, zip::kLocalHeaderSignature, 4);
  append_le(h, zip::kVersionZip64, 2);
  append_le(h, zip::kFlagUtf8Name, 2);
  append_le(h, zip::kMethodStored, 2);
  append_le(h, kDosTime, 2);
  append_le(h, kDosDate, 2);
  append_le(h, crc, 4);
  append_le(h, zip::kSaturated32, 4);  // compressed size: in the Zip64 field
  append_le(h, zip::kSaturated32, 4);  // uncompressed size: in the Zip64 field
  append_le(h, name.size(), 2);
  append_le(h, 4 + 16, 2);  // extra field length
  h += name;
  append_le(h, zip::kZip64ExtraId, 2);
  append_le(h, 16, 2);
  append_le(h, size, 8);  // uncompressed
  append_le(h, size, 8);  // compressed
  return h;
}

void append_central_header(std::string& h, const Written& entry) {
  append_le(h, zip::kCentralHeaderSignature, 4);
  append_le(h, kMadeByUnix, 2);
  append_le(h, zip::kVersionZip64, 2);
  append_le(h, zip::kFlagUtf8Name, 2);
  append_le(h, zip::kMethodStored, 2);
  append_le(h, kDosTime, 2);
  append_le(h, kDosDate, 2);
  append_le(h, entry.crc32, 4);
  append_le(h, zip::kSaturated32, 4);  // compressed size
  append_le(h, zip::kSaturated32, 4);  // uncompressed size
  append_le(h, entry.name.size(), 2);
  append_le(h, 4 + 24, 2);  // extra field length
  append_le(h, 0, 2);       // comment length
  append_le(h, 0, 2);       // first disk
  append_le(h, 0, 2);       // internal attributes
  append_le(h, kRegularFile0644, 4);
  append_le(h, zip::kSaturated32, 4);  // local header offset
  h += entry.name;
  append_le(h, zip::kZip64ExtraId, 2);
  append_le(h, 24, 2);
  append_le(h, entry.size, 8);  // uncompressed
  append_le(h, entry.size, 8);  // compressed
  append_le(h, entry.offset, 8);
}

// Zip64 end record, its locator, then the classic end record with saturated fields where a
// value does not fit.
void append_end_records(std::string& h, std::uint64_t entries, std::uint64_t directory_offset,
                        std::uint64_t directory_size) {
  const std::uint64_t zip64_end_offset = directory_offset + directory_size;
  append_le(h, zip::kZip64EndSignature, 4);
  append_le(h, zip::kZip64EndSize - 12, 8);  // size of the rest of the record
  append_le(h, kMadeByUnix, 2);
  append_le(h, zip::kVersionZip64, 2);
  append_le(h, 0, 4);  // this disk
  append_le(h, 0, 4);  // disk of the directory
  append_le(h, entries, 8);
  append_le(h, entries, 8);
  append_le(h, directory_size, 8);
  append_le(h, directory_offset, 8);

  append_le(h, zip::kZip64LocatorSignature, 4);
  append_le(h, 0, 4);  // disk of the Zip64 end record
  append_le(h, zip64_end_offset, 8);
  append_le(h, 1, 4);  // number of disks

  const auto clamp = [](std::uint64_t value, std::uint64_t saturated) {
    return value < saturated ? value : saturated;
  };
  append_le(h, zip::kEndSignature, 4);
  append_le(h, 0, 2);  // this disk
  append_le(h, 0, 2);  // disk of the directory
  append_le(h, clamp(entries, zip::kSaturated16), 2);
  append_le(h, clamp(entries, zip::kSaturated16), 2);
  append_le(h, clamp(directory_size, zip::kSaturated32), 4);
  append_le(h, clamp(directory_offset, zip::kSaturated32), 4);
  append_le(h, 0, 2);  // comment length
}

}  // namespace

void write_npz(std::FILE* out, std::span<const NpzEntry> entries) {
  constexpr std::string_view kWhat = ".npz output";
  std::set<std::string_view> names;
  for (const auto& entry : entries) {
    if (entry.name.size() + 4 > 0xFFFF) {
      throw std::invalid_argument("[write] .npz entry name is too long");
    }
    if (!names.insert(entry.name).second) {
      throw std::invalid_argument("[write] .npz entry name '" + entry.name + "' appears twice");
    }
  }

  std::vector<Written> written;
  written.reserve(entries.size());
  std::uint64_t offset = 0;
  for (const auto& entry : entries) {
    const NpyPreamble preamble = make_npy_preamble(entry.dtype, entry.shape);
    const auto data_size = static_cast<std::size_t>(preamble.data_bytes);
    uLong crc =
        crc32_z(0, reinterpret_cast<const Bytef*>(preamble.bytes.data()), preamble.bytes.size());
    // crc32_z(crc, nullptr, 0) would return the initial value, not `crc`: skip empty data.
    if (data_size > 0) crc = crc32_z(crc, static_cast<const Bytef*>(entry.data), data_size);
    const Written record{entry.name + ".npy", static_cast<std::uint32_t>(crc),
                         preamble.bytes.size() + preamble.data_bytes, offset};
    const std::string header = local_header(record.name, record.crc32, record.size);
    write_all(out, header.data(), header.size(), kWhat);
    write_all(out, preamble.bytes.data(), preamble.bytes.size(), kWhat);
    write_all(out, entry.data, data_size, kWhat);
    offset += header.size() + record.size;
    written.push_back(record);
  }

  std::string tail;
  for (const auto& record : written)
    append_central_header(tail, record);
  append_end_records(tail, written.size(), offset, tail.size());
  write_all(out, tail.data(), tail.size(), kWhat);
}

}  // namespace gausskl::io
