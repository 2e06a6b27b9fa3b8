// The gradient operations (gausskl/gradients.hpp): plan and validate as the forward operations
// do, then hand the plan to the CPU backend.
#include <algorithm>
#include <new>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/plan.hpp"
#include "core/validate.hpp"
#include "cpu/backend.hpp"
#include "gausskl/families.hpp"
#include "gausskl/gradients.hpp"
#include "gausskl/ops.hpp"

namespace gausskl {
namespace {

using detail::check_size;
using detail::fail;
using detail::show;

template <class T>
void check_supported(const char* op, const char* side, const Gaussians<T>& g) {
  if (!has_gradients(g)) {
    fail(op, std::string(side) + " is a " + describe(g).name +
                 " batch; the library computes gradients of diagonal batches and of full "
                 "batches given by scale_tril or packed_scale_tril");
  }
}

// The families with the library's diagonal gradients: every gradient operation's kernels.
template <class T>
bool has_diag_gradients(const Gaussians<T>& g) {
  return describe(g).gradients == LibraryGradients::diag;
}

template <class T, class S>
void check_gradients(const char* op, const char* side, const Gaussians<T>& g,
                     const Gradients<S>& grads) {
  const auto check = [&](const char* role, std::size_t got, std::int64_t expected) {
    if (got != 0 && static_cast<std::int64_t>(got) != expected) {
      fail(op, std::string("the gradient of ") + side + "." + role + " has " + show(got) +
                   " elements, expected " + show(expected) + " (or 0: not wanted)");
    }
  };
  check("mean", grads.mean.size(), g.n() * g.d());
  check("scale", grads.scale.size(), g.n() * describe(g).scale_row);  // validated: no overflow
}

template <class F>
void run_backend(const char* op, std::int64_t n, std::int64_t d, F&& f) {
  try {
    f();
  } catch (const std::bad_alloc&) {
    detail::fail_workspace(op, d, n);
  }
}

template <class T>
void kl_backward_impl(const Gaussians<T>& p, const Gaussians<T>& q, std::span<const T> grad,
                      const Gradients<T>& dp, const Gradients<T>& dq, const Options& options) {
  const char* op = "kl_backward";
  check_options(op, options);
  detail::require_kl(op, options);
  // Full batches are validated on the workers the computation itself will use, so that small
  // calls (a batch of 5 full-covariance pairs at d = 3) start none.
  const int workers = detail::plan_rowwise(p, &q, std::max(p.n(), q.n()), options).workers;
  detail::validate(op, "p", p, workers);
  detail::validate(op, "q", q, workers);
  detail::validate_same_d(op, p, q);
  const std::int64_t n = detail::broadcast_rows(op, p, q);
  check_size(op, "grad", grad.size(), n);
  check_supported(op, "p", p);
  check_supported(op, "q", q);
  if (describe(p).family != describe(q).family) {
    fail(op, std::string("p is a ") + describe(p).name + " batch and q a " + describe(q).name +
                 " one; the library's gradients take two batches of the same family");
  }
  check_gradients(op, "p", p, dp);
  check_gradients(op, "q", q, dq);
  run_backend(op, n, p.d(),
              [&] { cpu::kl_rowwise_backward(p, &q, n, grad.data(), dp, dq, workers); });
}

template <class T>
void kl_standard_normal_backward_impl(const Gaussians<T>& p, std::span<const T> grad,
                                      const Gradients<T>& dp, const Options& options) {
  const char* op = "kl_standard_normal_backward";
  check_options(op, options);
  detail::require_kl(op, options);
  const Gaussians<T>* const standard = nullptr;  // q = N(0, I)
  const int workers = detail::plan_rowwise(p, standard, p.n(), options).workers;
  detail::validate(op, "p", p, workers);
  check_size(op, "grad", grad.size(), p.n());
  check_supported(op, "p", p);
  check_gradients(op, "p", p, dp);
  run_backend(op, p.n(), p.d(), [&] {
    cpu::kl_rowwise_backward<T>(p, nullptr, p.n(), grad.data(), dp, Gradients<T>{}, workers);
  });
}

// kl (q a batch) or kl_standard_normal (q null) with each row's own gradients.
template <class T, class S>
void with_gradients_impl(const Gaussians<T>& p, const Gaussians<T>* q, std::span<T> out,
                         const Gradients<S>& dp, const Gradients<S>& dq, const Options& options) {
  const char* op = q ? "kl" : "kl_standard_normal";
  check_options(op, options);
  detail::require_kl(op, options);
  const std::int64_t rows = q ? std::max(p.n(), q->n()) : p.n();
  const int workers = detail::plan_rowwise(p, q, rows, options).workers;
  detail::validate(op, "p", p, workers);
  if (q) {
    detail::validate(op, "q", *q, workers);
    detail::validate_same_d(op, p, *q);
  }
  const std::int64_t n = q ? detail::broadcast_rows(op, p, *q) : p.n();
  check_size(op, "out", out.size(), n);
  if (!has_diag_gradients(p) || (q && !has_diag_gradients(*q))) {
    fail(op,
         "the values with their gradients take diagonal batches; take kl and then "
         "kl_backward for other families");
  }
  // The diagonal kernels' views.
  const auto* pd = &std::get<DiagGaussians<T>>(p.variant());
  const auto* qd = q ? &std::get<DiagGaussians<T>>(q->variant()) : nullptr;
  // A side of one row paired with every row of the other is read with row stride 0: its
  // gradients are then per pair, [n, D] (sum_scaled_rows makes its own).
  const auto paired = [n](const DiagGaussians<T>& g) {
    DiagGaussians<T> stretched = g;
    if (g.mean.shape[0] == n) return stretched;
    for (View<T, 2>* v : {&stretched.mean, &stretched.scale}) {
      v->shape[0] = n;
      v->strides[0] = 0;
    }
    return stretched;
  };
  const DiagGaussians<T> pn = paired(*pd);
  const std::optional<DiagGaussians<T>> qn = qd ? std::optional(paired(*qd)) : std::nullopt;
  check_gradients(op, "p", Gaussians<T>(pn), dp);
  if (q) check_gradients(op, "q", Gaussians<T>(*qn), dq);
  run_backend(op, n, p.d(), [&] {
    cpu::kl_rowwise_with_gradients(pn, qn ? &*qn : nullptr, n, out.data(), dp, dq, workers);
  });
}

// scale_rows' rule: `what` (size elements) holds whole rows of grad's n; their length.
std::int64_t rows_of_grad(const char* what, std::size_t size, std::size_t n) {
  if (n == 0 ? size != 0 : size % n != 0) {
    fail("scale_rows",
         std::string(what) + " has " + show(size) + " elements, not rows of grad's " + show(n));
  }
  return n == 0 ? 0 : static_cast<std::int64_t>(size / n);
}

template <class T>
void scale_rows_impl(std::span<const double> unit, std::span<const T> grad, std::span<T> dst) {
  const std::int64_t row = rows_of_grad("unit", unit.size(), grad.size());
  if (dst.size() != unit.size()) {
    fail("scale_rows",
         "dst has " + show(dst.size()) + " elements, expected " + show(unit.size()) + " (as unit)");
  }
  const auto n = static_cast<std::int64_t>(grad.size());
  if (n > 0) cpu::scale_rows(unit.data(), n, row, grad.data(), dst.data());
}

template <class T>
void scale_rows_in_place_impl(std::span<const T> grad, std::span<T> rows) {
  const std::int64_t row = rows_of_grad("rows", rows.size(), grad.size());
  const auto n = static_cast<std::int64_t>(grad.size());
  if (n > 0) cpu::scale_rows_in_place(rows.data(), n, row, grad.data());
}

template <class T>
void sum_scaled_rows_impl(std::span<const double> unit, std::span<const T> grad, std::span<T> dst) {
  const char* op = "sum_scaled_rows";
  const bool rows = grad.empty()
                        ? unit.empty()
                        : unit.size() % grad.size() == 0 && unit.size() / grad.size() == dst.size();
  if (!rows) {
    fail(op, "unit has " + show(unit.size()) + " elements, not " + show(grad.size()) +
                 " rows (grad) of " + show(dst.size()) + " (dst)");
  }
  cpu::sum_scaled_rows(unit.data(), static_cast<std::int64_t>(grad.size()),
                       static_cast<std::int64_t>(dst.size()), grad.data(), dst.data());
}

// grad: [N, M] values, or none with sum_grad the one value of every pair
// (pairwise_kl_sum_backward).
template <class T>
void pairwise_backward_impl(const Gaussians<T>& p, const Gaussians<T>* q,
                            std::optional<std::span<const T>> grad, T sum_grad,
                            const Gradients<T>& dp, const Gradients<T>& dq,
                            const Options& options) {
  const char* op = "pairwise_kl_backward";
  check_options(op, options);
  detail::require_kl(op, options);
  // Validated on the forward's workers (the gradients' own depend on the grad's values).
  const int workers = detail::plan_pairs(p, q, options).backend.workers;
  detail::validate(op, "p", p, workers);
  if (q) {
    detail::validate(op, "q", *q, workers);
    detail::validate_same_d(op, p, *q);
  }
  const std::int64_t m = q ? q->n() : p.n();
  if (grad) check_size(op, "grad", grad->size(), detail::checked_mul(op, p.n(), m, "N * M"));
  if (!has_diag_gradients(p) || (q && !has_diag_gradients(*q))) {
    fail(op, "the library computes gradients of all-pairs KL between diagonal batches only");
  }
  // The diagonal kernels' views.
  const auto* pd = &std::get<DiagGaussians<T>>(p.variant());
  const auto* qd = q ? &std::get<DiagGaussians<T>>(q->variant()) : pd;
  check_gradients(op, "p", p, dp);
  if (q) check_gradients(op, "q", *q, dq);
  const cpu::PairsBackwardConfig plan =
      detail::plan_pairs_backward(p.n(), m, p.d(), q == nullptr, options);
  run_backend(op, p.n(), p.d(), [&] {
    cpu::pairwise_diag_backward(*pd, q ? qd : nullptr, grad ? grad->data() : nullptr,
                                static_cast<double>(sum_grad), dp, dq, plan);
  });
}

}  // namespace

#define GAUSSKL_DEFINE(T)                                                                          \
  void kl_backward(const Gaussians<T>& p, const Gaussians<T>& q, std::span<const T> grad,          \
                   const Gradients<T>& dp, const Gradients<T>& dq, const Options& options) {       \
    kl_backward_impl(p, q, grad, dp, dq, options);                                                 \
  }                                                                                                \
  void kl_standard_normal_backward(const Gaussians<T>& p, std::span<const T> grad,                 \
                                   const Gradients<T>& dp, const Options& options) {               \
    kl_standard_normal_backward_impl(p, grad, dp, options);                                        \
  }                                                                                                \
  void pairwise_kl_backward(const Gaussians<T>& p, const Gaussians<T>& q, std::span<const T> grad, \
                            const Gradients<T>& dp, const Gradients<T>& dq,                        \
                            const Options& options) {                                              \
    pairwise_backward_impl(p, &q, std::optional(grad), T(0), dp, dq, options);                     \
  }                                                                                                \
  void pairwise_kl_backward(const Gaussians<T>& p, std::span<const T> grad,                        \
                            const Gradients<T>& dp, const Options& options) {                      \
    pairwise_backward_impl<T>(p, nullptr, std::optional(grad), T(0), dp, Gradients<T>{}, options); \
  }                                                                                                \
  void pairwise_kl_sum_backward(const Gaussians<T>& p, const Gaussians<T>& q, T grad,              \
                                const Gradients<T>& dp, const Gradients<T>& dq,                    \
                                const Options& options) {                                          \
    pairwise_backward_impl<T>(p, &q, std::nullopt, grad, dp, dq, options);                         \
  }                                                                                                \
  void pairwise_kl_sum_backward(const Gaussians<T>& p, T grad, const Gradients<T>& dp,             \
                                const Options& options) {                                          \
    pairwise_backward_impl<T>(p, nullptr, std::nullopt, grad, dp, Gradients<T>{}, options);        \
  }                                                                                                \
  void kl_with_gradients(const Gaussians<T>& p, const Gaussians<T>& q, std::span<T> out,           \
                         const Gradients<double>& dp, const Gradients<double>& dq,                 \
                         const Options& options) {                                                 \
    with_gradients_impl(p, &q, out, dp, dq, options);                                              \
  }                                                                                                \
  void kl_standard_normal_with_gradients(const Gaussians<T>& p, std::span<T> out,                  \
                                         const Gradients<double>& dp, const Options& options) {    \
    with_gradients_impl<T, double>(p, nullptr, out, dp, Gradients<double>{}, options);             \
  }                                                                                                \
  void scale_rows(std::span<const double> unit, std::span<const T> grad, std::span<T> dst) {       \
    scale_rows_impl(unit, grad, dst);                                                              \
  }                                                                                                \
  void scale_rows(std::span<const T> grad, std::span<T> rows) {                                    \
    scale_rows_in_place_impl(grad, rows);                                                          \
  }                                                                                                \
  void sum_scaled_rows(std::span<const double> unit, std::span<const T> grad, std::span<T> dst) {  \
    sum_scaled_rows_impl(unit, grad, dst);                                                         \
  }
GAUSSKL_DEFINE(float)
GAUSSKL_DEFINE(double)
#undef GAUSSKL_DEFINE

// Float batches' gradients kept in float (the double ones are GAUSSKL_DEFINE's).
void kl_with_gradients(const Gaussians<float>& p, const Gaussians<float>& q, std::span<float> out,
                       const Gradients<float>& dp, const Gradients<float>& dq,
                       const Options& options) {
  with_gradients_impl(p, &q, out, dp, dq, options);
}
void kl_standard_normal_with_gradients(const Gaussians<float>& p, std::span<float> out,
                                       const Gradients<float>& dp, const Options& options) {
  with_gradients_impl<float, float>(p, nullptr, out, dp, Gradients<float>{}, options);
}

}  // namespace gausskl
