// The CSV reader on arbitrary text: it must accept or throw std::invalid_argument, never
// crash or leak, and what it accepts is a full [rows, columns] table.
#include <stdexcept>
#include <string_view>

#include "fuzz_util.hpp"
#include "io/csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gausskl::io;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Array array;
  try {
    array = parse_csv(text, "fuzz.csv");
  } catch (const std::invalid_argument&) {
    return 0;
  }
  fuzz::check(array.shape.size() == 2 && array.shape[0] >= 1 && array.shape[1] >= 1);
  fuzz::check(array.dtype() == DType::float64);
  fuzz::check_consistent(array);
  return 0;
}
