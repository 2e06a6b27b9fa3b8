// Gaussians fitted to samples (gausskl/moments.hpp): the library's MomentAccumulator and
// fit_gaussian over rows read in place (NumPy or a DLPack tensor on the CPU, float32 or float64,
// any strides), computed without the GIL; results are float64 NumPy arrays.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>

#include "arrays.hpp"
#include "gausskl/moments.hpp"
#include "util/show.hpp"

namespace gausskl::python {
namespace {

using detail::show;

MomentFamily family_of(const std::string& op, const std::string& name) {
  if (name == "full") return MomentFamily::full;
  if (name == "diag") return MomentFamily::diag;
  throw std::invalid_argument("[" + op + "] family must be 'full' or 'diag', found '" + name + "'");
}

const char* family_name(MomentFamily f) {
  return f == MomentFamily::full ? "full" : "diag";
}

// x as rows [N, D]: a [D] vector is one row. Checked here: what the library's view cannot say.
Array rows_of(const std::string& op, nb::handle x) {
  Array a;
  if (!read_array(x, a)) {
    throw std::invalid_argument("[" + op + "] x must be a NumPy array or a tensor, found " +
                                nb::type_name(x.type()).c_str());
  }
  if (!a.cpu) throw std::invalid_argument("[" + op + "] x must be on the CPU");
  if (a.dtype == DType::other) {
    throw std::invalid_argument("[" + op + "] x must be float32 or float64");
  }
  if (a.ndim == 1) {
    a.shape[1] = a.shape[0];
    a.strides[1] = a.strides[0];
    a.shape[0] = 1;
    a.strides[0] = 0;
    a.ndim = 2;
  }
  if (a.ndim != 2) {
    throw std::invalid_argument("[" + op + "] x must be [N, D] (rows of features) or [D], found " +
                                show(a.ndim) + " dimensions");
  }
  return a;
}

template <class T>
View<T, 2> view_of(const Array& a) {
  return View<T, 2>{
      static_cast<const T*>(a.data), {a.shape[0], a.shape[1]}, {a.strides[0], a.strides[1]}};
}

// Calls f(view) with the rows viewed in their own type, without the GIL.
template <class F>
void with_rows(const Array& a, F&& f) {
  nb::gil_scoped_release release;
  if (a.dtype == DType::f64) {
    f(view_of<double>(a));
  } else {
    f(view_of<float>(a));
  }
}

Result numpy_array(std::int64_t d, bool matrix) {
  const std::int64_t shape[2] = {d, d};
  return make_result(nullptr, DType::f64, matrix ? 2 : 1, shape);
}

std::span<double> span_of(const Result& r, std::int64_t size) {
  return {static_cast<double*>(r.data), static_cast<std::size_t>(size)};
}

// A float64 [size] array read in place (for a saved state).
std::span<const double> doubles_of(const char* what, nb::handle obj, std::int64_t size) {
  Array a;
  if (!read_array(obj, a) || a.dtype != DType::f64 || !a.cpu) {
    throw std::invalid_argument(std::string("[MomentAccumulator] ") + what +
                                " must be a float64 NumPy array");
  }
  std::int64_t n = 1, stride = 1;
  for (int k = a.ndim - 1; k >= 0; --k) {
    if (a.shape[k] != 1 && a.strides[k] != stride) {
      throw std::invalid_argument(std::string("[MomentAccumulator] ") + what +
                                  " must be C-contiguous");
    }
    stride *= a.shape[k];
    n *= a.shape[k];
  }
  if (n != size) {
    throw std::invalid_argument(std::string("[MomentAccumulator] ") + what + " has " + show(n) +
                                " values, expected " + show(size));
  }
  return {static_cast<const double*>(a.data), static_cast<std::size_t>(n)};
}

std::int64_t scatter_size(const MomentAccumulator& a) {
  return a.family() == MomentFamily::full ? a.d() * a.d() : a.d();
}

}  // namespace

void bind_moments(nb::module_& m) {
  nb::class_<MomentAccumulator>(m, "MomentAccumulator")
      .def(
          "__init__",
          [](MomentAccumulator* self, std::int64_t d, const std::string& family, int threads) {
            new (self) MomentAccumulator(d, family_of("MomentAccumulator", family), threads);
          },
          nb::arg("d"), nb::arg("family"), nb::arg("threads"))
      .def_static(
          "from_state",
          [](std::int64_t count, nb::handle mean, nb::handle scatter, const std::string& family,
             int threads) {
            const MomentFamily f = family_of("MomentAccumulator", family);
            Array a;
            if (!read_array(mean, a) || a.ndim != 1) {
              throw std::invalid_argument("[MomentAccumulator] mean must be a float64 [D] array");
            }
            const std::int64_t d = a.shape[0];
            const auto mean_values = doubles_of("mean", mean, d);
            const auto scatter_values =
                doubles_of("scatter", scatter, f == MomentFamily::full ? d * d : d);
            return MomentAccumulator::from_state(count, mean_values, scatter_values, f, threads);
          },
          nb::arg("count"), nb::arg("mean"), nb::arg("scatter"), nb::arg("family"),
          nb::arg("threads"))
      .def(
          "update",
          [](MomentAccumulator& self, nb::handle x, std::int64_t first_row) {
            const Array a = rows_of("MomentAccumulator", x);
            with_rows(a, [&](const auto& v) { self.update(v, first_row); });
          },
          nb::arg("x"), nb::arg("first_row"))
      .def(
          "merge",
          [](MomentAccumulator& self, const MomentAccumulator& other) {
            nb::gil_scoped_release release;
            self.merge(other);
          },
          nb::arg("other"))
      .def_prop_ro("count", &MomentAccumulator::count)
      .def_prop_ro("d", &MomentAccumulator::d)
      .def_prop_ro("threads", &MomentAccumulator::threads)
      .def_prop_ro("family",
                   [](const MomentAccumulator& self) { return family_name(self.family()); })
      .def("mean",
           [](const MomentAccumulator& self) {
             Result r = numpy_array(self.d(), false);
             const auto mean = self.mean();
             std::copy(mean.begin(), mean.end(), span_of(r, self.d()).begin());
             return r.object;
           })
      .def("scatter",
           [](const MomentAccumulator& self) {
             Result r = numpy_array(self.d(), self.family() == MomentFamily::full);
             self.scatter(span_of(r, scatter_size(self)));
             return r.object;
           })
      .def(
          "covariance",
          [](const MomentAccumulator& self, std::int64_t ddof) {
            Result r = numpy_array(self.d(), self.family() == MomentFamily::full);
            self.covariance(span_of(r, scatter_size(self)), ddof);
            return r.object;
          },
          nb::arg("ddof"));

  m.def(
      "fit_gaussian",
      [](nb::handle x, std::int64_t ddof, const std::string& family, int threads) {
        const MomentFamily f = family_of("fit_gaussian", family);
        const Array a = rows_of("fit_gaussian", x);
        const std::int64_t d = a.shape[1];
        Result mean = numpy_array(d, false);
        Result cov = numpy_array(d, f == MomentFamily::full);
        const std::int64_t size = f == MomentFamily::full ? d * d : d;
        with_rows(a, [&](const auto& v) {
          fit_gaussian(v, span_of(mean, d), span_of(cov, size), ddof, f, threads);
        });
        return std::make_tuple(mean.object, cov.object);
      },
      nb::arg("x"), nb::arg("ddof"), nb::arg("family"), nb::arg("threads"));
}

}  // namespace gausskl::python
