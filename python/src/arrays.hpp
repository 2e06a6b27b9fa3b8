// The caller's arrays as the bindings read them: NumPy arrays through nanobind (the buffer
// protocol) and tensors of any framework that publishes the DLPack C exchange table (PyTorch)
// through that table, in place, whatever their strides; and results made in the caller's
// framework.
#pragma once

#include <nanobind/nanobind.h>

#include <array>
#include <cstdint>

#include "dlpack.hpp"

namespace gausskl::python {

namespace nb = nanobind;

// torch supports 64 dimensions; gausskl's arrays have a few batch axes and one or two event axes.
inline constexpr int kMaxDims = 32;

enum class DType : std::uint8_t { f32, f64, other };

struct Array {
  const void* data = nullptr;
  int ndim = 0;
  std::array<std::int64_t, kMaxDims> shape{};
  std::array<std::int64_t, kMaxDims> strides{};  // in elements
  DType dtype = DType::other;
  bool cpu = true;
  // The framework's exchange table (null for NumPy): results of a call with such an input are
  // made by it.
  const dlpack::ExchangeApi* api = nullptr;
};

// Reads obj in place. False (no Python error set) when it is neither a NumPy array nor a tensor
// of a framework with the exchange table, or has more than kMaxDims axes.
bool read_array(nb::handle obj, Array& out);

// obj.requires_grad, false for objects without it.
bool requires_grad(nb::handle obj);
// torch.is_grad_enabled(); false when torch is not imported.
bool grad_enabled();

// An uninitialized C-contiguous result of the given shape, made by `api`'s framework (null:
// NumPy) over the library's BlockBuffer, freed when the framework frees the array: mapped for
// this array from kMapBytes on (see util/block_buffer.hpp), from operator new below. Not the
// framework's allocator: a torch tensor made by its allocator and then exported to be wrapped
// again costs two tensors, which a training step feels (bench/README.md).
struct Result {
  nb::object object;
  void* data = nullptr;
};
Result make_result(const dlpack::ExchangeApi* api, DType dtype, int ndim,
                   const std::int64_t* shape);
Result make_index_result(const dlpack::ExchangeApi* api, int ndim, const std::int64_t* shape);

}  // namespace gausskl::python
