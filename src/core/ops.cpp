// The public operations: validate everything, then dispatch to the CPU backend.
#include "gausskl/ops.hpp"

#include <new>
#include <string>

#include "core/error.hpp"
#include "core/validate.hpp"
#include "cpu/backend.hpp"

namespace gausskl {
namespace {

using detail::fail;
using detail::show;

void check_options(const char* op, const Options& options) {
  if (options.threads < 0) {
    fail(op, "options.threads must be >= 0 (0 = all cores), found " + show(options.threads));
  }
}

void check_size(const char* op, const char* name, std::size_t got, std::int64_t expected) {
  if (static_cast<std::int64_t>(got) != expected) {
    fail(op, std::string(name) + " has " + show(got) + " elements, expected " + show(expected));
  }
}

template <class T>
const char* full_param_name(const Gaussians<T>& g) {
  const auto* full = std::get_if<FullGaussians<T>>(&g.variant());
  if (!full) return "scale";
  switch (full->param) {
    case FullParam::scale_tril:
      return "scale_tril";
    case FullParam::covariance:
      return "covariance";
    case FullParam::precision_matrix:
      return "precision_matrix";
  }
  return "scale";
}

// Runs a backend call; turns a failed factorization and a failed allocation into errors.
template <class T, class Call>
void run(const char* op, const Gaussians<T>& p, const Gaussians<T>* q, Call&& call) {
  cpu::Failure f;
  try {
    f = call();
  } catch (const std::bad_alloc&) {
    detail::fail_resource(
        op, "out of memory for the workspace (D = " + show(p.d()) + ", N = " + show(p.n()) + ")");
  }
  if (!f.side) return;
  const Gaussians<T>& g = (f.side[0] == 'q' && q) ? *q : p;
  fail(op, std::string(f.side) + ".scale (" + full_param_name(g) +
               ") is not positive definite at distribution " + show(f.where.index) + ": pivot " +
               show(f.where.pivot) + " is " + show(f.where.value) +
               " (to regularize, add eps to the diagonal only: C + eps * I)");
}

template <class T, class U>
void kl_impl(const Gaussians<T>& p, const Gaussians<T>& q, std::span<U> out,
             const Options& options) {
  const char* op = "kl";
  check_options(op, options);
  detail::validate(op, "p", p);
  detail::validate(op, "q", q);
  detail::validate_same_d(op, p, q);
  const std::int64_t n = detail::broadcast_rows(op, p, q);
  check_size(op, "out", out.size(), n);
  run(op, p, &q, [&] { return cpu::kl_rowwise(p, &q, n, out.data(), options.threads); });
}

template <class T, class U>
void kl_standard_normal_impl(const Gaussians<T>& p, std::span<U> out, const Options& options) {
  const char* op = "kl_standard_normal";
  check_options(op, options);
  detail::validate(op, "p", p);
  check_size(op, "out", out.size(), p.n());
  run(op, p, static_cast<const Gaussians<T>*>(nullptr),
      [&] { return cpu::kl_rowwise<T, U>(p, nullptr, p.n(), out.data(), options.threads); });
}

template <class T, class U>
void pairwise_impl(const Gaussians<T>& p, const Gaussians<T>* q, std::span<U> out,
                   const Options& options) {
  const char* op = "pairwise_kl";
  check_options(op, options);
  detail::validate(op, "p", p);
  if (q) {
    detail::validate(op, "q", *q);
    detail::validate_same_d(op, p, *q);
  }
  const std::int64_t m = q ? q->n() : p.n();
  check_size(op, "out", out.size(), detail::checked_mul(op, p.n(), m, "N * M"));
  run(op, p, q, [&] { return cpu::kl_pairwise(p, q, out.data(), options.threads); });
}

template <class T, class U>
void knn_impl(const Gaussians<T>& p, const Gaussians<T>* q, std::int64_t k,
              std::span<std::int64_t> indices, std::span<U> values, const Options& options) {
  const char* op = "knn_kl";
  check_options(op, options);
  detail::validate(op, "p", p);
  if (q) {
    detail::validate(op, "q", *q);
    detail::validate_same_d(op, p, *q);
    if (options.exclude_self) fail(op, "exclude_self needs q = p (call without q)");
  }
  const std::int64_t m = q ? q->n() : p.n();
  const std::int64_t max_k = options.exclude_self ? m - 1 : m;
  if (k < 1 || k > max_k) {
    fail(op, "k = " + show(k) + " must be between 1 and " +
                 (options.exclude_self ? "M - 1 = " : "M = ") + show(max_k));
  }
  const std::int64_t size = detail::checked_mul(op, p.n(), k, "N * k");
  check_size(op, "indices", indices.size(), size);
  check_size(op, "values", values.size(), size);
  run(op, p, q, [&] {
    return cpu::kl_knn(p, q, k, options.exclude_self, indices.data(), values.data(),
                       options.threads);
  });
}

}  // namespace

#define GAUSSKL_DEFINE(T, U)                                                                  \
  void kl(const Gaussians<T>& p, const Gaussians<T>& q, std::span<U> out,                     \
          const Options& options) {                                                           \
    kl_impl(p, q, out, options);                                                              \
  }                                                                                           \
  void kl_standard_normal(const Gaussians<T>& p, std::span<U> out, const Options& options) {  \
    kl_standard_normal_impl(p, out, options);                                                 \
  }                                                                                           \
  void pairwise_kl(const Gaussians<T>& p, const Gaussians<T>& q, std::span<U> out,            \
                   const Options& options) {                                                  \
    pairwise_impl(p, &q, out, options);                                                       \
  }                                                                                           \
  void pairwise_kl(const Gaussians<T>& p, std::span<U> out, const Options& options) {         \
    pairwise_impl<T, U>(p, nullptr, out, options);                                            \
  }                                                                                           \
  void knn_kl(const Gaussians<T>& p, const Gaussians<T>& q, std::int64_t k,                   \
              std::span<std::int64_t> indices, std::span<U> values, const Options& options) { \
    knn_impl(p, &q, k, indices, values, options);                                             \
  }                                                                                           \
  void knn_kl(const Gaussians<T>& p, std::int64_t k, std::span<std::int64_t> indices,         \
              std::span<U> values, const Options& options) {                                  \
    knn_impl<T, U>(p, nullptr, k, indices, values, options);                                  \
  }
GAUSSKL_DEFINE(float, float)
GAUSSKL_DEFINE(float, double)
GAUSSKL_DEFINE(double, double)
GAUSSKL_DEFINE(double, float)
#undef GAUSSKL_DEFINE

}  // namespace gausskl
