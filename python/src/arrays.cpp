#include "arrays.hpp"

#include <nanobind/ndarray.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>

#include "util/block_buffer.hpp"

namespace gausskl::python {
namespace {

using Bytes = detail::BlockBuffer<std::uint8_t>;

// Exchange tables by tensor type: torch.Tensor, nn.Parameter and other subclasses each look the
// attribute up once. Touched with the GIL held only.
struct ApiCache {
  static constexpr int kSize = 8;
  PyTypeObject* type[kSize] = {};
  const dlpack::ExchangeApi* api[kSize] = {};
  PyTypeObject* without[kSize] = {};  // types seen to have no table (NumPy, lists, ...)
  int next = 0, next_without = 0;
};
ApiCache cache;

const dlpack::ExchangeApi* exchange_api(nb::handle obj) {
  PyTypeObject* t = Py_TYPE(obj.ptr());
  for (int i = 0; i < ApiCache::kSize; ++i) {
    if (cache.type[i] == t) return cache.api[i];
    if (cache.without[i] == t) return nullptr;
  }
  const dlpack::ExchangeApi* api = nullptr;
  PyObject* capsule =
      PyObject_GetAttrString(reinterpret_cast<PyObject*>(t), "__dlpack_c_exchange_api__");
  if (capsule) {
    api = static_cast<const dlpack::ExchangeApi*>(
        PyCapsule_GetPointer(capsule, "dlpack_exchange_api"));
    Py_DECREF(capsule);
    if (api &&
        (api->header.version.major != dlpack::kMajorVersion ||
         !api->dltensor_from_py_object_no_sync || !api->managed_tensor_to_py_object_no_sync)) {
      api = nullptr;
    }
  }
  PyErr_Clear();
  if (api) {
    cache.type[cache.next] = t;
    cache.api[cache.next] = api;
    cache.next = (cache.next + 1) % ApiCache::kSize;
  } else {
    cache.without[cache.next_without] = t;
    cache.next_without = (cache.next_without + 1) % ApiCache::kSize;
  }
  return api;
}

DType dtype_of(std::uint8_t code, std::uint8_t bits, std::uint16_t lanes) {
  if (code != dlpack::kFloat || lanes != 1) return DType::other;
  return bits == 32 ? DType::f32 : bits == 64 ? DType::f64 : DType::other;
}

bool from_tensor(const dlpack::Tensor& t, Array& out) {
  if (t.ndim > kMaxDims) return false;
  out.ndim = t.ndim;
  out.dtype = dtype_of(t.dtype.code, t.dtype.bits, t.dtype.lanes);
  out.cpu = t.device.device_type == dlpack::kCPU;
  out.data = static_cast<const char*>(t.data) + t.byte_offset;
  for (int k = 0; k < t.ndim; ++k) {
    out.shape[k] = t.shape[k];
    out.strides[k] = t.strides ? t.strides[k] : 0;
  }
  if (!t.strides) {  // before DLPack 1.2: null strides meant C order
    std::int64_t s = 1;
    for (int k = t.ndim - 1; k >= 0; --k) {
      out.strides[k] = s;
      s *= t.shape[k];
    }
  }
  return true;
}

// A DLPack tensor over a BlockBuffer, handed to a framework, which calls the deleter when the
// array it made goes.
struct Owned {
  dlpack::ManagedTensorVersioned managed;
  std::int64_t shape[kMaxDims];
  std::int64_t strides[kMaxDims];
  Bytes bytes;
};

void free_owned(dlpack::ManagedTensorVersioned* self) {
  delete static_cast<Owned*>(self->manager_ctx);
}

std::int64_t element_count(int ndim, const std::int64_t* shape) {
  std::int64_t n = 1;
  for (int k = 0; k < ndim; ++k)
    n *= shape[k];
  return n;
}

Result exchange_result(const dlpack::ExchangeApi* api, dlpack::DataType dt, int ndim,
                       const std::int64_t* shape) {
  const std::int64_t bytes = element_count(ndim, shape) * (dt.bits / 8);
  auto owned = std::make_unique<Owned>();
  owned->bytes = Bytes(std::max<std::int64_t>(bytes, 1));
  std::int64_t s = 1;
  for (int k = ndim - 1; k >= 0; --k) {
    owned->shape[k] = shape[k];
    owned->strides[k] = s;
    s *= shape[k];
  }
  void* data = owned->bytes.get();
  owned->managed = {{dlpack::kMajorVersion, 0},
                    owned.get(),
                    free_owned,
                    0,
                    {data, {dlpack::kCPU, 0}, ndim, dt, owned->shape, owned->strides, 0}};
  // The framework's from here: where the call fails it may have called the deleter already, so
  // the block is left to it rather than freed twice.
  dlpack::ManagedTensorVersioned* managed = &owned.release()->managed;
  void* py = nullptr;
  if (api->managed_tensor_to_py_object_no_sync(managed, &py) != 0 || !py) {
    throw nb::python_error();
  }
  return {nb::steal(static_cast<PyObject*>(py)), data};
}

template <class T>
Result numpy_result(int ndim, const std::int64_t* shape) {
  std::size_t dims[kMaxDims];
  for (int k = 0; k < ndim; ++k)
    dims[k] = static_cast<std::size_t>(shape[k]);
  auto bytes = std::make_unique<Bytes>(std::max<std::int64_t>(element_count(ndim, shape), 1) *
                                       static_cast<std::int64_t>(sizeof(T)));
  nb::capsule owner(bytes.get(), [](void* b) noexcept { delete static_cast<Bytes*>(b); });
  void* data = bytes.release()->get();
  nb::ndarray<nb::numpy, T> a(data, static_cast<std::size_t>(ndim), dims, owner);
  return {a.cast(), data};
}

}  // namespace

bool read_array(nb::handle obj, Array& out) {
  if (const dlpack::ExchangeApi* api = exchange_api(obj)) {
    dlpack::Tensor t;
    if (api->dltensor_from_py_object_no_sync(obj.ptr(), &t) != 0) {
      PyErr_Clear();
      return false;
    }
    out.api = api;
    return from_tensor(t, out);
  }
  out.api = nullptr;
  nb::ndarray<nb::ro> a;
  if (!nb::try_cast(obj, a, false)) {
    PyErr_Clear();
    return false;
  }
  if (a.ndim() > static_cast<std::size_t>(kMaxDims)) return false;
  out.ndim = static_cast<int>(a.ndim());
  const nb::dlpack::dtype dt = a.dtype();
  out.dtype = dtype_of(dt.code, dt.bits, dt.lanes);
  out.cpu = a.device_type() == nb::device::cpu::value;
  out.data = a.data();
  for (int k = 0; k < out.ndim; ++k) {
    out.shape[k] = static_cast<std::int64_t>(a.shape(static_cast<std::size_t>(k)));
    out.strides[k] = a.stride(static_cast<std::size_t>(k));
  }
  return true;
}

bool requires_grad(nb::handle obj) {
  // Kept for the life of the process (a static nb::object would be released after Python).
  static PyObject* const name = PyUnicode_InternFromString("requires_grad");
  PyObject* v = PyObject_GetAttr(obj.ptr(), name);
  if (!v) {
    PyErr_Clear();
    return false;
  }
  const bool yes = v == Py_True;
  Py_DECREF(v);
  return yes;
}

bool grad_enabled() {
  static PyObject* is_enabled = nullptr;  // kept for the life of the process, as above
  if (!is_enabled) {
    PyObject* torch = PyImport_GetModule(nb::str("torch").ptr());  // only if already imported
    if (!torch) {
      PyErr_Clear();
      return false;
    }
    nb::object fn = nb::steal(torch).attr("_C").attr("is_grad_enabled");
    is_enabled = fn.release().ptr();
  }
  PyObject* r = PyObject_CallNoArgs(is_enabled);
  if (!r) throw nb::python_error();
  const bool yes = r == Py_True;
  Py_DECREF(r);
  return yes;
}

Result make_result(const dlpack::ExchangeApi* api, DType dtype, int ndim,
                   const std::int64_t* shape) {
  const bool f64 = dtype == DType::f64;
  if (api) {
    return exchange_result(api, {dlpack::kFloat, static_cast<std::uint8_t>(f64 ? 64 : 32), 1}, ndim,
                           shape);
  }
  return f64 ? numpy_result<double>(ndim, shape) : numpy_result<float>(ndim, shape);
}

Result make_index_result(const dlpack::ExchangeApi* api, int ndim, const std::int64_t* shape) {
  if (api) return exchange_result(api, {dlpack::kInt, 64, 1}, ndim, shape);
  return numpy_result<std::int64_t>(ndim, shape);
}

}  // namespace gausskl::python
