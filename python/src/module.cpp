// gausskl._ext: the thin nanobind layer between the gausskl package and the C++ library.
#include <nanobind/nanobind.h>

#include "gausskl/version.hpp"

namespace gausskl::python {
void bind_ops(nanobind::module_& m);
void bind_gradients(nanobind::module_& m);
void bind_errors(nanobind::module_& m);
void bind_diag_init(nanobind::module_& m);
void bind_moments(nanobind::module_& m);
}  // namespace gausskl::python

NB_MODULE(_ext, m) {
  namespace nb = nanobind;
  m.doc() = "gausskl C++ library bindings; use the gausskl package, not this module.";
  m.def(
      "version", [] { return gausskl::version(); }, "The linked C++ library's version.");
  gausskl::python::bind_errors(m);
  gausskl::python::bind_ops(m);
  gausskl::python::bind_gradients(m);
  gausskl::python::bind_diag_init(m);
  gausskl::python::bind_moments(m);
}
