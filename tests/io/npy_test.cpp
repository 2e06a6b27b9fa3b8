#include "io/npy.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <variant>

#include "io_test_util.hpp"
#include "util/show.hpp"

namespace gausskl::io {
namespace {

using test::Contains;
using test::error_message;
using test::fixture;

// make_fixtures.py fills every float array with grid(shape): element k in C order is k + 0.5.
void expect_grid(const Array& array, const std::vector<std::int64_t>& shape, DType dtype) {
  ASSERT_EQ(array.shape, shape);
  ASSERT_EQ(array.dtype(), dtype);
  std::visit(
      [&](const auto& values) {
        ASSERT_EQ(static_cast<std::int64_t>(values.size()), array.size());
        for (std::size_t k = 0; k < values.size(); ++k) {
          EXPECT_EQ(values[k], static_cast<double>(k) + 0.5) << "element " << k;
        }
      },
      array.data);
}

// A .npy image with the given header dict (no padding) followed by `data_bytes` zero bytes.
std::vector<std::byte> npy_image(const std::string& dict, std::size_t data_bytes, int major = 1) {
  std::string image = "\x93NUMPY";
  image += static_cast<char>(major);
  image += '\0';
  const std::size_t size = dict.size();
  image += static_cast<char>(size & 0xFF);
  image += static_cast<char>((size >> 8) & 0xFF);
  if (major > 1) image += std::string(2, '\0');
  image += dict;
  image += std::string(data_bytes, '\0');
  return test::to_bytes(image);
}

Array parse(const std::vector<std::byte>& bytes) {
  return parse_npy(bytes, "mem.npy");
}

std::string parse_error(const std::vector<std::byte>& bytes) {
  return error_message<std::invalid_argument>([&] { parse(bytes); });
}

const std::string kF8Header = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }\n";

struct FixtureCase {
  const char* file;
  std::vector<std::int64_t> shape;
  DType dtype;
};

class NpyFixture : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(NpyFixture, ReadsValuesInCOrder) {
  const auto& param = GetParam();
  expect_grid(read_npy(fixture(param.file)), param.shape, param.dtype);
}

INSTANTIATE_TEST_SUITE_P(
    Files, NpyFixture,
    ::testing::Values(FixtureCase{"f8_c.npy", {3, 4}, DType::float64},
                      FixtureCase{"f4_c.npy", {3, 4}, DType::float32},
                      FixtureCase{"f8_big_endian.npy", {3, 4}, DType::float64},
                      FixtureCase{"f4_big_endian.npy", {3, 4}, DType::float32},
                      FixtureCase{"f8_fortran.npy", {3, 4}, DType::float64},
                      FixtureCase{"f4_big_endian_fortran_3d.npy", {2, 3, 4}, DType::float32},
                      FixtureCase{"f8_1d.npy", {5}, DType::float64},
                      FixtureCase{"f8_v2.npy", {3, 4}, DType::float64},
                      FixtureCase{"f8_v3.npy", {3, 4}, DType::float64}),
    [](const auto& test_case) {
      std::string name = test_case.param.file;
      return name.substr(0, name.find('.'));
    });

// The values' bytes are taken from the allowance before they are allocated; Fortran order
// needs room for its reordering copy too, and gives it back afterwards.
TEST_P(NpyFixture, TakesItsBytesFromTheAllowance) {
  const auto& param = GetParam();
  std::int64_t count = 1;
  for (const std::int64_t s : param.shape)
    count *= s;
  const std::int64_t bytes = count * (param.dtype == DType::float32 ? 4 : 8);
  const bool fortran = std::string(param.file).find("fortran") != std::string::npos;
  const std::int64_t needed = fortran ? 2 * bytes : bytes;
  MemoryAllowance exact(needed);
  expect_grid(read_npy(fixture(param.file), &exact), param.shape, param.dtype);
  EXPECT_EQ(exact.taken(), bytes);
  if (needed > 0) {
    MemoryAllowance short_by_one(needed - 1);
    const std::string message =
        error_message<std::runtime_error>([&] { read_npy(fixture(param.file), &short_by_one); });
    EXPECT_TRUE(Contains(message, "[read] "));
    EXPECT_TRUE(Contains(message, ": needs " + detail::show_bytes(needed) +
                                      ", but --memory-budget " + detail::show_bytes(needed - 1) +
                                      " is less"))
        << message;
    EXPECT_EQ(short_by_one.taken(), 0);
  }
}

TEST(Npy, ZeroDimensionalArrayHasOneElementAndNoShape) {
  const Array array = read_npy(fixture("f8_0d.npy"));
  EXPECT_TRUE(array.shape.empty());
  EXPECT_EQ(array.size(), 1);
  EXPECT_EQ(std::get<std::vector<double>>(array.data), std::vector<double>{2.5});
}

TEST(Npy, EmptyArrayKeepsItsShape) {
  const Array array = read_npy(fixture("f8_empty.npy"));
  EXPECT_EQ(array.shape, (std::vector<std::int64_t>{0, 3}));
  EXPECT_TRUE(std::get<std::vector<double>>(array.data).empty());
}

TEST(Npy, RejectsInt64NamingTheDtype) {
  const std::string path = fixture("i8.npy");
  const std::string message = error_message<std::invalid_argument>([&] { read_npy(path); });
  EXPECT_TRUE(Contains(message, "[read] " + path + ": dtype '<i8' is not supported"));
  EXPECT_TRUE(Contains(message, "only float32 and float64"));
}

TEST(Npy, RejectsOtherDtypes) {
  for (const std::string descr : {"'<f2'", "'|b1'", "'<c16'", "'<i4'", "'|u1'", "'f8'",
                                  "[('a', '<f4')]", "[('a', '<f8'), ('b', '<f8')]"}) {
    const std::string dict = "{'descr': " + descr + ", 'fortran_order': False, 'shape': (2,), }";
    const std::string message = parse_error(npy_image(dict, 16));
    EXPECT_TRUE(Contains(message, "dtype " + descr + " is not supported")) << descr;
  }
}

TEST(Npy, ParsesHeaderVariantsTolerantly) {
  for (const std::string dict : {
           "{'shape': (3, 4), 'fortran_order': False, 'descr': '<f8'}",
           "{\"descr\":\"<f8\",\"fortran_order\":False,\"shape\":(3,4)}",
           "{ 'descr' : '<f8' , 'fortran_order' : False , 'shape' : ( 3 , 4 , ) , }  \n",
           "{'descr': '=f8', 'fortran_order': False, 'shape': (3L, 4L), }\n",
       }) {
    const Array array = parse(npy_image(dict, 96));
    EXPECT_EQ(array.shape, (std::vector<std::int64_t>{3, 4})) << dict;
    EXPECT_EQ(array.dtype(), DType::float64) << dict;
  }
}

TEST(Npy, ParsesTupleShapes) {
  const auto shape_of = [](const std::string& tuple, std::size_t bytes) {
    return parse(
               npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': " + tuple + "}", bytes))
        .shape;
  };
  EXPECT_EQ(shape_of("()", 4), std::vector<std::int64_t>{});
  EXPECT_EQ(shape_of("(5,)", 20), std::vector<std::int64_t>{5});
  EXPECT_EQ(shape_of("(2, 3, 1)", 24), (std::vector<std::int64_t>{2, 3, 1}));
}

TEST(Npy, RejectsTruncatedData) {
  auto bytes = test::read_bytes(fixture("f8_c.npy"));
  bytes.erase(bytes.end() - 3, bytes.end());
  const std::string message = parse_error(bytes);
  EXPECT_TRUE(Contains(message,
                       "[read] mem.npy: expected 96 bytes of data for shape (3, 4) "
                       "float64, found 93"));
}

TEST(Npy, RejectsTrailingBytes) {
  auto bytes = test::read_bytes(fixture("f8_c.npy"));
  bytes.push_back(std::byte{0});
  EXPECT_TRUE(Contains(parse_error(bytes), "expected 96 bytes of data"));
  EXPECT_TRUE(Contains(parse_error(bytes), "found 97"));
}

TEST(Npy, RejectsTruncatedFileOnDisk) {
  test::TempDir dir;
  auto bytes = test::read_bytes(fixture("f4_c.npy"));
  bytes.pop_back();
  test::write_bytes(dir.file("short.npy"), bytes);
  const std::string message =
      error_message<std::invalid_argument>([&] { read_npy(dir.file("short.npy")); });
  EXPECT_TRUE(Contains(message, "[read] " + dir.file("short.npy") + ": expected 48 bytes"));
  EXPECT_TRUE(Contains(message, "found 47"));
}

TEST(Npy, RejectsBadMagic) {
  auto bytes = test::read_bytes(fixture("f8_c.npy"));
  bytes[1] = std::byte{'X'};
  EXPECT_TRUE(Contains(parse_error(bytes), "not a .npy file"));
  EXPECT_TRUE(
      Contains(parse_error(test::to_bytes("PK\x03\x04 not numpy at all")), "not a .npy file"));
}

TEST(Npy, RejectsFilesTooShortForThePrefix) {
  EXPECT_TRUE(Contains(parse_error({}), "too short for a .npy file (0 bytes)"));
  EXPECT_TRUE(Contains(parse_error(test::to_bytes("\x93NUMPY\x01")), "too short"));
  EXPECT_TRUE(Contains(parse_error(test::to_bytes(std::string("\x93NUMPY\x02\x00\x10", 9))),
                       "header is truncated"));
}

TEST(Npy, RejectsUnsupportedVersion) {
  auto bytes = npy_image(kF8Header, 96);
  bytes[6] = std::byte{4};
  EXPECT_TRUE(Contains(parse_error(bytes), "unsupported .npy format version 4.0"));
  bytes[6] = std::byte{1};
  bytes[7] = std::byte{1};
  EXPECT_TRUE(Contains(parse_error(bytes), "unsupported .npy format version 1.1"));
}

TEST(Npy, RejectsHeaderLongerThanTheFile) {
  auto bytes = npy_image(kF8Header, 0, 2);
  bytes[8] = std::byte{0xFF};
  bytes[9] = std::byte{0xFF};
  bytes[10] = std::byte{0xFF};
  bytes[11] = std::byte{0x7F};
  EXPECT_TRUE(Contains(parse_error(bytes), ".npy header claims 2147483647 bytes but only " +
                                               std::to_string(kF8Header.size()) + " follow"));
}

TEST(Npy, RejectsMalformedHeaders) {
  const std::pair<std::string, std::string> cases[] = {
      {"'descr': '<f8'", "it is not a dict"},
      {"{'descr': '<f8', ", "missing '}'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4)", "not terminated"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), } x", "unexpected text"},
      {"{descr: '<f8'}", "expected a quoted key"},
      {"{'descr' '<f8'}", "expected ':'"},
      {"{'descr: '<f8'}", "expected ':'"},
      {"{'descr': '<f8}", "not terminated"},
      {"{'descr': , 'shape': (3,)}", "missing value for key 'descr'"},
      {"{'descr': '<f8', 'shape': (3, 4)}", "missing key 'fortran_order'"},
      {"{'descr': '<f8', 'fortran_order': False}", "missing key 'shape'"},
      {"{'fortran_order': False, 'shape': (3, 4)}", "missing key 'descr'"},
      {"{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (3, 4)}",
       "key 'descr' appears twice"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), 'x': 1}", "unexpected key 'x'"},
      {"{'descr': '<f8', 'fortran_order': 0, 'shape': (3, 4)}", "fortran_order must be True"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (12)}", "shape must be a tuple"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': [3, 4]}", "shape must be a tuple"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (-1, 4)}", "shape must be a tuple"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,, 4)}", "shape must be a tuple"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (,)}", "shape must be a tuple"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3.0, 4)}", "shape must be a tuple"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4)))}", "not terminated"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,)}",
       "shape dimension 99999999999999999999 does not fit in int64"},
  };
  for (const auto& [dict, expected] : cases) {
    const std::string message = parse_error(npy_image(dict, 96));
    EXPECT_TRUE(Contains(message, "[read] mem.npy: ")) << dict;
    EXPECT_TRUE(Contains(message, expected)) << dict;
  }
}

TEST(Npy, RejectsShapesWhoseSizeOverflows) {
  for (const std::string shape : {"(4611686018427387904, 4)", "(4611686018427387904, 2)",
                                  "(3037000500, 3037000500)", "(2, 2, 4611686018427387904)"}) {
    const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + "}";
    const std::string message = parse_error(npy_image(dict, 8));
    EXPECT_TRUE(Contains(message, "is too large (its size overflows int64)")) << shape;
  }
}

TEST(Npy, ClaimedSizeLargerThanTheFileIsRejectedBeforeAllocating) {
  // 2^40 doubles: far more than could be allocated; the error must come from the size check.
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,)}";
  EXPECT_TRUE(Contains(parse_error(npy_image(dict, 8)),
                       "expected 8796093022208 bytes of data for shape (1099511627776,) float64, "
                       "found 8"));
}

TEST(Npy, MissingFileIsInvalidArgument) {
  const std::string path = fixture("does_not_exist.npy");
  const std::string message = error_message<std::invalid_argument>([&] { read_npy(path); });
  EXPECT_TRUE(Contains(message, "[read] " + path + ": No such file or directory"));
}

TEST(Npy, FolderIsInvalidArgument) {
  const std::string message =
      error_message<std::invalid_argument>([] { read_npy(GAUSSKL_TEST_DATA); });
  EXPECT_TRUE(Contains(message, "is a folder"));
}

// --- writing ---

struct Written {
  std::string header;  // up to and including '\n'
  std::vector<std::byte> bytes;
};

Written write_to_file(const test::TempDir& dir, DType dtype, const std::vector<std::int64_t>& shape,
                      const void* data) {
  const std::string path = dir.file("out.npy");
  std::FILE* out = std::fopen(path.c_str(), "wb");
  write_npy(out, dtype, shape, data);
  std::fclose(out);
  Written written{{}, test::read_bytes(path)};
  for (std::byte b : written.bytes) {
    written.header += static_cast<char>(b);
    if (b == std::byte{'\n'}) break;
  }
  return written;
}

TEST(NpyWrite, HeaderIsVersion1AlignedTo64Bytes) {
  test::TempDir dir;
  const double values[] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
  const auto written = write_to_file(dir, DType::float64, {2, 3}, values);
  EXPECT_EQ(written.header.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(written.header.size() % 64, 0u);
  EXPECT_TRUE(
      Contains(written.header, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }"));
  EXPECT_EQ(written.bytes.size(), written.header.size() + sizeof values);
  EXPECT_EQ(std::memcmp(written.bytes.data() + written.header.size(), values, sizeof values), 0);
}

TEST(NpyWrite, RoundTripsFloat32AndFloat64) {
  test::TempDir dir;
  const float f[] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f};
  write_to_file(dir, DType::float32, {5}, f);
  expect_grid(read_npy(dir.file("out.npy")), {5}, DType::float32);

  const double d[] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5};
  write_to_file(dir, DType::float64, {3, 2, 2}, d);
  expect_grid(read_npy(dir.file("out.npy")), {3, 2, 2}, DType::float64);

  const double scalar = 0.5;
  const auto written = write_to_file(dir, DType::float64, {}, &scalar);
  EXPECT_TRUE(Contains(written.header, "'shape': ()"));
  expect_grid(read_npy(dir.file("out.npy")), {}, DType::float64);
}

TEST(NpyWrite, WritesInt64) {
  test::TempDir dir;
  const std::int64_t values[] = {1, -2, 3};
  const auto written = write_to_file(dir, DType::int64, {3}, values);
  EXPECT_TRUE(Contains(written.header, "'descr': '<i8'"));
  EXPECT_TRUE(Contains(written.header, "'shape': (3,)"));
  ASSERT_EQ(written.bytes.size(), written.header.size() + sizeof values);
  EXPECT_EQ(std::memcmp(written.bytes.data() + written.header.size(), values, sizeof values), 0);
}

TEST(NpyWrite, RejectsNegativeAndOverflowingShapes) {
  const double value = 0;
  for (const std::vector<std::int64_t>& shape :
       {std::vector<std::int64_t>{-1}, std::vector<std::int64_t>{4611686018427387904, 4}}) {
    const std::string message = error_message<std::invalid_argument>(
        [&] { write_npy(stdout, DType::float64, shape, &value); });
    EXPECT_TRUE(Contains(message, "[write] shape"));
  }
}

TEST(NpyWrite, FullDiskIsRuntimeError) {
  std::FILE* full = std::fopen("/dev/full", "wb");
  ASSERT_NE(full, nullptr);
  const std::vector<double> values(1 << 17);  // larger than any stdio buffer
  const std::vector<std::int64_t> shape{1 << 17};
  const std::string message = error_message<std::runtime_error>(
      [&] { write_npy(full, DType::float64, shape, values.data()); });
  std::fclose(full);
  EXPECT_TRUE(Contains(message, "[write] .npy output: No space left on device"));
}

}  // namespace
}  // namespace gausskl::io
