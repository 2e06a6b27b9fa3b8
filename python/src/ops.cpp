// One binding per operation. Outputs are allocated by the caller (in its own framework) and
// passed in C-contiguous; the GIL is released for the whole computation, which touches no
// Python object. The library's std::invalid_argument arrives in Python as ValueError and
// std::runtime_error as RuntimeError, with the "[op] what, where" message unchanged.
// Each operation returns how many p and q distributions were factored with the jitter.
// tolerance and memory_budget are Options' as given; the library checks their ranges.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "batch.hpp"
#include "gausskl/ops.hpp"

namespace gausskl::python {
namespace {

template <class U>
using Out1 = nb::ndarray<U, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class U>
using Out2 = nb::ndarray<U, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

template <class U, class Array>
std::span<U> span_of(Array& a) {
  return {a.data(), a.size()};
}

// The numbers of p and q distributions that needed the jitter (Options::on_jitter).
using Jittered = std::pair<std::int64_t, std::int64_t>;

// on_jitter runs while the GIL is released, so it only counts: Python hears of it from the
// operation's return value.
Options options_of(int threads, double jitter, std::int64_t memory_budget, Jittered& jittered,
                   double tolerance = 0, bool exclude_self = false) {
  Options o;
  o.threads = threads;
  o.exclude_self = exclude_self;
  o.memory_budget = memory_budget;
  o.tolerance = tolerance;
  o.jitter = jitter;
  o.on_jitter = [&jittered](const char* side, std::int64_t count) {
    (side[0] == 'q' ? jittered.second : jittered.first) += count;
  };
  return o;
}

// p and q must share one scalar type; the Python layer makes them agree, so a mismatch here is
// a bug there, reported as TypeError (while the GIL is held).
void check_same_type(const char* op, const Batch& p, const Batch* q) {
  if (q && q->is_double() != p.is_double()) {
    throw nb::type_error((std::string("[") + op + "] p and q must have the same dtype").c_str());
  }
}

// Calls f with p's and q's views in their scalar type.
template <class F>
void with_views(const Batch& p, const Batch* q, F&& f) {
  if (p.is_double()) {
    f(*p.get<double>(), q ? q->get<double>() : nullptr);
  } else {
    f(*p.get<float>(), q ? q->get<float>() : nullptr);
  }
}

template <class U>
Jittered kl_op(const Batch& p, const Batch& q, Out1<U> out, int threads, double jitter,
               std::int64_t memory_budget) {
  check_same_type("kl", p, &q);
  Jittered jittered;
  nb::gil_scoped_release release;
  with_views(p, &q, [&](const auto& gp, const auto* gq) {
    kl(gp, *gq, span_of<U>(out), options_of(threads, jitter, memory_budget, jittered));
  });
  return jittered;
}

template <class U>
Jittered kl_standard_normal_op(const Batch& p, Out1<U> out, int threads, double jitter,
                               std::int64_t memory_budget) {
  Jittered jittered;
  nb::gil_scoped_release release;
  with_views(p, nullptr, [&](const auto& gp, const auto*) {
    kl_standard_normal(gp, span_of<U>(out), options_of(threads, jitter, memory_budget, jittered));
  });
  return jittered;
}

template <class U>
Jittered pairwise_kl_op(const Batch& p, const Batch* q, Out2<U> out, int threads, double jitter,
                        double tolerance, std::int64_t memory_budget) {
  check_same_type("pairwise_kl", p, q);
  Jittered jittered;
  nb::gil_scoped_release release;
  with_views(p, q, [&](const auto& gp, const auto* gq) {
    const Options o = options_of(threads, jitter, memory_budget, jittered, tolerance);
    if (gq) {
      pairwise_kl(gp, *gq, span_of<U>(out), o);
    } else {
      pairwise_kl(gp, span_of<U>(out), o);
    }
  });
  return jittered;
}

template <class U>
Jittered knn_kl_op(const Batch& p, const Batch* q, std::int64_t k, Out2<std::int64_t> indices,
                   Out2<U> values, bool exclude_self, int threads, double jitter, double tolerance,
                   std::int64_t memory_budget) {
  check_same_type("knn_kl", p, q);
  Jittered jittered;
  nb::gil_scoped_release release;
  with_views(p, q, [&](const auto& gp, const auto* gq) {
    const Options o = options_of(threads, jitter, memory_budget, jittered, tolerance, exclude_self);
    if (gq) {
      knn_kl(gp, *gq, k, span_of<std::int64_t>(indices), span_of<U>(values), o);
    } else {
      knn_kl(gp, k, span_of<std::int64_t>(indices), span_of<U>(values), o);
    }
  });
  return jittered;
}

template <class U>
void bind_ops(nb::module_& m) {
  // noconvert on outputs: a converted output would be a temporary copy and the results lost.
  m.def("kl", &kl_op<U>, nb::arg("p"), nb::arg("q"), nb::arg("out").noconvert(),
        nb::arg("threads") = 0, nb::arg("jitter") = 0.0, nb::arg("memory_budget") = 0,
        "out[i] = KL(p_i || q_i); N = 1 on either side broadcasts. Returns how many p and q "
        "distributions were factored with jitter added to the diagonal.");
  m.def("kl_standard_normal", &kl_standard_normal_op<U>, nb::arg("p"), nb::arg("out").noconvert(),
        nb::arg("threads") = 0, nb::arg("jitter") = 0.0, nb::arg("memory_budget") = 0,
        "out[i] = KL(p_i || N(0, I)). Returns (count, 0): how many p distributions were "
        "factored with jitter added to the diagonal.");
  m.def("pairwise_kl", &pairwise_kl_op<U>, nb::arg("p"), nb::arg("q").none(),
        nb::arg("out").noconvert(), nb::arg("threads") = 0, nb::arg("jitter") = 0.0,
        nb::arg("tolerance") = 0.0, nb::arg("memory_budget") = 0,
        "out[i, j] = KL(p_i || q_j); q = None means q = p. Returns how many p and q "
        "distributions were factored with jitter added to the diagonal (q = p: counted as p).");
  m.def("knn_kl", &knn_kl_op<U>, nb::arg("p"), nb::arg("q").none(), nb::arg("k"),
        nb::arg("indices").noconvert(), nb::arg("values").noconvert(),
        nb::arg("exclude_self") = false, nb::arg("threads") = 0, nb::arg("jitter") = 0.0,
        nb::arg("tolerance") = 0.0, nb::arg("memory_budget") = 0,
        "The k smallest KL(p_i || q_j) per i, ascending, ties to the lower j. Returns how many p "
        "and q distributions were factored with jitter on the diagonal (q = p: counted as p).");
}

}  // namespace

void bind_all_ops(nb::module_& m) {
  m.attr("MAX_TOLERANCE") = Options::max_tolerance;
  bind_ops<float>(m);
  bind_ops<double>(m);
}

}  // namespace gausskl::python
