// The central directory of a zip archive: where each entry is, how it is stored, its sizes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/input_file.hpp"

namespace gausskl::io {

struct ZipEntry {
  std::string name;
  std::uint16_t flags = 0;
  std::uint16_t method = 0;
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::uint64_t local_header_offset = 0;
};

struct ZipDirectory {
  std::vector<ZipEntry> entries;  // in directory order
  std::uint64_t offset = 0;       // where the directory starts; entry data lies before it
};

// Finds the end of central directory record (after an optional comment), follows the Zip64
// records when present and reads every directory entry, taking sizes and offsets from Zip64
// extra fields where the 32-bit fields are saturated. Throws std::invalid_argument
// ("[read] path: ...") for anything malformed or pointing outside the file.
ZipDirectory read_zip_directory(const RandomAccessInput& file);

// The offset of the entry's data, found through its local header, which must name the same
// entry. Checks that the data lies before the directory. `where` names the entry in errors.
std::uint64_t zip_entry_data_offset(const RandomAccessInput& file, const ZipDirectory& directory,
                                    const ZipEntry& entry, const std::string& where);

// Checks that no two entries share bytes: each one's local header and data,
// [local_header_offset, data_offsets[i] + compressed_size), lies apart from every other's.
// Overlapping entries are how a small zip bomb makes many entries inflate the same
// compressed bytes again and again. `data_offsets[i]` is entry i's zip_entry_data_offset().
void check_entries_apart(const ZipDirectory& directory, std::span<const std::uint64_t> data_offsets,
                         const std::string& where);

}  // namespace gausskl::io
