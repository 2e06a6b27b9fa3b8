// The library's gradients (gausskl/gradients.hpp) for gausskl._autograd: given the upstream
// gradient of a result, the gradients of the arrays of p and q that need one, each made C-order
// in the shape [*batch, *event] of the call's (broadcast) batch; the package sums them down to
// the shape of an array that was broadcast.
#include <nanobind/nanobind.h>
#include <nanobind/stl/unique_ptr.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
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

// ---- a training step's kept gradients ----

// Elements per array above which a training step's forward keeps no gradients (they take an
// element each, a double where a sum needs them, and the backward computes them again instead):
// kept, a small step saves a second pass of exponentials (bench/README.md); at 2^20 the four
// arrays of a learned prior hold 16 MiB in float.
constexpr std::int64_t kKeptElements = std::int64_t{1} << 20;

// The values of a row-wise call and each pair's own gradients ([n, d] per wanted array, in the
// order p.mean, p.scale, q.mean, q.scale), for the call's backward. Where every array has a row
// per pair, each gradient is made as a tensor of its array's shape and dtype, which the backward
// scales in place and hands over (nothing to scale for a loss sum(KL)): the forward allocates what
// the backward returns (bench/README.md, "Kept gradients handed over"). Where an array has one row
// paired with every row, every gradient is kept in double, the sum's exact terms, and the backward
// makes new arrays of them. Either way the first backward consumes them; a later one (retain_graph)
// differentiates the inputs again.
struct Kept {
  nb::object values;
  DType dtype = DType::other;
  const dlpack::ExchangeApi* api = nullptr;
  Shape batch;  // the result's shape
  std::int64_t n = 0, d = 0;
  int count = 0;                  // 2 (against N(0, I)) or 4
  int threads = 0;                // the call's, for a second backward
  bool handed = false;            // gradients in `own`, handed over by the first backward
  bool spent = false;             // a backward ran: a later one differentiates the inputs again
  std::array<nb::object, 4> own;  // handed: the gradients, in the call's dtype
  std::array<std::unique_ptr<double[]>, 4> unit;  // not handed: the gradients, in double
  std::array<void*, 4> data{};                    // own's or unit's elements
  std::array<Shape, 4> shape;                     // each array's own shape, its gradient's
  std::array<bool, 4> summed{};  // one row of the array paired with every row: its pairs summed
  std::array<int, 2> codes{};    // p's and q's parameterizations (one: against N(0, I))
  // The input tensors and each one's version counter at the call (torch's `_version`), for a
  // backward that differentiates them again (create_graph, or one after the first): as torch
  // checks its saved tensors. Held here, the autograd context needs no attribute of its own for
  // them (attributes cost a step, bench/README.md); the inputs hold no reference back, no cycle.
  std::array<nb::object, 4> inputs;
  std::array<std::int64_t, 4> versions{};
};

std::int64_t version_of(nb::handle tensor) {
  static PyObject* const name = PyUnicode_InternFromString("_version");  // as requires_grad's
  PyObject* v = PyObject_GetAttr(tensor.ptr(), name);
  if (!v) throw nb::python_error();
  const long long version = PyLong_AsLongLong(v);
  Py_DECREF(v);
  if (version == -1 && PyErr_Occurred()) throw nb::python_error();
  return version;
}

// Whether every array of side is a tensor [..., d], the side given by its diagonal.
bool keepable(const Side& side, std::int64_t d) {
  if (forms[side.code].family != Family::diag) return false;
  for (int k = 0; k < 2; ++k) {
    const Array& a = side.arrays[k];
    if (!a.api || a.ndim < 1 || a.shape[a.ndim - 1] != d) return false;
  }
  return true;
}

// The handed gradients scaled in place by g, then handed over (the tuple's items from 1).
void hand_over(Kept& kept, const Array& g, nb::tuple& out) {
  with_type(kept.dtype, [&](auto t) {
    using T = decltype(t);
    T value{};
    if (broadcast_scalar(g, value) && value == T(1)) return;  // a loss sum(KL)
    std::vector<T> buffer;
    const std::span<const T> upstream = contiguous<T>(g, buffer);
    const auto size = static_cast<std::size_t>(kept.n * kept.d);
    nb::gil_scoped_release release;
    for (int k = 0; k < kept.count; ++k) {
      if (kept.data[k]) scale_rows(upstream, std::span<T>(static_cast<T*>(kept.data[k]), size));
    }
  });
  for (int k = 0; k < kept.count; ++k) {
    // (An empty array's tensor may have no data pointer: its gradient is the empty tensor.)
    nb::object o = kept.own[k].is_valid() ? std::exchange(kept.own[k], {}) : nb::none();
    PyTuple_SET_ITEM(out.ptr(), k + 1, o.release().ptr());
    kept.data[k] = nullptr;
  }
}

// New arrays of the double gradients times g (summed over the pairs for a summed array), which
// are then freed.
void scale_copies(Kept& kept, const Array& g, nb::tuple& out) {
  std::array<Result, 4> results;
  for (int k = 0; k < kept.count; ++k) {
    if (kept.unit[k]) {
      results[k] = make_result(kept.api, kept.dtype, kept.shape[k].ndim, kept.shape[k].dims.data());
    }
  }
  with_type(kept.dtype, [&](auto t) {
    using T = decltype(t);
    std::vector<T> buffer;
    const std::span<const T> upstream = contiguous<T>(g, buffer);
    const auto size = static_cast<std::size_t>(kept.n * kept.d);
    nb::gil_scoped_release release;
    for (int k = 0; k < kept.count; ++k) {
      if (!kept.unit[k]) continue;
      const std::span<const double> unit(kept.unit[k].get(), size);
      T* dst = static_cast<T*>(results[k].data);
      if (kept.summed[k]) {
        sum_scaled_rows(unit, upstream, std::span<T>(dst, static_cast<std::size_t>(kept.d)));
      } else {
        scale_rows(unit, upstream, std::span<T>(dst, size));
      }
    }
  });
  for (int k = 0; k < kept.count; ++k) {
    nb::object o = kept.unit[k] ? std::move(results[k].object) : nb::none();
    PyTuple_SET_ITEM(out.ptr(), k + 1, o.release().ptr());
    kept.unit[k].reset();
    kept.data[k] = nullptr;
  }
}

// One item of `items` per array of the call (p's mean and scale, then q's), as a tuple.
template <class A>
nb::tuple per_array(const Kept& kept, const A& items) {
  nb::list out;
  for (int k = 0; k < kept.count; ++k)
    out.append(items[k]);
  return nb::tuple(out);
}

nb::object kept_backward_op(Kept& kept, nb::handle grad) {
  // create_graph (the caller differentiates torch's way), or a backward already ran.
  if (kept.spent || grad_enabled()) return nb::none();
  const Array g = read_grad(grad, kept.batch);
  // (None for the Kept, then one per array), as the autograd Function's backward returns them.
  nb::tuple out = nb::steal<nb::tuple>(PyTuple_New(kept.count + 1));
  PyTuple_SET_ITEM(out.ptr(), 0, nb::none().release().ptr());
  if (kept.handed) {
    hand_over(kept, g, out);
  } else {
    scale_copies(kept, g, out);
  }
  kept.spent = true;
  return out;
}

}  // namespace

nb::object kept_forward(Call& call, int threads) {
  const Array& mean = call.p.arrays[0];
  const std::int64_t d = mean.ndim > 0 ? mean.shape[mean.ndim - 1] : -1;
  Shape batch = call.p.batch;
  if (!keepable(call.p, d) || (call.has_q && !keepable(call.q, d)) ||
      (call.has_q && !broadcast(call.p.batch, call.q.batch, batch))) {
    return nb::none();
  }
  Layout layout(batch);
  add_side(layout, call.p);
  if (call.has_q) add_side(layout, call.q);
  layout.merge();
  const std::int64_t n = layout.inner();
  // One library call: the batch one axis, each array with its own row per pair or one row for
  // every pair (a [D] prior against [B, D] latents).
  if (layout.slices() != 1 || d > kKeptElements ||
      n > kKeptElements / std::max<std::int64_t>(d, 1)) {
    return nb::none();
  }
  auto kept = std::make_unique<Kept>();
  kept->dtype = call.dtype;
  kept->api = call.api;
  kept->batch = batch;
  kept->n = n;
  kept->d = d;
  kept->count = call.has_q ? 4 : 2;
  kept->threads = threads;
  kept->codes = {call.p.code, call.has_q ? call.q.code : -1};
  const auto size = static_cast<std::size_t>(n * d);
  const Side* sides[2] = {&call.p, &call.q};
  std::array<bool, 4> wanted{};
  for (int k = 0; k < kept->count; ++k) {
    const Side& side = *sides[k / 2];
    kept->inputs[k] = nb::borrow(side.objects[k % 2]);
    kept->versions[k] = version_of(side.objects[k % 2]);
    wanted[k] = requires_grad(side.objects[k % 2]);
    if (!wanted[k]) continue;
    const Array& a = side.arrays[k % 2];
    Shape& own = kept->shape[k];
    own.ndim = a.ndim;
    std::copy(a.shape.begin(), a.shape.begin() + a.ndim, own.dims.begin());
    kept->summed[k] = own.count() != n * d;  // one row (an expanded [B, D] has a row per pair)
  }
  kept->handed = std::none_of(kept->summed.begin(), kept->summed.end(), std::identity{});
  for (int k = 0; k < kept->count; ++k) {
    if (!wanted[k]) continue;
    if (kept->handed) {
      Result r = make_result(call.api, call.dtype, kept->shape[k].ndim, kept->shape[k].dims.data());
      kept->own[k] = std::move(r.object);
      kept->data[k] = r.data;
    } else {
      kept->unit[k] = std::make_unique_for_overwrite<double[]>(std::max<std::size_t>(size, 1));
      kept->data[k] = kept->unit[k].get();
    }
  }
  Result values = make_result(call.api, call.dtype, batch.ndim, batch.dims.data());
  Jittered unused;
  const Options options = options_of(threads, 0, 0, 0, false, unused);
  with_type(call.dtype, [&](auto t) {
    using T = decltype(t);
    const std::span<T> out(static_cast<T*>(values.data), static_cast<std::size_t>(n));
    const Gaussians<T> pv = view_of<T>(call.p, layout, 0, n);
    // The gradients in T (handed over) or in double (S).
    const auto run = [&](auto s) {
      using S = decltype(s);
      const auto span = [&](int k) {
        return std::span<S>(static_cast<S*>(kept->data[k]), kept->data[k] ? size : 0);
      };
      nb::gil_scoped_release release;
      if (call.has_q) {
        kl_with_gradients(pv, view_of<T>(call.q, layout, 0, n), out, Gradients<S>{span(0), span(1)},
                          Gradients<S>{span(2), span(3)}, options);
      } else {
        kl_standard_normal_with_gradients(pv, out, Gradients<S>{span(0), span(1)}, options);
      }
    };
    if (kept->handed) {
      run(T{});
    } else {
      run(double{});
    }
  });
  kept->values = std::move(values.object);
  return nb::cast(std::move(kept));
}

void bind_gradients(nb::module_& m) {
  using nb::arg;
  m.def("kl_backward", &kl_backward_op, arg("p"), arg("q").none(), arg("grad"), arg("needs"),
        arg("threads"),
        "Gradients of sum(grad * kl(p, q)) (q None: N(0, I)) for the arrays flagged in needs, "
        "each [*batch, *event]; None for the others.");
  // A Kept lives in a torch autograd graph (its node's context), which a program may still hold
  // when the interpreter exits, after nanobind's check for instances still alive: a leak warning
  // there would be noise in the users' programs.
  nb::set_leak_warnings(false);
  nb::class_<Kept>(m, "Kept",
                   "A training step's row-wise KL with each row's own gradients, made by kl and "
                   "kl_standard_normal for tensors that require grad.")
      .def(
          "take_values", [](Kept& k) { return std::exchange(k.values, nb::none()); },
          "The result, handed over once: the result's autograd node holds the Kept, which then "
          "holds no reference back to it (a cycle only the garbage collector would free, with "
          "the kept gradients).")
      .def_prop_ro(
          "codes",
          [](const Kept& k) {
            return k.count == 4 ? nb::make_tuple(k.codes[0], k.codes[1])
                                : nb::make_tuple(k.codes[0]);
          },
          "The parameterization codes of p and q (p's alone against N(0, I)).")
      .def_prop_ro(
          "versions", [](const Kept& k) { return per_array(k, k.versions); },
          "Each array's version counter (torch's _version) at the call, in the order of p's mean "
          "and scale, then q's.")
      .def_ro("threads", &Kept::threads, "The call's threads, for a second backward.")
      .def_prop_ro(
          "inputs", [](const Kept& k) { return per_array(k, k.inputs); },
          "The call's tensors, in the order of p's mean and scale, then q's.");
  m.def("kept_backward", &kept_backward_op, arg("kept"), arg("grad"),
        "The gradients of sum(grad * values), values the result of the call that made kept: "
        "(None, then one per array: p's mean and scale, then q's), each [*batch, D], None for "
        "those that did not require grad; as an autograd Function's backward returns them. The "
        "first backward has them: None for a later one (retain_graph), and where grad mode is on "
        "(a backward with create_graph, whose gradients must be differentiable).");
  m.def("pairwise_kl_backward", &pairwise_kl_backward_op, arg("p"), arg("q").none(), arg("grad"),
        arg("needs"), arg("threads"),
        "Gradients of sum(grad * pairwise_kl(p, q)) (q None: q = p) for the arrays flagged in "
        "needs, each [*batch, *event]; None for the others. A grad of one value broadcast (every "
        "stride 0, as a sum's or a mean's) is taken as that value, with no [N, M] copy.");
}

}  // namespace gausskl::python
