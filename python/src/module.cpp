// gausskl._ext: the thin nanobind layer between the gausskl package and the C++ library.
#include <nanobind/nanobind.h>

#include "batch.hpp"
#include "gausskl/version.hpp"

namespace gausskl::python {
void bind_all_ops(nb::module_& m);
void bind_buffer(nb::module_& m);
}  // namespace gausskl::python

NB_MODULE(_ext, m) {
  namespace nb = nanobind;
  m.doc() = "gausskl C++ library bindings; use the gausskl package, not this module.";
  m.def(
      "version", [] { return gausskl::version(); }, "The linked C++ library's version.");
  gausskl::python::bind_batch(m);
  gausskl::python::bind_all_ops(m);
  gausskl::python::bind_buffer(m);
}
