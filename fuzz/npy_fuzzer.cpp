// The .npy reader on arbitrary bytes: it must accept or throw std::invalid_argument, never
// crash, leak or allocate more than the input justifies; what it accepts must survive a round
// trip through the writer unchanged.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <stdexcept>

#include "fuzz_util.hpp"
#include "io/npy.hpp"

namespace {

using namespace gausskl::io;

std::vector<std::byte> written(const Array& array) {
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  fuzz::check(out != nullptr);
  std::visit([&](const auto& values) { write_npy(out, array.dtype(), array.shape, values.data()); },
             array.data);
  std::fclose(out);
  std::vector<std::byte> bytes(size);
  if (size > 0) std::memcpy(bytes.data(), buffer, size);
  std::free(buffer);
  return bytes;
}

// Bitwise, so that NaNs with any payload compare equal to themselves.
bool same_values(const Array& a, const Array& b) {
  if (a.data.index() != b.data.index()) return false;
  return std::visit(
      [&](const auto& values) {
        const auto& other = std::get<std::decay_t<decltype(values)>>(b.data);
        return values.size() == other.size() &&
               (values.empty() ||
                std::memcmp(values.data(), other.data(), values.size() * sizeof values[0]) == 0);
      },
      a.data);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span bytes(reinterpret_cast<const std::byte*>(data), size);
  Array array;
  try {
    array = parse_npy(bytes, "fuzz.npy");
  } catch (const std::invalid_argument&) {
    return 0;
  }
  fuzz::check_consistent(array);
  const Array again = parse_npy(written(array), "written.npy");
  fuzz::check(again.shape == array.shape);
  fuzz::check(same_values(again, array));
  return 0;
}
