#include "sides.hpp"

namespace gausskl::python {

int event_rank(int code, int k) {
  if (k == 0) return 1;
  if (code >= kScaleTril && code <= kPrecisionMatrix) return 2;
  if (code == kLowRank && k == 1) return 2;
  return 1;
}

bool read_side(nb::handle spec, Side& side) {
  if (!PyTuple_Check(spec.ptr())) return false;
  const Py_ssize_t size = PyTuple_GET_SIZE(spec.ptr());
  if (size < 3 || size > 4) return false;
  const long code = PyLong_AsLong(PyTuple_GET_ITEM(spec.ptr(), 0));
  if (code < 0 || code >= kCodes || size != (code == kLowRank ? 4 : 3)) {
    PyErr_Clear();
    return false;
  }
  side.code = static_cast<int>(code);
  side.count = static_cast<int>(size) - 1;
  side.batch = Shape{};
  for (int k = 0; k < side.count; ++k) {
    side.objects[k] = PyTuple_GET_ITEM(spec.ptr(), k + 1);
    side.event_rank[k] = event_rank(side.code, k);
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

DiagParam diag_param(int code) {
  switch (code) {
    case kVar:
      return DiagParam::var;
    case kLogvar:
      return DiagParam::logvar;
    case kPrecision:
      return DiagParam::precision;
    default:
      return DiagParam::stddev;
  }
}

}  // namespace

template <class T>
Gaussians<T> view_of(const Side& side, const Layout& layout, std::int64_t slice, std::int64_t n) {
  const View<T, 2> mean = view<T, 2>(side, 0, layout, slice, n);
  switch (side.code) {
    case kStd:
    case kVar:
    case kLogvar:
    case kPrecision:
      return DiagGaussians<T>{mean, view<T, 2>(side, 1, layout, slice, n), diag_param(side.code)};
    case kScaleTril:
      return FullGaussians<T>{mean, view<T, 3>(side, 1, layout, slice, n), FullParam::scale_tril};
    case kCovariance:
      return FullGaussians<T>{mean, view<T, 3>(side, 1, layout, slice, n), FullParam::covariance};
    case kPrecisionMatrix:
      return FullGaussians<T>{mean, view<T, 3>(side, 1, layout, slice, n),
                              FullParam::precision_matrix};
    case kPacked:
    case kPackedLogDiagonal:
      return FullGaussians<T>{mean,
                              {},
                              FullParam::packed_scale_tril,
                              view<T, 2>(side, 1, layout, slice, n),
                              side.code == kPackedLogDiagonal};
    default:
      return LowRankGaussians<T>{mean, view<T, 3>(side, 1, layout, slice, n),
                                 view<T, 2>(side, 2, layout, slice, n)};
  }
}

template Gaussians<float> view_of<float>(const Side&, const Layout&, std::int64_t, std::int64_t);
template Gaussians<double> view_of<double>(const Side&, const Layout&, std::int64_t, std::int64_t);

}  // namespace gausskl::python
