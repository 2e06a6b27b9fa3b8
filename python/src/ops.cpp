// The operations, one binding each: read the sides in place (calls.hpp), make the result in the
// caller's framework, run the library over the batch without the GIL. The library validates
// everything it is given and its std::invalid_argument and std::runtime_error reach Python as
// ValueError and RuntimeError, its "[op] what, where" message unchanged. A Python int (Status)
// comes back instead of a result when the call is not the library's to make as given.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "arrays.hpp"
#include "calls.hpp"
#include "families.hpp"
#include "gausskl/divergence_kinds.hpp"
#include "gausskl/limits.hpp"
#include "gausskl/ops.hpp"
#include "layout.hpp"
#include "sides.hpp"
#include "util/rules.hpp"
#include "util/show.hpp"

namespace gausskl::python {
namespace {

template <class T>
std::span<T> span_at(const Layout& layout, int operand, std::int64_t slice, std::int64_t count) {
  return {reinterpret_cast<T*>(const_cast<char*>(layout.at(operand, slice))),
          static_cast<std::size_t>(count)};
}

// Rows of a side in a row-wise call: one when the side is constant along the inner axis and the
// other is not (the library then pairs it with every row, preparing it once), else all.
std::int64_t rows_of(const Side& side, const Side* other, const Layout& layout) {
  const bool one = constant_inner(side, layout) && (!other || !constant_inner(*other, layout));
  return one ? 1 : layout.inner();
}

// The library's own message for p and q whose batches do not broadcast, when they have one
// axis each (it says "N = 3 and N = 2"); for more axes, ours.
[[noreturn]] void batches_do_not_broadcast(const char* op, Call& call, int threads) {
  if (call.p.batch.ndim <= 1 && call.q.batch.ndim <= 1) {
    Layout lp(call.p.batch), lq(call.q.batch);
    single_axis(call.p, lp);
    single_axis(call.q, lq);
    Jittered unused;
    const Options o = options_of(threads, 0, 0, 0, false, unused);
    with_type(call.dtype, [&](auto t) {
      using T = decltype(t);
      kl(view_of<T>(call.p, lp, 0, lp.inner()), view_of<T>(call.q, lq, 0, lq.inner()),
         std::span<T>(), o);
    });
  }
  throw std::invalid_argument(std::string("[") + op + "] p and q have batch shapes " +
                              call.p.batch.text() + " and " + call.q.batch.text() +
                              ", which do not broadcast");
}

// Options of any kind (the index into gausskl::divergence_names) and Renyi's alpha (0: unset).
Options divergence_options(int kind, double alpha, int threads, double jitter, std::int64_t budget,
                           double tolerance, bool exclude_self, Jittered& jittered) {
  Options options = options_of(threads, jitter, budget, tolerance, exclude_self, jittered);
  options.divergence = static_cast<Divergence>(kind);
  options.alpha = alpha;
  return options;
}

// The Status of a call that read_call stopped, or the training step's Kept object where the call
// is one (kept_forward): no jitter, no memory budget (the kept gradients are not counted in it).
nb::object stopped(int status, Call& call, int threads, double jitter, std::int64_t budget) {
  if (status == kNeedsGrad && jitter == 0 && budget == 0) {
    nb::object kept = kept_forward(call, threads);
    if (!kept.is_none()) return kept;
  }
  return nb::int_(status);
}

nb::object kl_op(nb::handle p, nb::handle q, int threads, double jitter, std::int64_t budget,
                 nb::handle torch_path, bool for_grad) {
  Call call;
  if (const int status = read_call(p, q, torch_path, for_grad, call)) {
    return stopped(status, call, threads, jitter, budget);
  }
  Shape shape;
  if (!broadcast(call.p.batch, call.q.batch, shape)) batches_do_not_broadcast("kl", call, threads);
  Layout layout(shape);
  add_side(layout, call.p);
  add_side(layout, call.q);
  Result out = make_result(call.api, call.dtype, shape.ndim, shape.dims.data());
  const int o = layout.add_contiguous(out.data, 1, itemsize(call.dtype));
  layout.merge();
  const std::int64_t n = layout.inner();
  const std::int64_t np = rows_of(call.p, &call.q, layout), nq = rows_of(call.q, &call.p, layout);
  Jittered jittered;
  const Options options = options_of(threads, jitter, budget, 0, false, jittered);
  with_type(call.dtype, [&](auto t) {
    using T = decltype(t);
    each_slice(layout, [&](std::int64_t s) {
      kl(view_of<T>(call.p, layout, s, np), view_of<T>(call.q, layout, s, nq),
         span_at<T>(layout, o, s, n), options);
    });
  });
  return with_jitter(std::move(out.object), jitter, jittered);
}

// Row-wise, any kind (as divergence_options).
nb::object divergence_op(nb::handle p, nb::handle q, int kind, double alpha, int threads,
                         double jitter, std::int64_t budget, nb::handle torch_path, bool for_grad) {
  Call call;
  if (const int status = read_call(p, q, torch_path, for_grad, call)) return nb::int_(status);
  Shape shape;
  if (!broadcast(call.p.batch, call.q.batch, shape)) {
    batches_do_not_broadcast("divergence", call, threads);
  }
  Layout layout(shape);
  add_side(layout, call.p);
  add_side(layout, call.q);
  Result out = make_result(call.api, call.dtype, shape.ndim, shape.dims.data());
  const int o = layout.add_contiguous(out.data, 1, itemsize(call.dtype));
  layout.merge();
  const std::int64_t n = layout.inner();
  const std::int64_t np = rows_of(call.p, &call.q, layout), nq = rows_of(call.q, &call.p, layout);
  Jittered jittered;
  const Options options =
      divergence_options(kind, alpha, threads, jitter, budget, 0, false, jittered);
  with_type(call.dtype, [&](auto t) {
    using T = decltype(t);
    each_slice(layout, [&](std::int64_t s) {
      divergence(view_of<T>(call.p, layout, s, np), view_of<T>(call.q, layout, s, nq),
                 span_at<T>(layout, o, s, n), options);
    });
  });
  return with_jitter(std::move(out.object), jitter, jittered);
}

nb::object kl_standard_normal_op(nb::handle p, int threads, double jitter, std::int64_t budget,
                                 nb::handle torch_path, bool for_grad) {
  Call call;
  if (const int status = read_call(p, nb::none(), torch_path, for_grad, call)) {
    return stopped(status, call, threads, jitter, budget);
  }
  const Shape& shape = call.p.batch;
  Layout layout(shape);
  add_side(layout, call.p);
  Result out = make_result(call.api, call.dtype, shape.ndim, shape.dims.data());
  const int o = layout.add_contiguous(out.data, 1, itemsize(call.dtype));
  layout.merge();
  const std::int64_t n = layout.inner();
  Jittered jittered;
  const Options options = options_of(threads, jitter, budget, 0, false, jittered);
  with_type(call.dtype, [&](auto t) {
    using T = decltype(t);
    each_slice(layout, [&](std::int64_t s) {
      kl_standard_normal(view_of<T>(call.p, layout, s, n), span_at<T>(layout, o, s, n), options);
    });
  });
  return with_jitter(std::move(out.object), jitter, jittered);
}

// The q side of an all-pairs call (p itself without q) as one axis of M rows, and p's layout, to
// which the caller adds the results (rows of M or k elements) before merging it.
struct AllPairs {
  Layout q_layout{Shape{}};
  Layout p_layout{Shape{}};
  const Side* q = nullptr;
  std::int64_t m = 0;
};

// False when the q batch (or p's, without q) is not one stride: the package makes it contiguous.
bool plan_all_pairs(Call& call, AllPairs& plan) {
  Side& q = call.has_q ? call.q : call.p;
  plan.q_layout = Layout(q.batch);
  if (!single_axis(q, plan.q_layout)) return false;
  plan.q = &q;
  plan.m = plan.q_layout.inner();
  // Also for q = p: the operands come in the same order, so the side's operand numbers agree.
  plan.p_layout = Layout(call.p.batch);
  add_side(plan.p_layout, call.p);
  return true;
}

// The result shape [*p.batch, *tail].
Shape result_shape(const Shape& p_batch, const std::int64_t* tail, int tail_ndim) {
  Shape s = p_batch;
  for (int k = 0; k < tail_ndim; ++k)
    s.dims[s.ndim++] = tail[k];
  return s;
}

// The library operations an all-pairs binding calls: the KL ones (pairwise_kl, knn_kl) or those
// of options.divergence (pairwise, knn).
enum class Ops { kl, any };

// The library's knn_kl or knn; p null: q = p.
template <class T>
void call_knn(Ops ops, const Gaussians<T>* p, const Gaussians<T>& q, std::int64_t k,
              std::span<std::int64_t> idx, std::span<T> val, const Options& o) {
  const bool kl = ops == Ops::kl;
  if (p) {
    kl ? knn_kl(*p, q, k, idx, val, o) : knn(*p, q, k, idx, val, o);
  } else {
    kl ? knn_kl(q, k, idx, val, o) : knn(q, k, idx, val, o);
  }
}

// out[i..., j...] = D(p_i || q_j) by ops; q None: q = p.
nb::object all_pairs_op(nb::handle p, nb::handle q, Ops ops, const Options& options,
                        const Jittered& jittered, nb::handle torch_path, bool for_grad) {
  Call call;
  if (const int status = read_call(p, q, torch_path, for_grad, call)) return nb::int_(status);
  AllPairs plan;
  if (!plan_all_pairs(call, plan)) return nb::int_(static_cast<int>(kConvert));
  const Shape& qb = plan.q->batch;
  if (call.p.batch.ndim + qb.ndim > kMaxDims) throw std::invalid_argument("too many batch axes");
  const Shape shape = result_shape(call.p.batch, qb.dims.data(), qb.ndim);
  Result out = make_result(call.api, call.dtype, shape.ndim, shape.dims.data());
  Layout& layout = plan.p_layout;
  const int o = layout.add_contiguous(out.data, plan.m, itemsize(call.dtype));
  layout.merge();
  const std::int64_t n = layout.inner(), m = plan.m;
  const bool kl = ops == Ops::kl;
  with_type(call.dtype, [&](auto t) {
    using T = decltype(t);
    const Gaussians<T> qv = view_of<T>(*plan.q, plan.q_layout, 0, m);
    each_slice(layout, [&](std::int64_t s) {
      const std::span<T> dst = span_at<T>(layout, o, s, n * m);
      if (call.has_q) {
        const Gaussians<T> pv = view_of<T>(call.p, layout, s, n);
        kl ? pairwise_kl(pv, qv, dst, options) : pairwise(pv, qv, dst, options);
      } else {
        kl ? pairwise_kl(qv, dst, options) : pairwise(qv, dst, options);
      }
    });
  });
  return with_jitter(std::move(out.object), options.jitter, jittered);
}

// (indices, values) of the k smallest D(p_i || q_j) per i by ops; q None: q = p.
nb::object nearest_op(nb::handle p, nb::handle q, std::int64_t k, Ops ops, const Options& options,
                      const Jittered& jittered, nb::handle torch_path, bool for_grad) {
  Call call;
  if (const int status = read_call(p, q, torch_path, for_grad, call)) return nb::int_(status);
  AllPairs plan;
  if (!plan_all_pairs(call, plan)) return nb::int_(static_cast<int>(kConvert));
  const std::int64_t m = plan.m, max_k = options.exclude_self ? m - 1 : m;
  if (k < 1 || k > max_k || (call.has_q && options.exclude_self)) {
    // The library's rule and message: called with no outputs, it refuses k (or exclude_self).
    Layout& layout = plan.p_layout;
    layout.merge();
    with_type(call.dtype, [&](auto t) {
      using T = decltype(t);
      const Gaussians<T> qv = view_of<T>(*plan.q, plan.q_layout, 0, m);
      const Gaussians<T> pv = call.has_q ? view_of<T>(call.p, layout, 0, layout.inner()) : qv;
      call_knn<T>(ops, call.has_q ? &pv : nullptr, qv, k, {}, {}, options);
    });
    throw std::invalid_argument(std::string(ops == Ops::kl ? "[knn_kl]" : "[knn]") +
                                " k = " + std::to_string(k) + " is out of range");
  }
  const Shape shape = result_shape(call.p.batch, &k, 1);
  Result indices = make_index_result(call.api, shape.ndim, shape.dims.data());
  Result values = make_result(call.api, call.dtype, shape.ndim, shape.dims.data());
  Layout& layout = plan.p_layout;
  const int oi = layout.add_contiguous(indices.data, k, 8);
  const int ov = layout.add_contiguous(values.data, k, itemsize(call.dtype));
  layout.merge();
  const std::int64_t n = layout.inner();
  with_type(call.dtype, [&](auto t) {
    using T = decltype(t);
    const Gaussians<T> qv = view_of<T>(*plan.q, plan.q_layout, 0, m);
    each_slice(layout, [&](std::int64_t s) {
      const auto idx = span_at<std::int64_t>(layout, oi, s, n * k);
      const auto val = span_at<T>(layout, ov, s, n * k);
      const Gaussians<T> pv = call.has_q ? view_of<T>(call.p, layout, s, n) : qv;
      call_knn<T>(ops, call.has_q ? &pv : nullptr, qv, k, idx, val, options);
    });
  });
  nb::object result = nb::make_tuple(std::move(indices.object), std::move(values.object));
  return with_jitter(result, options.jitter, jittered);
}

// A Python callable as Options::progress, called with the GIL after each block of rows; what it
// raises stops the call and reaches the caller (nb::python_error). The callable is held by the
// caller's frame for the call: the function keeps a borrowed pointer, so copies of the Options
// made without the GIL touch no reference count.
void set_progress(Options& options, nb::handle progress) {
  if (progress.is_none()) return;
  options.progress = [fn = progress.ptr()](std::int64_t done, std::int64_t total) {
    nb::gil_scoped_acquire gil;
    const nb::handle callable(fn);
    callable(done, total);
  };
}

nb::object pairwise_kl_op(nb::handle p, nb::handle q, int threads, double jitter, double tolerance,
                          std::int64_t budget, nb::handle torch_path, bool for_grad,
                          nb::handle progress) {
  Jittered jittered;
  Options options = options_of(threads, jitter, budget, tolerance, false, jittered);
  set_progress(options, progress);
  return all_pairs_op(p, q, Ops::kl, options, jittered, torch_path, for_grad);
}

nb::object knn_kl_op(nb::handle p, nb::handle q, std::int64_t k, bool exclude_self, int threads,
                     double jitter, double tolerance, std::int64_t budget, nb::handle torch_path,
                     bool for_grad, nb::handle progress) {
  Jittered jittered;
  Options options = options_of(threads, jitter, budget, tolerance, exclude_self, jittered);
  set_progress(options, progress);
  return nearest_op(p, q, k, Ops::kl, options, jittered, torch_path, for_grad);
}

// All pairs of any kind (as divergence_op); kl is pairwise_kl.
nb::object pairwise_op(nb::handle p, nb::handle q, int kind, double alpha, int threads,
                       double jitter, double tolerance, std::int64_t budget, nb::handle torch_path,
                       bool for_grad, nb::handle progress) {
  Jittered jittered;
  Options options =
      divergence_options(kind, alpha, threads, jitter, budget, tolerance, false, jittered);
  set_progress(options, progress);
  return all_pairs_op(p, q, Ops::any, options, jittered, torch_path, for_grad);
}

// Nearest neighbours by any kind (as divergence_op); kl is knn_kl.
nb::object knn_op(nb::handle p, nb::handle q, std::int64_t k, bool exclude_self, int kind,
                  double alpha, int threads, double jitter, double tolerance, std::int64_t budget,
                  nb::handle torch_path, bool for_grad, nb::handle progress) {
  Jittered jittered;
  Options options =
      divergence_options(kind, alpha, threads, jitter, budget, tolerance, exclude_self, jittered);
  set_progress(options, progress);
  return nearest_op(p, q, k, Ops::any, options, jittered, torch_path, for_grad);
}

// The data addresses of a spec's arrays as the library would read them (tests: nothing copied).
nb::list addresses(nb::handle spec) {
  Side side;
  if (!read_side(spec, side)) throw std::invalid_argument("not readable in place");
  nb::list out;
  for (int k = 0; k < side.count; ++k)
    out.append(reinterpret_cast<std::uintptr_t>(side.arrays[k].data));
  return out;
}

void check_options_op(const char* op, int threads, double jitter, double tolerance,
                      std::int64_t memory_budget) {
  Options options;
  options.threads = threads;
  options.jitter = jitter;
  options.tolerance = tolerance;
  options.memory_budget = memory_budget;
  gausskl::check_options(op, options);
}

}  // namespace

void bind_ops(nb::module_& m) {
  using nb::arg;
  // The library's limits and defaults (gausskl/limits.hpp), for the torch path, which checks and
  // sizes in torch operations, and the package's checks: read here, never restated.
  namespace limits = gausskl::limits;
  m.attr("MAX_TOLERANCE") = limits::max_tolerance;
  m.attr("DEFAULT_TOLERANCE_FLOAT32") = limits::default_tolerance_float32;
  m.attr("DEFAULT_TOLERANCE_FLOAT64") = limits::default_tolerance_float64;
  m.attr("DEFAULT_BLOCK_BYTES") = limits::default_block_bytes;
  m.attr("MIN_VARIANCE") = limits::min_variance;
  m.attr("MAX_VARIANCE") = limits::max_variance;
  m.attr("VARIANCE_RANGE") =
      nb::str(detail::show_range(limits::min_variance, limits::max_variance).c_str());
  // The input rules' words ({field}s for str.format), for the torch path's messages, and numbers
  // as the messages write them.
  nb::dict rules;
  for (const auto& [key, words] : detail::rules::texts)
    rules[nb::str(key.data(), key.size())] = nb::str(words.data(), words.size());
  m.attr("RULES") = rules;
  m.def(
      "show",
      [](double x, bool float32) {
        return float32 ? detail::show(static_cast<float>(x)) : detail::show(x);
      },
      arg("x"), arg("float32"), "A value as the library's messages write it (shortest text).");
  m.def("renyi_infinite_text", &detail::rules::renyi_infinite, arg("where"), arg("pivot"),
        arg("value"), "The library's text of a Renyi divergence of order > 1 that is infinite.");
  m.def("show_bytes", &detail::show_bytes, arg("bytes"),
        "A size as the library's messages write it: \"512 B\", \"12.0 MiB\".");
  // The parameterizations' names (gausskl/types.hpp), in the order of the library's enums.
  nb::list diag_names, full_names;
  for (const char* name : gausskl::diag_param_names)
    diag_names.append(name);
  for (const char* name : gausskl::full_param_names)
    full_names.append(name);
  m.attr("DIAG_PARAMS") = nb::tuple(diag_names);
  m.attr("FULL_PARAMS") = nb::tuple(full_names);
  // The families' codes (families.hpp): one record per code, indexed by it, and the codes by name.
  nb::list forms_list;
  nb::dict codes;
  for (int code = 0; code < kCodes; ++code) {
    const Form& f = forms[code];
    nb::list arrays, ranks;
    for (int k = 0; k < f.count; ++k) {
      arrays.append(f.arrays[k]);
      ranks.append(f.event_rank[k]);
    }
    nb::dict record;
    record["code"] = code;
    record["name"] = f.name;
    record["family"] = family_names[static_cast<int>(f.family)];
    record["cls"] = family_classes[static_cast<int>(f.family)];
    record["param"] = f.param;
    record["log_diagonal"] = f.log_diagonal;
    record["arrays"] = nb::tuple(arrays);
    record["event_ranks"] = nb::tuple(ranks);
    record["factored"] = f.factored;
    record["gradients"] = gradients_names[static_cast<int>(f.gradients)];
    forms_list.append(record);
    codes[f.name] = code;
  }
  m.attr("FAMILIES") = nb::tuple(forms_list);
  m.attr("CODES") = codes;
  // The divergence kinds' properties (gausskl/divergence_kinds.hpp), in the order of DIVERGENCES.
  nb::list kinds;
  for (const DivergenceKind& k : divergence_kinds) {
    nb::dict record;
    record["name"] = k.name;
    record["symmetric"] = k.symmetric;
    record["takes_alpha"] = k.takes_alpha;
    record["range"] = nb::make_tuple(k.min_value, k.max_value);
    kinds.append(record);
  }
  m.attr("KINDS") = nb::tuple(kinds);
  m.def("check_options", &check_options_op, arg("op"), arg("threads"), arg("jitter"),
        arg("tolerance"), arg("memory_budget"),
        "The library's rules for the options (gausskl::check_options): ValueError, its message.");
  m.attr("NEEDS_GRAD") = static_cast<int>(kNeedsGrad);
  m.attr("TORCH_PATH") = static_cast<int>(kTorchPath);
  m.attr("CONVERT") = static_cast<int>(kConvert);
  m.def("kl", &kl_op, arg("p"), arg("q"), arg("threads"), arg("jitter"), arg("memory_budget"),
        arg("torch_path").none(), arg("for_grad") = false,
        "out[...] = KL(p || q) over the broadcast batch; a Status int when not the library's, or "
        "a Kept (the values and their gradients) for a training step's tensors.");
  nb::list divergence_names;
  for (const char* name : gausskl::divergence_names)
    divergence_names.append(name);
  m.attr("DIVERGENCES") = nb::tuple(divergence_names);
  m.def("divergence", &divergence_op, arg("p"), arg("q"), arg("kind"), arg("alpha"), arg("threads"),
        arg("jitter"), arg("memory_budget"), arg("torch_path").none(), arg("for_grad") = false,
        "out[...] = D(p || q) of the kind DIVERGENCES[kind] (alpha: renyi's order, else 0); a "
        "Status int when not the library's.");
  m.def("kl_standard_normal", &kl_standard_normal_op, arg("p"), arg("threads"), arg("jitter"),
        arg("memory_budget"), arg("torch_path").none(), arg("for_grad") = false,
        "out[...] = KL(p || N(0, I)); a Status int when not the library's, or a Kept for a "
        "training step's tensors.");
  m.def("pairwise_kl", &pairwise_kl_op, arg("p"), arg("q").none(), arg("threads"), arg("jitter"),
        arg("tolerance"), arg("memory_budget"), arg("torch_path").none(), arg("for_grad") = false,
        arg("progress").none() = nb::none(),
        "out[i..., j...] = KL(p_i || q_j); q None: q = p. A Status int when not the library's.");
  m.def("pairwise", &pairwise_op, arg("p"), arg("q").none(), arg("kind"), arg("alpha"),
        arg("threads"), arg("jitter"), arg("tolerance"), arg("memory_budget"),
        arg("torch_path").none(), arg("for_grad") = false, arg("progress").none() = nb::none(),
        "out[i..., j...] = D(p_i || q_j) of the kind DIVERGENCES[kind]; q None: q = p. A Status "
        "int when not the library's.");
  m.def("knn", &knn_op, arg("p"), arg("q").none(), arg("k"), arg("exclude_self"), arg("kind"),
        arg("alpha"), arg("threads"), arg("jitter"), arg("tolerance"), arg("memory_budget"),
        arg("torch_path").none(), arg("for_grad") = false, arg("progress").none() = nb::none(),
        "(indices, values) of the k smallest D(p_i || q_j) per i; a Status int when not the "
        "library's.");
  m.def("knn_kl", &knn_kl_op, arg("p"), arg("q").none(), arg("k"), arg("exclude_self"),
        arg("threads"), arg("jitter"), arg("tolerance"), arg("memory_budget"),
        arg("torch_path").none(), arg("for_grad") = false, arg("progress").none() = nb::none(),
        "(indices, values) of the k smallest KL(p_i || q_j) per i; a Status int when not the "
        "library's.");
  m.def("addresses", &addresses, arg("spec"),
        "The data addresses of a spec's arrays as the library reads them.");
}

}  // namespace gausskl::python
