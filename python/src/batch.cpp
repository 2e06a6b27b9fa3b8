#include "batch.hpp"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>
#include <utility>

namespace gausskl::python {
namespace {

// The library's strided view of an array: same data pointer, strides in elements (as DLPack
// and nanobind give them), so any layout is used in place, without a copy.
template <class T, int Rank, class Array>
View<T, Rank> view_of(const Array& a) {
  View<T, Rank> v;
  v.data = a.data();
  for (int k = 0; k < Rank; ++k) {
    v.shape[k] = static_cast<std::int64_t>(a.shape(k));
    v.strides[k] = a.stride(k);
  }
  return v;
}

DiagParam diag_param(const std::string& name) {
  if (name == "std") return DiagParam::stddev;
  if (name == "var") return DiagParam::var;
  if (name == "logvar") return DiagParam::logvar;
  if (name == "precision") return DiagParam::precision;
  throw std::invalid_argument("[DiagGaussian] unknown parameterization '" + name +
                              "'; expected std, var, logvar or precision");
}

FullParam full_param(const std::string& name) {
  if (name == "scale_tril") return FullParam::scale_tril;
  if (name == "covariance") return FullParam::covariance;
  if (name == "precision_matrix") return FullParam::precision_matrix;
  throw std::invalid_argument("[FullGaussian] unknown parameterization '" + name +
                              "'; expected scale_tril, covariance or precision_matrix");
}

template <class Array>
AnyArray erase(const Array& a) {
  return AnyArray(a);
}

}  // namespace

template <class T>
Batch Batch::diag(Array2<T> mean, Array2<T> scale, const std::string& param) {
  DiagGaussians<T> g{view_of<T, 2>(mean), view_of<T, 2>(scale), diag_param(param)};
  return Batch("diag", {erase(mean), erase(scale)}, Gaussians<T>(g));
}

template <class T>
Batch Batch::full(Array2<T> mean, Array3<T> scale, const std::string& param) {
  FullGaussians<T> g{view_of<T, 2>(mean), view_of<T, 3>(scale), full_param(param)};
  return Batch("full", {erase(mean), erase(scale)}, Gaussians<T>(g));
}

template <class T>
Batch Batch::low_rank(Array2<T> mean, Array3<T> cov_factor, Array2<T> cov_diag) {
  LowRankGaussians<T> g{view_of<T, 2>(mean), view_of<T, 3>(cov_factor), view_of<T, 2>(cov_diag)};
  return Batch("low_rank", {erase(mean), erase(cov_factor), erase(cov_diag)}, Gaussians<T>(g));
}

std::int64_t Batch::n() const {
  if (const auto* g = get<float>()) return g->n();
  return get<double>()->n();
}

std::int64_t Batch::d() const {
  if (const auto* g = get<float>()) return g->d();
  return get<double>()->d();
}

std::vector<std::uintptr_t> Batch::addresses() const {
  std::vector<std::uintptr_t> out;
  for (const AnyArray& a : arrays_)
    out.push_back(reinterpret_cast<std::uintptr_t>(a.data()));
  return out;
}

namespace {

template <class T>
void bind_constructors(nb::class_<Batch>& cls) {
  // noconvert: the Python layer has already chosen one scalar type for every array; a silent
  // copy here would hide a bug there. Strides are not constrained: any layout is used in place.
  cls.def_static("diag", &Batch::diag<T>, nb::arg("mean").noconvert(), nb::arg("scale").noconvert(),
                 nb::arg("param"));
  cls.def_static("full", &Batch::full<T>, nb::arg("mean").noconvert(), nb::arg("scale").noconvert(),
                 nb::arg("param"));
  cls.def_static("low_rank", &Batch::low_rank<T>, nb::arg("mean").noconvert(),
                 nb::arg("cov_factor").noconvert(), nb::arg("cov_diag").noconvert());
}

}  // namespace

void bind_batch(nb::module_& m) {
  nb::class_<Batch> cls(m, "Batch",
                        "Views of the caller's arrays as one batch of Gaussians (no copy).");
  bind_constructors<float>(cls);
  bind_constructors<double>(cls);
  cls.def_prop_ro("family", &Batch::family)
      .def_prop_ro("n", &Batch::n)
      .def_prop_ro("d", &Batch::d)
      .def_prop_ro("is_double", &Batch::is_double)
      .def("addresses", &Batch::addresses);
}

}  // namespace gausskl::python
