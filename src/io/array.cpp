#include "io/array.hpp"

namespace gausskl::io {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return "float32";
    case DType::float64:
      return "float64";
    case DType::int64:
      return "int64";
  }
  return "unknown";
}

}  // namespace gausskl::io
