#include <charconv>
#include <stdexcept>
#include <string>

#include "io/csv.hpp"
#include "io/write_all.hpp"

namespace gausskl::io {
namespace {

constexpr std::string_view kWhat = "CSV output";

// std::to_chars without a format gives the shortest text that reads back to the same value
// (for float: the same float); integers are written exactly.
template <typename T>
void write_rows(std::FILE* out, std::int64_t rows, std::int64_t cols, const T* data) {
  std::int64_t count = 0;
  if (rows < 0 || cols < 0 || __builtin_mul_overflow(rows, cols, &count)) {
    throw std::invalid_argument("[write] CSV of " + std::to_string(rows) + " x " +
                                std::to_string(cols) + " values is not a valid size");
  }
  constexpr std::size_t kFlushAt = 64 * 1024;
  std::string buffer;
  buffer.reserve(kFlushAt + 256);
  char number[64];
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      if (c > 0) buffer += ',';
      const auto result = std::to_chars(number, number + sizeof number, data[r * cols + c]);
      buffer.append(number, result.ptr);
      if (buffer.size() >= kFlushAt) {
        write_all(out, buffer.data(), buffer.size(), kWhat);
        buffer.clear();
      }
    }
    buffer += '\n';
  }
  write_all(out, buffer.data(), buffer.size(), kWhat);
}

}  // namespace

void write_csv(std::FILE* out, std::int64_t rows, std::int64_t cols, const float* data) {
  write_rows(out, rows, cols, data);
}

void write_csv(std::FILE* out, std::int64_t rows, std::int64_t cols, const double* data) {
  write_rows(out, rows, cols, data);
}

void write_csv(std::FILE* out, std::int64_t rows, std::int64_t cols, const std::int64_t* data) {
  write_rows(out, rows, cols, data);
}

}  // namespace gausskl::io
