// The CSV reader on arbitrary text, then the grouping of named columns into arrays: each must
// accept or throw std::invalid_argument, never crash or leak; what the reader accepts is a full
// [rows, columns] table, and the arrays hold every value of it exactly once.
#include <stdexcept>
#include <string_view>

#include "fuzz_util.hpp"
#include "io/csv.hpp"
#include "io/csv_columns.hpp"

namespace {

// A few names stand for arrays, one through another name (as --keys mean=mu does).
std::optional<std::string> resolve(std::string_view written) {
  if (written == "mu") return "mean";
  if (written == "mean" || written == "std" || written == "scale_tril") return std::string(written);
  return std::nullopt;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gausskl::io;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CsvTable table;
  try {
    table = parse_csv_table(text, "fuzz.csv");
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const Array& values = table.values;
  fuzz::check(values.shape.size() == 2 && values.shape[0] >= 1 && values.shape[1] >= 1);
  fuzz::check(values.dtype() == DType::float64);
  fuzz::check_consistent(values);
  fuzz::check(table.header.names.empty() ||
              static_cast<std::int64_t>(table.header.names.size()) == values.shape[1]);
  fuzz::check(table.comment.names.empty() ||
              static_cast<std::int64_t>(table.comment.names.size()) == values.shape[1]);

  const CsvNames names = table.header.line ? table.header : table.comment;
  if (!names.line) return 0;
  const std::int64_t count = values.size(), rows = values.shape[0];
  // Both ways of meeting a name that stands for no array: an error, or skipping the column (as
  // the CLI reads a table). The arrays and the skipped columns hold every value exactly once.
  for (const bool skip : {false, true}) {
    CsvTable copy = table;
    std::vector<std::string> skipped;
    std::vector<std::pair<std::string, Array>> arrays;
    try {
      arrays = csv_arrays(std::move(copy), names, "fuzz.csv", resolve, "is unknown", nullptr,
                          skip ? &skipped : nullptr);
    } catch (const std::invalid_argument&) {
      continue;
    }
    std::int64_t total = static_cast<std::int64_t>(skipped.size()) * rows;
    for (const auto& [name, array] : arrays) {
      fuzz::check(resolve(name) == name);
      fuzz::check_consistent(array);
      total += array.size();
    }
    fuzz::check(total == count);
  }
  return 0;
}
