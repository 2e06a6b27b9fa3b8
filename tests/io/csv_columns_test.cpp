#include "io/csv_columns.hpp"

#include <gtest/gtest.h>

#include "io_test_util.hpp"

namespace gausskl::io {
namespace {

using test::Contains;
using test::error_message;

// Names standing for themselves: mean, std, scale_tril; "mu" stands for mean.
std::optional<std::string> resolve(std::string_view written) {
  if (written == "mu") return "mean";
  if (written == "mean" || written == "std" || written == "scale_tril") return std::string(written);
  return std::nullopt;
}

std::vector<std::pair<std::string, Array>> arrays_of(std::string_view text,
                                                     MemoryAllowance* allowance = nullptr) {
  CsvTable table = parse_csv_table(text, "in.csv", allowance);
  const CsvNames names = table.header.line ? table.header : table.comment;
  return csv_arrays(std::move(table), names, "in.csv", resolve, "is unknown", allowance);
}

std::string error_of(std::string_view text) {
  return error_message<std::invalid_argument>([&] { arrays_of(text); });
}

const std::vector<double>& values_of(const Array& array) {
  return std::get<std::vector<double>>(array.data);
}

TEST(CsvColumns, GroupsIndexedColumnsIntoArrays) {
  const auto arrays = arrays_of("mean_0,mean_1,std_0,std_1\n1,2,3,4\n5,6,7,8\n");
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays[0].first, "mean");
  EXPECT_EQ(arrays[0].second.shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(values_of(arrays[0].second), (std::vector<double>{1, 2, 5, 6}));
  EXPECT_EQ(arrays[1].first, "std");
  EXPECT_EQ(values_of(arrays[1].second), (std::vector<double>{3, 4, 7, 8}));
}

TEST(CsvColumns, ColumnsInAnyOrder) {
  const auto arrays = arrays_of("std_0 mean_1 mean_0\n3 2 1\n");
  EXPECT_EQ(arrays[0].first, "std");
  EXPECT_EQ(arrays[1].first, "mean");
  EXPECT_EQ(values_of(arrays[1].second), (std::vector<double>{1, 2}));
}

TEST(CsvColumns, PlainNamesRepeatedAreElementsInOrder) {
  const auto arrays = arrays_of("mean\tmean\tstd\n1\t2\t3\n");
  EXPECT_EQ(arrays[0].second.shape, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(values_of(arrays[0].second), (std::vector<double>{1, 2}));
  EXPECT_EQ(arrays[1].second.shape, (std::vector<std::int64_t>{1, 1}));
}

TEST(CsvColumns, TwoIndicesMakeMatrices) {
  const auto arrays =
      arrays_of("mean_0,scale_tril_1_1,scale_tril_0_0,scale_tril_0_1,scale_tril_1_0\n0,4,1,2,3\n");
  EXPECT_EQ(arrays[1].first, "scale_tril");
  EXPECT_EQ(arrays[1].second.shape, (std::vector<std::int64_t>{1, 2, 2}));
  EXPECT_EQ(values_of(arrays[1].second), (std::vector<double>{1, 2, 3, 4}));
}

TEST(CsvColumns, ResolvesOtherNames) {
  const auto arrays = arrays_of("# mu_0 mu_1\n1 2\n");
  EXPECT_EQ(arrays[0].first, "mean");
  EXPECT_EQ(values_of(arrays[0].second), (std::vector<double>{1, 2}));
}

TEST(CsvColumns, CopiesGiveTheTableBack) {
  // The reader reserves one double per run of characters (4 here, the names included); one
  // array in element order keeps that block, a reordered copy takes its own and frees it.
  MemoryAllowance in_place(1 << 20);
  arrays_of("mean_0,mean_1\n1,2\n", &in_place);
  EXPECT_EQ(in_place.taken(), 4 * 8);
  MemoryAllowance copied(1 << 20);
  arrays_of("mean_1,mean_0\n1,2\n", &copied);
  EXPECT_EQ(copied.taken(), 2 * 8);
}

TEST(CsvColumns, SkipsColumnsNamingNoArrayWhenAsked) {
  CsvTable table =
      parse_csv_table(",item_id,mean_0,mean_1,label\n0,7,1,2,8\n1,9,3,4,6\n", "in.csv");
  const CsvNames names = table.header;
  std::vector<std::string> skipped;
  const auto arrays =
      csv_arrays(std::move(table), names, "in.csv", resolve, "is unknown", nullptr, &skipped);
  EXPECT_EQ(skipped, (std::vector<std::string>{"item_id", "label"}));
  ASSERT_EQ(arrays.size(), 1u);
  EXPECT_EQ(arrays[0].second.shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(values_of(arrays[0].second), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(array_of_column("mu_1", resolve), "mean");
  EXPECT_EQ(array_of_column("scale_tril_0_1", resolve), "scale_tril");
  EXPECT_EQ(array_of_column("item_id", resolve), std::nullopt);
}

TEST(CsvColumns, ErrorsCountPandasRowLabelsAsColumnOne) {
  EXPECT_EQ(error_of(",mean_0,weights_0\n0,1,2\n"),
            "[read] in.csv: line 1, column 3: 'weights_0' is unknown");
  EXPECT_EQ(error_of(",mean_0,mean_0\n0,1,2\n"),
            "[read] in.csv: line 1, column 3: 'mean_0' appears twice (also column 2)");
}

TEST(CsvColumns, Errors) {
  EXPECT_EQ(error_of("mean_0,weights_0\n1,2\n"),
            "[read] in.csv: line 1, column 2: 'weights_0' is unknown");
  EXPECT_EQ(error_of("mean_0,mean_2\n1,2\n"),
            "[read] in.csv: line 1: no column 'mean_1' (mean has 2 of 3 elements)");
  EXPECT_EQ(error_of("mean_0,mean_0\n1,2\n"),
            "[read] in.csv: line 1, column 2: 'mean_0' appears twice (also column 1)");
  EXPECT_EQ(error_of("mean_0,mean\n1,2\n"),
            "[read] in.csv: line 1, column 2: 'mean' and column 1 ('mean_0') name the same array "
            "in two ways; use one");
  EXPECT_EQ(error_of("scale_tril_0_0,scale_tril_1_1\n1,2\n"),
            "[read] in.csv: line 1: no column 'scale_tril_0_1' (scale_tril has 2 of 4 elements)");
  const auto mismatch = error_message<std::invalid_argument>([] {
    csv_arrays(parse_csv_table("1 2\n", "in.csv"), CsvNames{{"mean_0"}, 1}, "in.csv", resolve,
               "is unknown");
  });
  EXPECT_EQ(mismatch, "[read] in.csv: line 1 names 1 columns, the rows have 2");
  // A huge index is no index at all, so no huge allocation either.
  EXPECT_EQ(error_of("mean_0,mean_99999999999\n1,2\n"),
            "[read] in.csv: line 1, column 2: 'mean_99999999999' is unknown");
  EXPECT_TRUE(Contains(error_of("mean_0,mean_999999999\n1,2\n"), "no column 'mean_1'"));
}

}  // namespace
}  // namespace gausskl::io
