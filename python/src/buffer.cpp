// Memory for results: gausskl.empty_bytes hands Python a block of the library's BlockBuffer
// (core/block_buffer.hpp), so that large results are mapped from the kernel, offered to huge
// pages and unmapped when the last array using them goes, rather than taken from malloc's heap by
// torch.empty or numpy.empty (why: block_buffer.hpp).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>

#include "core/block_buffer.hpp"

namespace gausskl::python {

namespace nb = nanobind;

namespace {

using Bytes = detail::BlockBuffer<std::uint8_t>;

nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>> empty_bytes(std::int64_t nbytes) {
  if (nbytes < 0) throw std::invalid_argument("empty_bytes: nbytes must be >= 0");
  auto buffer = std::make_unique<Bytes>(nbytes);  // std::bad_alloc: MemoryError
  nb::capsule owner(buffer.get(), [](void* b) noexcept { delete static_cast<Bytes*>(b); });
  Bytes* const held = buffer.release();  // owned by the capsule from here on
  return {held->get(), {static_cast<std::size_t>(nbytes)}, owner};
}

}  // namespace

void bind_buffer(nb::module_& m) {
  m.attr("MAPPED_BYTES") = Bytes::kMapBytes;
  m.def("empty_bytes", &empty_bytes, nb::arg("nbytes"),
        "Uninitialized uint8 NumPy array of nbytes bytes; from MAPPED_BYTES on, pages mapped for "
        "it alone and unmapped when it is freed.");
}

}  // namespace gausskl::python
