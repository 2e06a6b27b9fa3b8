// A batch's view for the kernels of its family: null when it is of another family.
#pragma once

#include <variant>

#include "gausskl/families.hpp"
#include "gausskl/types.hpp"

namespace gausskl::cpu {

template <class T>
const DiagGaussians<T>* as_diag(const Gaussians<T>& g) {
  return std::get_if<DiagGaussians<T>>(&g.variant());
}

// A full batch given by its Cholesky factor (the kernels that read L in place).
template <class T>
const FullGaussians<T>* as_tril(const Gaussians<T>& g) {
  const auto* full = std::get_if<FullGaussians<T>>(&g.variant());
  return full && describe_family(*full).by_factor ? full : nullptr;
}

}  // namespace gausskl::cpu
