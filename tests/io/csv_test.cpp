#include "io/csv.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>

#include "io_test_util.hpp"

namespace gausskl::io {
namespace {

using test::Contains;
using test::error_message;

// The values of a table that has no header.
Array parse_csv(std::string_view text, const std::string& where) {
  return parse_csv_table(text, where).values;
}

Array read_csv(const std::string& path) {
  return read_csv_table(path).values;
}

const std::vector<double>& values_of(const Array& array) {
  return std::get<std::vector<double>>(array.data);
}

std::string parse_error(std::string_view text) {
  return error_message<std::invalid_argument>([&] { parse_csv(text, "in.csv"); });
}

// What `write` puts into a stdio stream.
std::string captured(const std::function<void(std::FILE*)>& write) {
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  write(out);
  std::fclose(out);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

TEST(Csv, ReadsFixture) {
  // make_fixtures.py writes grid((3, 4)), element k = k + 0.5, with assorted spacing, a
  // comment, a blank line and "\r\n" line endings.
  const Array array = read_csv(test::fixture("table.csv"));
  ASSERT_EQ(array.shape, (std::vector<std::int64_t>{3, 4}));
  ASSERT_EQ(array.dtype(), DType::float64);
  for (std::size_t k = 0; k < 12; ++k)
    EXPECT_EQ(values_of(array)[k], k + 0.5) << k;
}

TEST(Csv, AcceptsSpacingCommentsAndLineEndings) {
  const Array array =
      parse_csv("# header\n\n 1 ,\t2\r\n  # indented comment\n+3,-4e-1\n \t\n", "in.csv");
  EXPECT_EQ(array.shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(values_of(array), (std::vector<double>{1, 2, 3, -0.4}));
}

TEST(Csv, LastLineNeedsNoNewline) {
  const Array array = parse_csv("1.5", "in.csv");
  EXPECT_EQ(array.shape, (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(values_of(array), std::vector<double>{1.5});
}

TEST(Csv, ReadsNonFiniteValues) {
  // The library, not the reader, rejects these (with a message naming the array).
  const Array array = parse_csv("nan,inf,-inf,-Infinity", "in.csv");
  const auto& values = values_of(array);
  EXPECT_TRUE(std::isnan(values[0]));
  EXPECT_EQ(values[1], std::numeric_limits<double>::infinity());
  EXPECT_EQ(values[2], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(values[3], -std::numeric_limits<double>::infinity());
}

TEST(Csv, NamesLineAndColumnOfBadValues) {
  EXPECT_TRUE(Contains(parse_error("1,2\n3,4\n5,abc\n"),
                       "[read] in.csv: line 3, column 2: 'abc' is not a number"));
  EXPECT_TRUE(Contains(parse_error("# c\n1, 2x\n"), "line 2, column 2: '2x' is not a number"));
  EXPECT_TRUE(Contains(parse_error("1;2\n"), "line 1, column 1: '1;2' is not a number"));
  EXPECT_TRUE(Contains(parse_error("0x10\n"), "'0x10' is not a number"));
  EXPECT_TRUE(Contains(parse_error("+-1\n"), "'+-1' is not a number"));
  EXPECT_TRUE(Contains(parse_error("1,,2\n"), "line 1, column 2: empty value"));
  EXPECT_TRUE(Contains(parse_error("1,2,\n"), "line 1, column 3: empty value"));
  EXPECT_TRUE(Contains(parse_error("1e400\n"), "'1e400' is out of the float64 range"));
  const std::string long_token(1000, 'x');
  const std::string message = parse_error("1\n" + long_token);
  EXPECT_TRUE(Contains(message, "...' is not a number"));
  EXPECT_LT(message.size(), 200u);
}

TEST(Csv, RequiresTheSameNumberOfValuesOnEveryLine) {
  EXPECT_TRUE(Contains(parse_error("# x\n1,2,3,4\n5,6,7,8\n\n1,2,3\n"),
                       "[read] in.csv: line 5 has 3 values, line 2 has 4"));
  EXPECT_TRUE(Contains(parse_error("1,2\n3\n"), "line 2 has 1 value, line 1 has 2"));
}

TEST(Csv, EmptyInputHasNoValues) {
  for (const char* text : {"", "\n\n", "# only a comment\r\n", "  \t \n"}) {
    EXPECT_TRUE(Contains(parse_error(text), "[read] in.csv: no values")) << text;
  }
}

TEST(Csv, MissingFileIsInvalidArgument) {
  const std::string path = test::fixture("missing.csv");
  const std::string message = error_message<std::invalid_argument>([&] { read_csv(path); });
  EXPECT_TRUE(Contains(message, "[read] " + path + ": No such file or directory"));
}

TEST(Csv, ReadsTabAndSpaceSeparatedValues) {
  // np.savetxt's default is one space; delimiter='\t' gives tabs; aligned text has runs.
  for (const char* text :
       {"1 2 3\n4 5 6\n", "1\t2\t3\n4\t5\t6\n", "  1   2  3\n4 5    6\n", "1 \t2\t 3\n4\t5\t6\n"}) {
    const Array array = parse_csv(text, "in.csv");
    EXPECT_EQ(array.shape, (std::vector<std::int64_t>{2, 3})) << text;
    EXPECT_EQ(values_of(array), (std::vector<double>{1, 2, 3, 4, 5, 6})) << text;
  }
}

TEST(Csv, MixedSeparatorsAreAnError) {
  EXPECT_EQ(parse_error("1,2\n3 4\n"),
            "[read] in.csv: line 2, column 1: '3 4' holds a space, but line 1 separates values "
            "with commas (one separator per file)");
  EXPECT_EQ(parse_error("# c\n1 2\n3,4\n"),
            "[read] in.csv: line 3, column 1: '3,4' holds a comma, but line 2 separates values "
            "with spaces (one separator per file)");
  EXPECT_TRUE(Contains(parse_error("1\t2\n3\t4 5\n"),
                       "line 2, column 2: '4 5' holds a space, but line 1 separates values with "
                       "tabs"));
  EXPECT_TRUE(Contains(parse_error("1 2\n3\t4\n"), "line 2, column 1: '3?4' holds a tab"));
}

TEST(Csv, NamesNumbersThatAreNot) {
  EXPECT_EQ(parse_error("1,2\n1.5.3,4\n"),
            "[read] in.csv: line 2, column 1: '1.5.3' is not a number");
  EXPECT_EQ(parse_error("1 2\n3 1e5e\n"),
            "[read] in.csv: line 2, column 2: '1e5e' is not a number");
}

TEST(Csv, ReadsAHeaderRow) {
  const CsvTable table = parse_csv_table("# note\nmean_0, mean_1,std_0\n1,2,3\n4,5,6\n", "in.csv");
  EXPECT_EQ(table.header.names, (std::vector<std::string>{"mean_0", "mean_1", "std_0"}));
  EXPECT_EQ(table.header.line, 2);
  EXPECT_EQ(table.comment.line, 0);
  EXPECT_EQ(table.values.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(values_of(table.values), (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST(Csv, ARowOfNumbersNamedNanOrInfIsNoHeader) {
  const CsvTable table = parse_csv_table("nan inf -inf\n", "in.csv");
  EXPECT_TRUE(table.header.names.empty());
  EXPECT_EQ(table.values.shape, (std::vector<std::int64_t>{1, 3}));
}

TEST(Csv, AHeaderRowWithNumbersIsNotAHeader) {
  EXPECT_EQ(parse_error("mean_0,7\n1,2\n"),
            "[read] in.csv: line 1, column 1: 'mean_0' is not a number");
}

TEST(Csv, KeepsTheNamesOfSavetxtsHeaderLine) {
  // np.savetxt(header='mean_0 mean_1') writes "# mean_0 mean_1" right above the rows.
  CsvTable table = parse_csv_table("# first\n# mean_0 mean_1\n1 2\n3 4\n", "in.csv");
  EXPECT_TRUE(table.header.names.empty());
  EXPECT_EQ(table.comment.names, (std::vector<std::string>{"mean_0", "mean_1"}));
  EXPECT_EQ(table.comment.line, 2);
  table = parse_csv_table("# mean_0,mean_1\n\n1 2\n", "in.csv");  // not right above
  EXPECT_TRUE(table.comment.names.empty());
  table = parse_csv_table("# written by np.savetxt 1.26\n1 2\n", "in.csv");  // not names
  EXPECT_TRUE(table.comment.names.empty());
  table = parse_csv_table("# mean_0 mean_1 std_0\n1 2\n", "in.csv");  // one name too many
  EXPECT_TRUE(table.comment.names.empty());
  table = parse_csv_table("#\n1 2\n", "in.csv");
  EXPECT_TRUE(table.comment.names.empty());
}

TEST(Csv, SkipsPandasRowLabels) {
  // DataFrame.to_csv(): the index first, unnamed in the header; its labels need not be numbers.
  CsvTable table = parse_csv_table(",mean_0,std_0\n3,1,2\nx,4,5\n", "in.csv");
  EXPECT_TRUE(table.row_labels);
  EXPECT_EQ(table.header.names, (std::vector<std::string>{"mean_0", "std_0"}));
  EXPECT_EQ(table.header.first_column, 2);
  EXPECT_EQ(table.values.shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(values_of(table.values), (std::vector<double>{1, 2, 4, 5}));
  // A frame made from an array names its columns 0, 1, ...
  table = parse_csv_table(",0,1\n0,1,2\n", "in.csv");
  EXPECT_TRUE(table.row_labels);
  EXPECT_EQ(table.header.names, (std::vector<std::string>{"0", "1"}));
  // Other numbers, or an empty field elsewhere, are values (and an empty one an error).
  EXPECT_EQ(parse_error(",1,0\n0,1,2\n"), "[read] in.csv: line 1, column 1: empty value");
  EXPECT_EQ(parse_error("a,,b\n1,2,3\n"), "[read] in.csv: line 1, column 1: 'a' is not a number");
  EXPECT_EQ(parse_error(",mean_0\n0,1\n1,\n"), "[read] in.csv: line 3, column 2: empty value");
  // to_csv(sep="\t"): the header starts with a tab.
  table = parse_csv_table("\tmean_0\tstd_0\n0\t1\t2\n", "in.tsv");
  EXPECT_TRUE(table.row_labels);
  EXPECT_EQ(table.header.names, (std::vector<std::string>{"mean_0", "std_0"}));
  EXPECT_EQ(values_of(table.values), (std::vector<double>{1, 2}));
  table = parse_csv_table("\t1\t2\n3\t4\n", "in.tsv");  // a leading tab before values: padding
  EXPECT_FALSE(table.row_labels);
  EXPECT_EQ(values_of(table.values), (std::vector<double>{1, 2, 3, 4}));
  table = parse_csv_table("mean_0,std_0\n1,2\n", "in.csv");
  EXPECT_FALSE(table.row_labels);
  EXPECT_EQ(table.header.first_column, 1);
}

TEST(Csv, RowsMustMatchTheHeader) {
  EXPECT_EQ(parse_error("a,b,c\n1,2,3\n1,2\n"),
            "[read] in.csv: line 3 has 2 values, the header on line 1 names 3 columns");
  EXPECT_EQ(parse_error("a b\n"), "[read] in.csv: a header row and no values");
}

TEST(CsvWrite, WritesShortestRoundTripText) {
  const double values[] = {0.1, -2.5, 1e300, 5e-324, 1.0 / 3.0, 0.0};
  const std::string text = captured([&](std::FILE* out) { write_csv(out, 2, 3, values); });
  EXPECT_EQ(text, "0.1,-2.5,1e+300\n5e-324,0.3333333333333333,0\n");
  const Array array = parse_csv(text, "out.csv");
  const auto& back = values_of(array);
  for (std::size_t i = 0; i < 6; ++i)
    EXPECT_EQ(back[i], values[i]) << i;
}

TEST(CsvWrite, FloatsUseTheirOwnShortestText) {
  const float values[] = {0.1f, 16777216.0f, -0.5f};
  EXPECT_EQ(captured([&](std::FILE* out) { write_csv(out, 1, 3, values); }), "0.1,16777216,-0.5\n");
}

TEST(CsvWrite, NonFiniteValuesReadBack) {
  const double values[] = {std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()};
  const std::string text = captured([&](std::FILE* out) { write_csv(out, 1, 3, values); });
  EXPECT_EQ(text, "inf,-inf,nan\n");
  EXPECT_TRUE(std::isnan(values_of(parse_csv(text, "out.csv"))[2]));
}

TEST(CsvWrite, WritesIntegers) {
  const std::int64_t values[] = {1, -2, 3, std::numeric_limits<std::int64_t>::max()};
  EXPECT_EQ(captured([&](std::FILE* out) { write_csv(out, 2, 2, values); }),
            "1,-2\n3,9223372036854775807\n");
}

TEST(CsvWrite, RejectsInvalidSizes) {
  const double value = 0;
  const std::string message =
      error_message<std::invalid_argument>([&] { write_csv(stdout, -1, 2, &value); });
  EXPECT_TRUE(Contains(message, "[write] CSV of -1 x 2 values"));
}

TEST(CsvWrite, FullDiskIsRuntimeError) {
  std::FILE* full = std::fopen("/dev/full", "wb");
  ASSERT_NE(full, nullptr);
  const std::vector<double> values(1 << 16, 0.125);
  const std::string message =
      error_message<std::runtime_error>([&] { write_csv(full, 1 << 8, 1 << 8, values.data()); });
  std::fclose(full);
  EXPECT_TRUE(Contains(message, "[write] CSV output: No space left on device"));
}

}  // namespace
}  // namespace gausskl::io
