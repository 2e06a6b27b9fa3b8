// The library's gradients (gausskl/gradients.hpp) for gausskl._autograd: given the upstream
// gradient of a result, the gradients of the arrays of p and q that need one, each made C-order
// in the shape [*batch, *event] of the call's (broadcast) batch; the package sums them down to
// the shape of an array that was broadcast.
#include <nanobind/nanobind.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "calls.hpp"
#include "gausskl/gradients.hpp"
#include "layout.hpp"
#include "sides.hpp"

namespace gausskl::python {
namespace {

// The upstream gradient in C order as T (copied only when its layout or dtype differ), row by
// row along its last axis.
template <class T>
std::span<const T> contiguous(const Array& g, std::vector<T>& buffer) {
  std::int64_t count = 1;
  bool c_order = true;
  for (int k = g.ndim - 1; k >= 0; --k) {
    c_order &= g.shape[k] == 1 || g.strides[k] == count;
    count *= g.shape[k];
  }
  const bool same = (g.dtype == DType::f64) == std::is_same_v<T, double>;
  if ((c_order && same) || count == 0) {
    return {static_cast<const T*>(g.data), static_cast<std::size_t>(count)};
  }
  buffer.resize(static_cast<std::size_t>(count));
  const int last = g.ndim - 1;
  const std::int64_t inner = last >= 0 ? g.shape[last] : 1, step = last >= 0 ? g.strides[last] : 0;
  const auto copy_row = [&](const auto* from, T* to) {
    for (std::int64_t j = 0; j < inner; ++j)
      to[j] = static_cast<T>(from[j * step]);
  };
  std::array<std::int64_t, kMaxDims> index{};
  for (std::int64_t row = 0; row < count / inner; ++row) {
    std::int64_t offset = 0;
    for (int k = 0; k < last; ++k)
      offset += index[k] * g.strides[k];
    T* to = buffer.data() + row * inner;
    if (g.dtype == DType::f64) {
      copy_row(static_cast<const double*>(g.data) + offset, to);
    } else {
      copy_row(static_cast<const float*>(g.data) + offset, to);
    }
    for (int k = last - 1; k >= 0 && ++index[k] == g.shape[k]; --k)
      index[k] = 0;
  }
  return {buffer.data(), buffer.size()};
}

// Whether g holds one value at every index (every stride 0): the gradient of a sum or a mean, as
// torch's autograd hands it over (an expanded scalar); that value is then in `value`.
template <class T>
bool broadcast_scalar(const Array& g, T& value) {
  std::int64_t count = 1;
  for (int k = 0; k < g.ndim; ++k) {
    if (g.shape[k] > 1 && g.strides[k] != 0) return false;
    count *= g.shape[k];
  }
  if (count == 0) return false;
  value = g.dtype == DType::f64 ? static_cast<T>(*static_cast<const double*>(g.data))
                                : static_cast<T>(*static_cast<const float*>(g.data));
  return true;
}

Array read_grad(nb::handle grad, const Shape& shape) {
  Array g;
  Shape got;
  if (!read_array(grad, g) || g.dtype == DType::other || !g.cpu || !batch_shape(g, 0, got) ||
      !(got == shape)) {
    throw std::invalid_argument("[backward] the upstream gradient must be a float array of shape " +
                                shape.text() + " in host memory");
  }
  return g;
}

// What one side's gradients are made in: per array, a result [*shape, *event] (or none).
struct SideGrads {
  std::array<Result, 3> results;
  std::array<int, 3> operand{-1, -1, -1};
  std::array<std::int64_t, 3> row{};
};

SideGrads make_grads(const Call& call, const Side& side, const Shape& shape, nb::handle needs,
                     int first, Layout& layout) {
  SideGrads g;
  for (int k = 0; k < side.count; ++k) {
    if (PyObject_IsTrue(PyTuple_GET_ITEM(needs.ptr(), first + k)) != 1) continue;
    const Array& a = side.arrays[k];
    Shape s = shape;
    std::int64_t row = 1;
    for (int e = a.ndim - side.event_rank[k]; e < a.ndim; ++e) {
      s.dims[s.ndim++] = a.shape[e];
      row *= a.shape[e];
    }
    g.results[k] = make_result(call.api, call.dtype, s.ndim, s.dims.data());
    g.row[k] = row;
    g.operand[k] = layout.add_contiguous(g.results[k].data, row, itemsize(call.dtype));
  }
  return g;
}

template <class T>
Gradients<T> spans_at(const SideGrads& g, const Layout& layout, std::int64_t slice,
                      std::int64_t n) {
  Gradients<T> out;
  const auto at = [&](int k) {
    if (g.operand[k] < 0) return std::span<T>();
    return std::span<T>(reinterpret_cast<T*>(const_cast<char*>(layout.at(g.operand[k], slice))),
                        static_cast<std::size_t>(n * g.row[k]));
  };
  out.mean = at(0);
  out.scale = at(1);
  return out;
}

nb::tuple results_of(const Side& side, SideGrads& g, const Side* other, SideGrads* og) {
  nb::list out;
  for (int k = 0; k < side.count; ++k)
    out.append(g.operand[k] >= 0 ? g.results[k].object : nb::none());
  for (int k = 0; other && k < other->count; ++k)
    out.append(og->operand[k] >= 0 ? og->results[k].object : nb::none());
  return nb::tuple(out);
}

nb::object kl_backward_op(nb::handle p, nb::handle q, nb::handle grad, nb::handle needs,
                          int threads) {
  Call call;
  if (const int status = read_call(p, q, nb::bool_(false), true, call)) return nb::int_(status);
  Shape shape;
  if (call.has_q && !broadcast(call.p.batch, call.q.batch, shape)) {
    throw std::invalid_argument("[kl_backward] p and q batches do not broadcast");
  }
  if (!call.has_q) shape = call.p.batch;
  const Array g = read_grad(grad, shape);
  Layout layout(shape);
  add_side(layout, call.p);
  if (call.has_q) add_side(layout, call.q);
  SideGrads gp = make_grads(call, call.p, shape, needs, 0, layout);
  SideGrads gq;
  if (call.has_q) gq = make_grads(call, call.q, shape, needs, call.p.count, layout);
  layout.merge();
  const std::int64_t n = layout.inner();
  Jittered unused;
  const Options options = options_of(threads, 0, 0, 0, false, unused);
  with_type(call.dtype, [&](auto t) {
    using T = decltype(t);
    std::vector<T> buffer;
    const std::span<const T> upstream = contiguous<T>(g, buffer);
    each_slice(layout, [&](std::int64_t s) {
      const std::span<const T> gs =
          upstream.subspan(static_cast<std::size_t>(s * n), static_cast<std::size_t>(n));
      if (call.has_q) {
        kl_backward(view_of<T>(call.p, layout, s, n), view_of<T>(call.q, layout, s, n), gs,
                    spans_at<T>(gp, layout, s, n), spans_at<T>(gq, layout, s, n), options);
      } else {
        kl_standard_normal_backward(view_of<T>(call.p, layout, s, n), gs,
                                    spans_at<T>(gp, layout, s, n), options);
      }
    });
  });
  return results_of(call.p, gp, call.has_q ? &call.q : nullptr, &gq);
}

nb::object pairwise_kl_backward_op(nb::handle p, nb::handle q, nb::handle grad, nb::handle needs,
                                   int threads) {
  Call call;
  if (const int status = read_call(p, q, nb::bool_(false), true, call)) return nb::int_(status);
  Layout lp(call.p.batch);
  if (!single_axis(call.p, lp)) return nb::int_(static_cast<int>(kConvert));
  Layout lq(call.has_q ? call.q.batch : Shape{});
  if (call.has_q && !single_axis(call.q, lq)) return nb::int_(static_cast<int>(kConvert));
  const Shape& qb = call.has_q ? call.q.batch : call.p.batch;
  Shape shape = call.p.batch;
  for (int k = 0; k < qb.ndim; ++k)
    shape.dims[shape.ndim++] = qb.dims[k];
  const Array g = read_grad(grad, shape);
  // Gradients over each side's own batch, one axis each: layouts made afresh for the results.
  Layout rp(call.p.batch), rq(qb);
  add_side(rp, call.p);
  SideGrads gp = make_grads(call, call.p, call.p.batch, needs, 0, rp);
  rp.merge();
  SideGrads gq;
  if (call.has_q) {
    add_side(rq, call.q);
    gq = make_grads(call, call.q, qb, needs, call.p.count, rq);
    rq.merge();
  }
  const std::int64_t n = lp.inner(), m = call.has_q ? lq.inner() : n;
  Jittered unused;
  const Options options = options_of(threads, 0, 0, 0, false, unused);
  with_type(call.dtype, [&](auto t) {
    using T = decltype(t);
    // A grad of one value is passed as that value: no [N, M] copy of it.
    T value{};
    const bool one_value = broadcast_scalar(g, value);
    std::vector<T> buffer;
    const std::span<const T> upstream = one_value ? std::span<const T>{} : contiguous<T>(g, buffer);
    const Gaussians<T> pv = view_of<T>(call.p, lp, 0, n);
    each_slice(lp, [&](std::int64_t) {
      const Gradients<T> dp = spans_at<T>(gp, rp, 0, n);
      if (call.has_q) {
        const Gaussians<T> qv = view_of<T>(call.q, lq, 0, m);
        const Gradients<T> dq = spans_at<T>(gq, rq, 0, m);
        if (one_value) {
          pairwise_kl_sum_backward(pv, qv, value, dp, dq, options);
        } else {
          pairwise_kl_backward(pv, qv, upstream, dp, dq, options);
        }
      } else if (one_value) {
        pairwise_kl_sum_backward(pv, value, dp, options);
      } else {
        pairwise_kl_backward(pv, upstream, dp, options);
      }
    });
  });
  return results_of(call.p, gp, call.has_q ? &call.q : nullptr, &gq);
}

}  // namespace

void bind_gradients(nb::module_& m) {
  using nb::arg;
  m.def("kl_backward", &kl_backward_op, arg("p"), arg("q").none(), arg("grad"), arg("needs"),
        arg("threads"),
        "Gradients of sum(grad * kl(p, q)) (q None: N(0, I)) for the arrays flagged in needs, "
        "each [*batch, *event]; None for the others.");
  m.def("pairwise_kl_backward", &pairwise_kl_backward_op, arg("p"), arg("q").none(), arg("grad"),
        arg("needs"), arg("threads"),
        "Gradients of sum(grad * pairwise_kl(p, q)) (q None: q = p) for the arrays flagged in "
        "needs, each [*batch, *event]; None for the others. A grad of one value broadcast (every "
        "stride 0, as a sum's or a mean's) is taken as that value, with no [N, M] copy.");
}

}  // namespace gausskl::python
