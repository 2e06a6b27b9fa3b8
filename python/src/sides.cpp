#include "sides.hpp"

namespace gausskl::python {

bool read_side(nb::handle spec, Side& side) {
  if (!PyTuple_Check(spec.ptr())) return false;
  const Py_ssize_t size = PyTuple_GET_SIZE(spec.ptr());
  if (size < 3 || size > 4) return false;
  const long code = PyLong_AsLong(PyTuple_GET_ITEM(spec.ptr(), 0));
  if (code < 0 || code >= kCodes || size != forms[code].count + 1) {
    PyErr_Clear();
    return false;
  }
  side.code = static_cast<int>(code);
  side.count = static_cast<int>(size) - 1;
  side.batch = Shape{};
  for (int k = 0; k < side.count; ++k) {
    side.objects[k] = PyTuple_GET_ITEM(spec.ptr(), k + 1);
    side.event_rank[k] = forms[side.code].event_rank[k];
    Array& a = side.arrays[k];
    if (!read_array(side.objects[k], a)) return false;
    Shape b;
    if (!batch_shape(a, side.event_rank[k], b)) return false;
    Shape both;
    if (!broadcast(side.batch, b, both)) return false;
    side.batch = both;
  }
  return true;
}

bool constant_inner(const Side& side, const Layout& layout) {
  for (int k = 0; k < side.count; ++k)
    if (layout.inner_stride(side.operand[k]) != 0) return false;
  return true;
}

namespace {

template <class T, int Rank>
View<T, Rank> view(const Side& side, int k, const Layout& layout, std::int64_t slice,
                   std::int64_t n) {
  const Array& a = side.arrays[k];
  View<T, Rank> v;
  v.data = reinterpret_cast<const T*>(layout.at(side.operand[k], slice));
  v.shape[0] = n;
  v.strides[0] = n == 1 ? 0 : layout.inner_stride(side.operand[k]);
  for (int e = 1; e < Rank; ++e) {
    const int axis = a.ndim - Rank + e;
    v.shape[e] = a.shape[axis];
    v.strides[e] = a.strides[axis];
  }
  return v;
}

}  // namespace

template <class T>
Gaussians<T> view_of(const Side& side, const Layout& layout, std::int64_t slice, std::int64_t n) {
  const View<T, 2> mean = view<T, 2>(side, 0, layout, slice, n);
  const Form& form = forms[side.code];
  switch (form.family) {
    case Family::diag:
      return DiagGaussians<T>{mean, view<T, 2>(side, 1, layout, slice, n), form.diag};
    case Family::full:
      if (form.full == FullParam::packed_scale_tril)
        return FullGaussians<T>{
            mean, {}, form.full, view<T, 2>(side, 1, layout, slice, n), form.log_diagonal};
      return FullGaussians<T>{mean, view<T, 3>(side, 1, layout, slice, n), form.full};
    default:
      return LowRankGaussians<T>{mean, view<T, 3>(side, 1, layout, slice, n),
                                 view<T, 2>(side, 2, layout, slice, n)};
  }
}

template Gaussians<float> view_of<float>(const Side&, const Layout&, std::int64_t, std::int64_t);
template Gaussians<double> view_of<double>(const Side&, const Layout&, std::int64_t, std::int64_t);

}  // namespace gausskl::python
