#include "io/npz.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <variant>

#include "io/npy.hpp"
#include "io_test_util.hpp"

namespace gausskl::io {
namespace {

using test::Contains;
using test::error_message;
using test::fixture;

// make_fixtures.py writes mean = grid(...) (element k in C order is k + 0.5) and std = grid(...)
// + 0.5 (element k is k + 1); `offset` is the 0.5 or 1.
template <typename T>
void expect_values(const Array& array, const std::vector<std::int64_t>& shape, double offset) {
  ASSERT_EQ(array.shape, shape);
  const auto& values = std::get<std::vector<T>>(array.data);
  ASSERT_EQ(static_cast<std::int64_t>(values.size()), array.size());
  for (std::size_t k = 0; k < values.size(); ++k) {
    EXPECT_EQ(values[k], static_cast<T>(static_cast<double>(k) + offset)) << "element " << k;
  }
}

void put_le(std::vector<std::byte>& bytes, std::size_t offset, std::uint64_t value, int size) {
  for (int i = 0; i < size; ++i)
    bytes[offset + i] = static_cast<std::byte>(value >> (8 * i));
}

std::uint64_t get_le(const std::vector<std::byte>& bytes, std::size_t offset, int size) {
  std::uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) {
    value = (value << 8) | std::to_integer<std::uint64_t>(bytes[offset + i]);
  }
  return value;
}

// Offset of the classic end record (the archives patched here have no comment).
std::size_t end_record(const std::vector<std::byte>& zip) {
  return zip.size() - 22;
}

// Offsets of the central directory headers, in order.
std::vector<std::size_t> central_headers(const std::vector<std::byte>& zip) {
  const std::size_t end = end_record(zip);
  std::size_t offset = get_le(zip, end + 16, 4);
  std::vector<std::size_t> headers;
  for (std::uint64_t i = 0; i < get_le(zip, end + 10, 2); ++i) {
    headers.push_back(offset);
    offset += 46 + get_le(zip, offset + 28, 2) + get_le(zip, offset + 30, 2) +
              get_le(zip, offset + 32, 2);
  }
  return headers;
}

// Where an entry's data starts, from its central header's local header offset.
std::size_t data_start(const std::vector<std::byte>& zip, std::size_t central_header) {
  const std::size_t local = get_le(zip, central_header + 42, 4);
  return local + 30 + get_le(zip, local + 26, 2) + get_le(zip, local + 28, 2);
}

// Field offsets inside a central directory header.
constexpr std::size_t kFlags = 8, kMethod = 10, kCrc = 16, kCompressed = 20, kSize = 24,
                      kLocalOffset = 42;

std::vector<std::byte> npy_bytes(DType dtype, const std::vector<std::int64_t>& shape,
                                 const void* data) {
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  write_npy(out, dtype, shape, data);
  std::fclose(out);
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i)
    bytes[i] = static_cast<std::byte>(buffer[i]);
  std::free(buffer);
  return bytes;
}

std::vector<std::byte> deflate_raw(const std::vector<std::byte>& data) {
  z_stream stream{};
  deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::vector<std::byte> out(deflateBound(&stream, data.size()));
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

std::uint32_t crc_of(const std::vector<std::byte>& data) {
  return static_cast<std::uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

struct RawEntry {
  std::string name;
  std::uint16_t method;
  std::vector<std::byte> payload;  // as stored in the archive
  std::uint64_t declared_size;     // the uncompressed size the directory claims
  std::uint32_t crc;
};

// A plain (non-Zip64) archive holding exactly what it is told, right or wrong.
std::vector<std::byte> make_zip(const std::vector<RawEntry>& entries,
                                const std::string& comment = "") {
  std::vector<std::byte> zip, directory;
  const auto append = [](std::vector<std::byte>& out, std::uint64_t value, int size) {
    for (int i = 0; i < size; ++i)
      out.push_back(static_cast<std::byte>(value >> (8 * i)));
  };
  const auto append_text = [](std::vector<std::byte>& out, const std::string& text) {
    for (char c : text)
      out.push_back(static_cast<std::byte>(c));
  };
  for (const auto& e : entries) {
    const std::size_t offset = zip.size();
    append(zip, 0x04034b50, 4);
    append(zip, 20, 2);
    append(zip, 0, 2);
    append(zip, e.method, 2);
    append(zip, 0, 4);
    append(zip, e.crc, 4);
    append(zip, e.payload.size(), 4);
    append(zip, e.declared_size, 4);
    append(zip, e.name.size(), 2);
    append(zip, 0, 2);
    append_text(zip, e.name);
    zip.insert(zip.end(), e.payload.begin(), e.payload.end());

    append(directory, 0x02014b50, 4);
    append(directory, 20, 2);
    append(directory, 20, 2);
    append(directory, 0, 2);
    append(directory, e.method, 2);
    append(directory, 0, 4);
    append(directory, e.crc, 4);
    append(directory, e.payload.size(), 4);
    append(directory, e.declared_size, 4);
    append(directory, e.name.size(), 2);
    append(directory, 0, 2 + 2 + 2 + 2);  // extra and comment length, disk, internal attributes
    append(directory, 0, 4);              // external attributes
    append(directory, offset, 4);
    append_text(directory, e.name);
  }
  const std::size_t directory_offset = zip.size();
  zip.insert(zip.end(), directory.begin(), directory.end());
  append(zip, 0x06054b50, 4);
  append(zip, 0, 4);
  append(zip, entries.size(), 2);
  append(zip, entries.size(), 2);
  append(zip, directory.size(), 4);
  append(zip, directory_offset, 4);
  append(zip, comment.size(), 2);
  append_text(zip, comment);
  return zip;
}

class NpzTest : public ::testing::Test {
 protected:
  // Writes `bytes` to a file and returns read_npz's invalid_argument message for it.
  std::string read_error(const std::vector<std::byte>& bytes) {
    test::write_bytes(path_, bytes);
    return error_message<std::invalid_argument>([&] { read_npz(path_); });
  }
  std::vector<std::pair<std::string, Array>> read(const std::vector<std::byte>& bytes) {
    test::write_bytes(path_, bytes);
    return read_npz(path_);
  }

  test::TempDir dir_;
  std::string path_ = dir_.file("test.npz");
  const std::vector<double> grid_{0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
  const std::vector<std::byte> npy_ = npy_bytes(DType::float64, {2, 3}, grid_.data());
};

TEST_F(NpzTest, ReadsSavez) {
  const auto arrays = read_npz(fixture("savez.npz"));
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays[0].first, "mean");
  expect_values<double>(arrays[0].second, {3, 4}, 0.5);
  EXPECT_EQ(arrays[1].first, "std");
  expect_values<float>(arrays[1].second, {3, 4}, 1.0);
}

TEST_F(NpzTest, ReadsSavezCompressed) {
  const auto arrays = read_npz(fixture("savez_compressed.npz"));
  ASSERT_EQ(arrays.size(), 3u);
  EXPECT_EQ(arrays[0].first, "mean");
  expect_values<double>(arrays[0].second, {3, 4}, 0.5);
  EXPECT_EQ(arrays[1].first, "std");
  expect_values<float>(arrays[1].second, {3, 4}, 1.0);
  EXPECT_EQ(arrays[2].first, "big");
  expect_values<double>(arrays[2].second, {64, 32}, 0.5);
}

TEST_F(NpzTest, AllowsAnArchiveComment) {
  const auto zip = make_zip({{"a.npy", 0, npy_, npy_.size(), crc_of(npy_)}}, "made by hand");
  const auto arrays = read(zip);
  ASSERT_EQ(arrays.size(), 1u);
  EXPECT_EQ(arrays[0].first, "a");
  expect_values<double>(arrays[0].second, {2, 3}, 0.5);
}

TEST_F(NpzTest, EmptyArchiveHasNoEntries) {
  EXPECT_TRUE(read(make_zip({})).empty());
}

TEST_F(NpzTest, MissingFileIsInvalidArgument) {
  const std::string message =
      error_message<std::invalid_argument>([&] { read_npz(dir_.file("nope.npz")); });
  EXPECT_TRUE(Contains(message, "[read] " + dir_.file("nope.npz") + ": No such file"));
}

TEST_F(NpzTest, RejectsEntriesThatAreNotNpy) {
  const std::string path = fixture("not_npy.npz");
  const std::string message = error_message<std::invalid_argument>([&] { read_npz(path); });
  EXPECT_TRUE(Contains(message, "[read] " + path + ": entry 'notes.txt': not a .npy array"));
}

TEST_F(NpzTest, MessagesShowNamesWithoutControlCharacters) {
  // A name could otherwise send escape sequences to the user's terminal.
  const auto zip = make_zip({{"x\x1b[2J.txt", 0, npy_, npy_.size(), crc_of(npy_)}});
  EXPECT_TRUE(Contains(read_error(zip), "entry 'x?[2J.txt': not a .npy array"));
}

TEST_F(NpzTest, RejectsDuplicateNames) {
  const std::string path = fixture("duplicate.npz");
  const std::string message = error_message<std::invalid_argument>([&] { read_npz(path); });
  EXPECT_TRUE(Contains(message, "[read] " + path + ": entry 'mean.npy': the name appears twice"));
}

TEST_F(NpzTest, EntryErrorsNameTheEntry) {
  const std::int64_t ints[] = {1, 2, 3};
  const auto npy = npy_bytes(DType::int64, {3}, ints);
  const std::string message =
      read_error(make_zip({{"indices.npy", 0, npy, npy.size(), crc_of(npy)}}));
  EXPECT_TRUE(
      Contains(message, "[read] " + path_ + ": entry 'indices.npy': dtype '<i8' is not supported"));
}

TEST_F(NpzTest, RejectsZipBombClaimBeforeAllocating) {
  auto zip = test::read_bytes(fixture("savez_compressed.npz"));
  const auto headers = central_headers(zip);
  put_le(zip, headers[0] + kSize, 0xFFFFFFF0, 4);
  const std::string message = read_error(zip);
  EXPECT_TRUE(Contains(message,
                       "entry 'mean.npy': declares 4294967280 bytes from 106 compressed "
                       "bytes, more than deflate can produce"));
}

TEST_F(NpzTest, DeflateSizeClaimIsProvenBeforeTheImageIsRead) {
  // The entry claims 4 KiB (within what deflate could produce from its compressed bytes) but
  // holds 100 bytes that are not even a .npy image. Inflating to check the claim comes first,
  // so the lie is what is reported, before any header is parsed or memory allocated for it.
  std::vector<std::byte> garbage(100, std::byte{'x'});
  const auto zip = make_zip({{"a.npy", 8, deflate_raw(garbage), 4096, crc_of(garbage)}});
  EXPECT_TRUE(Contains(read_error(zip),
                       "entry 'a.npy': deflate data ends after 100 of the declared 4096 bytes"));
}

TEST_F(NpzTest, ProvingTheSizeChecksTheCrcToo) {
  const auto packed = deflate_raw(npy_);
  ASSERT_LT(packed.size(), npy_.size());
  const auto zip = make_zip({{"a.npy", 8, packed, npy_.size(), crc_of(npy_) ^ 1}});
  EXPECT_TRUE(Contains(read_error(zip), "entry 'a.npy': CRC-32 mismatch"));
}

TEST_F(NpzTest, RejectsOverlappingEntries) {
  // Entries sharing compressed bytes let a small archive inflate them over and over (the
  // overlapping zip bomb). Make mean.npy's data run one byte into std.npy's local header.
  auto zip = test::read_bytes(fixture("savez.npz"));
  const auto headers = central_headers(zip);
  const std::size_t std_local = get_le(zip, headers[1] + kLocalOffset, 4);
  const std::size_t mean_size = std_local - data_start(zip, headers[0]) + 1;
  put_le(zip, headers[0] + kCompressed, mean_size, 4);
  put_le(zip, headers[0] + kSize, mean_size, 4);
  EXPECT_TRUE(Contains(read_error(zip), "[read] " + path_ +
                                            ": entries 'mean.npy' and 'std.npy' overlap (a zip "
                                            "bomb or a damaged archive)"));
}

TEST_F(NpzTest, ParsesArchivesInMemoryAsFromFiles) {
  for (const char* name : {"savez.npz", "savez_compressed.npz"}) {
    const auto bytes = test::read_bytes(fixture(name));
    const auto from_memory = parse_npz(bytes, "memory.npz");
    const auto from_file = read_npz(fixture(name));
    ASSERT_EQ(from_memory.size(), from_file.size()) << name;
    for (std::size_t i = 0; i < from_file.size(); ++i) {
      EXPECT_EQ(from_memory[i].first, from_file[i].first);
      EXPECT_EQ(from_memory[i].second.shape, from_file[i].second.shape);
      EXPECT_EQ(from_memory[i].second.data, from_file[i].second.data);
    }
  }
  auto zip = test::read_bytes(fixture("savez.npz"));
  zip.pop_back();
  EXPECT_TRUE(Contains(error_message<std::invalid_argument>([&] { parse_npz(zip, "memory.npz"); }),
                       "[read] memory.npz: not a zip archive"));
}

TEST_F(NpzTest, RejectsBadCrc) {
  for (const char* name : {"savez.npz", "savez_compressed.npz"}) {
    auto zip = test::read_bytes(fixture(name));
    const auto headers = central_headers(zip);
    put_le(zip, headers[1] + kCrc, get_le(zip, headers[1] + kCrc, 4) ^ 1, 4);
    const std::string message = read_error(zip);
    EXPECT_TRUE(Contains(message, "entry 'std.npy': CRC-32 mismatch")) << name;
  }
}

TEST_F(NpzTest, RejectsCorruptedDeflateStream) {
  auto zip = test::read_bytes(fixture("savez_compressed.npz"));
  // Block type 3 (bits 1-2 of the first byte) is reserved: zlib reports an invalid block.
  zip[data_start(zip, central_headers(zip)[0])] = std::byte{0xFF};
  EXPECT_TRUE(Contains(read_error(zip),
                       "entry 'mean.npy': corrupted deflate data (zlib: invalid block type)"));
}

TEST_F(NpzTest, RejectsTruncatedDeflateStream) {
  auto packed = deflate_raw(npy_);
  packed.erase(packed.end() - 4, packed.end());
  const auto zip = make_zip({{"a.npy", 8, packed, npy_.size(), crc_of(npy_)}});
  EXPECT_TRUE(Contains(read_error(zip), "entry 'a.npy': deflate data is truncated"));
}

TEST_F(NpzTest, RejectsDeflateStreamThatEndsEarly) {
  // The stream is complete but holds 8 bytes less than the directory (and .npy header) claim.
  const std::vector<std::byte> short_image(npy_.begin(), npy_.end() - 8);
  const auto zip = make_zip({{"a.npy", 8, deflate_raw(short_image), npy_.size(), crc_of(npy_)}});
  EXPECT_TRUE(Contains(read_error(zip), "entry 'a.npy': deflate data ends after " +
                                            std::to_string(npy_.size() - 8) + " of the declared " +
                                            std::to_string(npy_.size()) + " bytes"));
}

TEST_F(NpzTest, RejectsDeflateStreamWithExtraOutput) {
  auto long_image = npy_;
  long_image.resize(long_image.size() + 8);
  const auto zip = make_zip({{"a.npy", 8, deflate_raw(long_image), npy_.size(), crc_of(npy_)}});
  EXPECT_TRUE(
      Contains(read_error(zip), "entry 'a.npy': deflate data holds more than the declared " +
                                    std::to_string(npy_.size()) + " bytes"));
}

TEST_F(NpzTest, AcceptsDeflateBuiltHere) {
  const auto zip = make_zip({{"a.npy", 8, deflate_raw(npy_), npy_.size(), crc_of(npy_)}});
  const auto arrays = read(zip);
  ASSERT_EQ(arrays.size(), 1u);
  expect_values<double>(arrays[0].second, {2, 3}, 0.5);
}

TEST_F(NpzTest, RejectsTruncatedArchive) {
  auto zip = test::read_bytes(fixture("savez.npz"));
  for (std::size_t keep : {zip.size() / 2, zip.size() - 1, std::size_t{10}, std::size_t{0}}) {
    const std::vector<std::byte> cut(zip.begin(), zip.begin() + static_cast<std::ptrdiff_t>(keep));
    EXPECT_TRUE(Contains(read_error(cut), "not a zip archive (no end of central directory record"))
        << keep;
  }
}

TEST_F(NpzTest, RejectsMissingEndRecord) {
  auto zip = test::read_bytes(fixture("savez.npz"));
  put_le(zip, end_record(zip), 0x12345678, 4);
  EXPECT_TRUE(Contains(read_error(zip), "[read] " + path_ + ": not a zip archive"));
  EXPECT_TRUE(Contains(read_error(test::read_bytes(fixture("f8_c.npy"))), "not a zip archive"));
}

TEST_F(NpzTest, RejectsEncryptedEntries) {
  auto zip = test::read_bytes(fixture("savez.npz"));
  put_le(zip, central_headers(zip)[0] + kFlags, 1, 2);
  EXPECT_TRUE(Contains(read_error(zip), "entry 'mean.npy': encrypted entries are not supported"));
}

TEST_F(NpzTest, RejectsOtherCompressionMethods) {
  auto zip = test::read_bytes(fixture("savez_compressed.npz"));
  put_le(zip, central_headers(zip)[1] + kMethod, 12, 2);  // bzip2
  EXPECT_TRUE(Contains(read_error(zip), "entry 'std.npy': compression method 12 is not supported"));
}

TEST_F(NpzTest, RejectsStoredEntryWithDisagreeingSizes) {
  auto zip = test::read_bytes(fixture("savez.npz"));
  put_le(zip, central_headers(zip)[0] + kSize, 225, 4);
  EXPECT_TRUE(
      Contains(read_error(zip), "entry 'mean.npy': stored entry has 224 bytes but declares 225"));
}

TEST_F(NpzTest, RejectsEntryDataPastTheDirectory) {
  auto zip = test::read_bytes(fixture("savez.npz"));
  const auto header = central_headers(zip)[1];
  put_le(zip, header + kCompressed, 0x7FFFFFFF, 4);
  put_le(zip, header + kSize, 0x7FFFFFFF, 4);
  EXPECT_TRUE(Contains(read_error(zip),
                       "entry 'std.npy': entry data (2147483647 bytes) lies outside the archive"));
}

TEST_F(NpzTest, RejectsBadLocalHeaders) {
  auto zip = test::read_bytes(fixture("savez.npz"));
  put_le(zip, central_headers(zip)[1] + kLocalOffset, 5, 4);
  EXPECT_TRUE(Contains(read_error(zip), "entry 'std.npy': bad local header signature"));

  zip = test::read_bytes(fixture("savez.npz"));
  put_le(zip, central_headers(zip)[1] + kLocalOffset, 0x7FFFFFF0, 4);
  EXPECT_TRUE(Contains(read_error(zip), "entry 'std.npy': local header lies outside the archive"));

  zip = test::read_bytes(fixture("savez.npz"));
  zip[30] = std::byte{'n'};  // the first local header's name: "mean.npy" -> "nean.npy"
  EXPECT_TRUE(Contains(read_error(zip), "entry 'mean.npy': local header names it 'nean.npy'"));
}

TEST_F(NpzTest, RejectsSaturatedSizeWithoutZip64Field) {
  auto zip = test::read_bytes(fixture("savez.npz"));
  put_le(zip, central_headers(zip)[0] + kCompressed, 0xFFFFFFFF, 4);
  EXPECT_TRUE(Contains(read_error(zip), "entry 'mean.npy': Zip64 extra field is missing"));
}

TEST_F(NpzTest, RejectsInconsistentDirectory) {
  auto zip = test::read_bytes(fixture("savez.npz"));
  put_le(zip, end_record(zip) + 8, 1000, 2);
  put_le(zip, end_record(zip) + 10, 1000, 2);
  EXPECT_TRUE(Contains(read_error(zip), "central directory is too small for 1000 entries"));

  zip = test::read_bytes(fixture("savez.npz"));
  put_le(zip, end_record(zip) + 16, zip.size(), 4);
  EXPECT_TRUE(Contains(read_error(zip), "central directory lies outside the archive"));

  zip = test::read_bytes(fixture("savez.npz"));
  put_le(zip, central_headers(zip)[1], 0, 4);
  EXPECT_TRUE(Contains(read_error(zip), "bad central directory entry signature"));

  zip = test::read_bytes(fixture("savez.npz"));
  put_le(zip, central_headers(zip)[1] + 28, 0x7FFF, 2);  // a name running past the directory
  EXPECT_TRUE(Contains(read_error(zip), "central directory is truncated"));

  zip = test::read_bytes(fixture("savez.npz"));
  put_le(zip, end_record(zip) + 4, 1, 2);
  EXPECT_TRUE(Contains(read_error(zip), "multi-disk archives are not supported"));
}

// --- writing ---

std::vector<std::byte> write_to_file(const std::string& path, std::span<const NpzEntry> entries) {
  std::FILE* out = std::fopen(path.c_str(), "wb");
  write_npz(out, entries);
  std::fclose(out);
  return test::read_bytes(path);
}

// --- selecting entries ---

TEST_F(NpzTest, SelectedEntriesOnlyAreRead) {
  // int64 labels, which read_npz refuses, beside the float arrays: skipped unread.
  const std::vector<std::int64_t> labels{7, 8};
  const std::vector<NpzEntry> entries{
      {"labels", DType::int64, {2}, labels.data()},
      {"mean", DType::float64, {2, 3}, grid_.data()},
      {"weights", DType::float64, {2}, grid_.data()},
  };
  write_to_file(path_, entries);
  EXPECT_TRUE(Contains(error_message<std::invalid_argument>([&] { read_npz(path_); }), "<i8"));
  MemoryAllowance allowance(1000);
  const NpzContents contents = read_npz(
      path_, [](std::string_view name) { return name == "mean"; }, &allowance);
  ASSERT_EQ(contents.arrays.size(), 1u);
  EXPECT_EQ(contents.arrays[0].first, "mean");
  expect_values<double>(contents.arrays[0].second, {2, 3}, 0.5);
  EXPECT_EQ(contents.skipped, (std::vector<std::string>{"labels", "weights"}));
  EXPECT_EQ(allowance.taken(), 6 * 8);  // the skipped entries took nothing
}

TEST_F(NpzTest, SkippedEntriesMustStillBeWellPlaced) {
  // A damaged archive is an error even when the damaged entry is not wanted.
  std::vector<std::byte> zip = test::read_bytes(fixture("savez.npz"));
  put_le(zip, central_headers(zip)[1] + 42, 1u << 30, 4);  // std's local header offset
  const std::string message = error_message<std::invalid_argument>(
      [&] { parse_npz(zip, "in.npz", [](std::string_view name) { return name == "mean"; }); });
  EXPECT_TRUE(Contains(message, "[read] in.npz")) << message;
}

TEST_F(NpzTest, WriteRoundTrips) {
  const std::vector<float> f{1, 2, 3, 4, 5};
  const double scalar = 0.5;
  const std::vector<NpzEntry> entries{
      {"mean", DType::float64, {2, 3}, grid_.data()},
      {"std", DType::float32, {5}, f.data()},
      {"scalar", DType::float64, {}, &scalar},
      {"empty", DType::float32, {0, 4}, nullptr},
  };
  write_to_file(path_, entries);
  const auto arrays = read_npz(path_);
  ASSERT_EQ(arrays.size(), 4u);
  EXPECT_EQ(arrays[0].first, "mean");
  expect_values<double>(arrays[0].second, {2, 3}, 0.5);
  EXPECT_EQ(arrays[1].first, "std");
  expect_values<float>(arrays[1].second, {5}, 1.0);
  EXPECT_EQ(arrays[2].first, "scalar");
  expect_values<double>(arrays[2].second, {}, 0.5);
  EXPECT_EQ(arrays[3].first, "empty");
  expect_values<float>(arrays[3].second, {0, 4}, 0);
}

TEST_F(NpzTest, WriteUsesZip64RecordsAndStoredEntries) {
  const std::vector<NpzEntry> entries{{"mean", DType::float64, {2, 3}, grid_.data()}};
  const auto zip = write_to_file(path_, entries);
  // Local header: stored, sizes saturated and given in the Zip64 extra field.
  EXPECT_EQ(get_le(zip, 0, 4), 0x04034b50u);
  EXPECT_EQ(get_le(zip, 8, 2), 0u);
  EXPECT_EQ(get_le(zip, 18, 4), 0xFFFFFFFFu);
  EXPECT_EQ(get_le(zip, 30 + 8, 2), 1u);  // after "mean.npy": the Zip64 extra field id
  EXPECT_EQ(get_le(zip, 30 + 8 + 4, 8), npy_.size());
  // The .npy image follows and matches what write_npy makes.
  const std::vector<std::byte> image(zip.begin() + 58,
                                     zip.begin() + 58 + static_cast<std::ptrdiff_t>(npy_.size()));
  EXPECT_EQ(image, npy_);
  EXPECT_EQ(get_le(zip, end_record(zip) - 20, 4), 0x07064b50u);       // Zip64 locator
  EXPECT_EQ(get_le(zip, end_record(zip) - 20 - 56, 4), 0x06064b50u);  // Zip64 end record
}

TEST_F(NpzTest, RejectsZip64EndRecordOutsideTheArchive) {
  const std::vector<NpzEntry> entries{{"mean", DType::float64, {2, 3}, grid_.data()}};
  auto zip = write_to_file(path_, entries);
  put_le(zip, end_record(zip) - 20 + 8, zip.size(), 8);
  EXPECT_TRUE(Contains(read_error(zip), "Zip64 end record lies outside the archive"));
}

TEST_F(NpzTest, WriteInt64IsReadableAsAZip) {
  const std::int64_t indices[] = {3, 1, 2};
  const std::vector<NpzEntry> entries{{"indices", DType::int64, {3}, indices}};
  write_to_file(path_, entries);
  // The archive is well formed; only the dtype stops read_npz, which reads floats only.
  const std::string message = error_message<std::invalid_argument>([&] { read_npz(path_); });
  EXPECT_TRUE(Contains(message, "entry 'indices.npy': dtype '<i8' is not supported"));
}

TEST_F(NpzTest, WriteRejectsDuplicateNames) {
  const std::vector<NpzEntry> entries{{"a", DType::float64, {1}, grid_.data()},
                                      {"a", DType::float64, {1}, grid_.data()}};
  const std::string message =
      error_message<std::invalid_argument>([&] { write_npz(stdout, entries); });
  EXPECT_TRUE(Contains(message, "[write] .npz entry name 'a' appears twice"));
}

TEST_F(NpzTest, WriteToFullDiskIsRuntimeError) {
  std::FILE* full = std::fopen("/dev/full", "wb");
  ASSERT_NE(full, nullptr);
  const std::vector<double> values(1 << 17);
  const std::vector<NpzEntry> entries{{"big", DType::float64, {1 << 17}, values.data()}};
  const std::string message = error_message<std::runtime_error>([&] { write_npz(full, entries); });
  std::fclose(full);
  EXPECT_TRUE(Contains(message, "[write] .npz output: No space left on device"));
}

}  // namespace
}  // namespace gausskl::io
