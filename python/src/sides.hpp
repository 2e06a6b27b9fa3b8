// One side of a call (p or q) as the bindings receive it from the package: a spec tuple
// (code, mean, scale) or (code, mean, cov_factor, cov_diag), code saying the family and
// parameterization (families.hpp), the arrays as the caller gave them. Read in place, then viewed
// as the library's Gaussians, one slice of the batch at a time.
#pragma once

#include <nanobind/nanobind.h>

#include <array>
#include <cstdint>

#include "arrays.hpp"
#include "families.hpp"
#include "gausskl/types.hpp"
#include "layout.hpp"

namespace gausskl::python {

struct Side {
  int code = 0;
  int count = 0;  // arrays: 2, or 3 for low rank
  std::array<Array, 3> arrays;
  std::array<nb::handle, 3> objects;
  std::array<int, 3> event_rank{};
  Shape batch;                   // the broadcast of its arrays' batch shapes
  std::array<int, 3> operand{};  // each array's operand in the call's Layout
};

// Reads spec into side. False when an array cannot be read in place, or its batch axes do not
// broadcast with the others' (the package's constructors have checked that; false then means a
// caller bypassed them), or the spec is malformed.
bool read_side(nb::handle spec, Side& side);

// The library's view of side for rows [0, n) of slice `slice` of layout: rows n at the layout's
// inner stride, or one row (n = 1) read with stride 0.
template <class T>
Gaussians<T> view_of(const Side& side, const Layout& layout, std::int64_t slice, std::int64_t n);

// Whether every array of side has stride 0 along the layout's inner axis (the side is one
// distribution there, which the library can pair with every row of the other side).
bool constant_inner(const Side& side, const Layout& layout);

}  // namespace gausskl::python
