// An owned array read from a file: C order, native byte order.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace gausskl::io {

enum class DType { float32, float64, int64 };

// "float32", "float64", "int64".
const char* dtype_name(DType dtype);

struct Array {
  std::vector<std::int64_t> shape;
  std::variant<std::vector<float>, std::vector<double>> data;

  DType dtype() const { return data.index() == 0 ? DType::float32 : DType::float64; }
  std::int64_t size() const {
    std::int64_t n = 1;
    for (auto s : shape)
      n *= s;
    return n;
  }
};

}  // namespace gausskl::io
