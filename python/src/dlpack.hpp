// The DLPack ABI (v1, https://dmlc.github.io/dlpack/latest/c_api.html) as far as the bindings use
// it: the tensor descriptors and the C exchange table that frameworks publish on their tensor
// type as `__dlpack_c_exchange_api__` (a PyCapsule named "dlpack_exchange_api"; PyTorch 2.9 and
// later). Through that table a tensor is read or made with a few C calls instead of `__dlpack__()`
// and a capsule, most of a small call's cost otherwise (bench/README.md). Declared here, not
// included from a framework, because the bindings build without PyTorch.
#pragma once

#include <cstdint>

namespace gausskl::python::dlpack {

extern "C" {

struct Version {
  std::uint32_t major;
  std::uint32_t minor;
};

enum DeviceType : std::int32_t { kCPU = 1 };

struct Device {
  std::int32_t device_type;
  std::int32_t device_id;
};

enum TypeCode : std::uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4, kComplex = 5 };

struct DataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  std::int32_t ndim;
  DataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements; never null for ndim > 0 since DLPack 1.2
  std::uint64_t byte_offset;
};

struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  std::uint64_t flags;
  Tensor dl_tensor;
};

struct ExchangeApiHeader {
  Version version;
  ExchangeApiHeader* prev_api;
};

struct ExchangeApi {
  ExchangeApiHeader header;
  int (*managed_tensor_allocator)(Tensor* prototype, ManagedTensorVersioned** out, void* error_ctx,
                                  void (*set_error)(void* error_ctx, const char* kind,
                                                    const char* message));
  int (*managed_tensor_from_py_object_no_sync)(void* py_object, ManagedTensorVersioned** out);
  int (*managed_tensor_to_py_object_no_sync)(ManagedTensorVersioned* tensor, void** out_py_object);
  int (*dltensor_from_py_object_no_sync)(void* py_object, Tensor* out);  // may be null
  int (*current_work_stream)(std::int32_t device_type, std::int32_t device_id, void** out_stream);
};

}  // extern "C"

inline constexpr std::uint32_t kMajorVersion = 1;

}  // namespace gausskl::python::dlpack
