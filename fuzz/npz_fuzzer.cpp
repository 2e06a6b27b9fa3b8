// The .npz reader (zip directory, Zip64 records, stored and deflate entries, CRC-32) on
// arbitrary bytes: it must accept or throw std::invalid_argument, never crash, leak, hang or
// allocate more than the input justifies.
#include <set>
#include <span>
#include <stdexcept>

#include "fuzz_util.hpp"
#include "io/npz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gausskl::io;
  const std::span bytes(reinterpret_cast<const std::byte*>(data), size);
  std::vector<std::pair<std::string, Array>> arrays;
  try {
    arrays = parse_npz(bytes, "fuzz.npz");
  } catch (const std::invalid_argument&) {
    return 0;
  }
  std::set<std::string> names;
  for (const auto& [name, array] : arrays) {
    fuzz::check(names.insert(name).second);
    fuzz::check_consistent(array);
  }
  return 0;
}
