// The .npz reader (zip directory, Zip64 records, stored and deflate entries, CRC-32) on
// arbitrary bytes: it must accept or throw std::invalid_argument, never crash, leak, hang or
// allocate more than the input justifies. Read whole, and with only some entries selected (as
// the CLI reads files holding other arrays): the selected ones must come out the same.
#include <set>
#include <span>
#include <stdexcept>

#include "fuzz_util.hpp"
#include "io/npz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gausskl::io;
  const std::span bytes(reinterpret_cast<const std::byte*>(data), size);
  const auto wanted = [](std::string_view name) { return name == "mean" || name == "std"; };
  NpzContents selected;
  bool selected_ok = true;
  try {
    selected = parse_npz(bytes, "fuzz.npz", wanted);
  } catch (const std::invalid_argument&) {
    selected_ok = false;
  }
  for (const auto& [name, array] : selected.arrays) {
    fuzz::check(wanted(name));
    fuzz::check_consistent(array);
  }
  for (const std::string& name : selected.skipped)
    fuzz::check(!wanted(name));

  std::vector<std::pair<std::string, Array>> arrays;
  try {
    arrays = parse_npz(bytes, "fuzz.npz");
  } catch (const std::invalid_argument&) {
    return 0;
  }
  // What reads whole reads selected too, with the same entries.
  fuzz::check(selected_ok);
  fuzz::check(selected.arrays.size() + selected.skipped.size() == arrays.size());
  std::set<std::string> names;
  for (const auto& [name, array] : arrays) {
    fuzz::check(names.insert(name).second);
    fuzz::check_consistent(array);
  }
  return 0;
}
