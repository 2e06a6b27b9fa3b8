// A batch of Gaussians as the extension sees it: the library's non-owning views over the
// caller's arrays, plus the arrays themselves so they outlive every call that uses the views.
#pragma once

#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "gausskl/types.hpp"

namespace gausskl::python {

namespace nb = nanobind;

// Any CPU array; the scalar type is checked when the batch is built.
using AnyArray = nb::ndarray<nb::device::cpu>;

template <class T>
using Array2 = nb::ndarray<const T, nb::ndim<2>, nb::device::cpu>;
template <class T>
using Array3 = nb::ndarray<const T, nb::ndim<3>, nb::device::cpu>;

class Batch {
 public:
  // Diagonal: param is "std", "var", "logvar" or "precision".
  template <class T>
  static Batch diag(Array2<T> mean, Array2<T> scale, const std::string& param);
  // Full: param is "scale_tril", "covariance" or "precision_matrix".
  template <class T>
  static Batch full(Array2<T> mean, Array3<T> scale, const std::string& param);
  template <class T>
  static Batch low_rank(Array2<T> mean, Array3<T> cov_factor, Array2<T> cov_diag);

  // The library's view in the batch's scalar type; nullptr if the batch is of the other type.
  template <class T>
  const Gaussians<T>* get() const {
    return std::holds_alternative<Gaussians<T>>(views_) ? &std::get<Gaussians<T>>(views_) : nullptr;
  }

  bool is_double() const { return std::holds_alternative<Gaussians<double>>(views_); }
  const char* family() const { return family_; }
  std::int64_t n() const;
  std::int64_t d() const;
  // Where each array's data starts, in the order given; lets tests check that nothing was copied.
  std::vector<std::uintptr_t> addresses() const;

 private:
  Batch(const char* family, std::vector<AnyArray> arrays,
        std::variant<std::monostate, Gaussians<float>, Gaussians<double>> views)
      : family_(family), arrays_(std::move(arrays)), views_(std::move(views)) {}

  const char* family_;
  std::vector<AnyArray> arrays_;  // keeps the caller's memory alive
  std::variant<std::monostate, Gaussians<float>, Gaussians<double>> views_;
};

void bind_batch(nb::module_& m);

}  // namespace gausskl::python
