// The library's errors in Python: gausskl::Error becomes gausskl._errors' exception of its kind,
// with its data as attributes; std::invalid_argument and std::runtime_error that are not the
// library's stay nanobind's ValueError and RuntimeError.
#pragma once

#include <nanobind/nanobind.h>

#include <exception>
#include <string>
#include <utility>

namespace gausskl::python {

namespace nb = nanobind;

// A library error in one slice of a batch (calls.hpp each_slice): raised as the error, its
// message followed by `suffix`, which names the slice.
struct SliceError : std::exception {
  std::exception_ptr error;
  std::string suffix;
  SliceError(std::exception_ptr e, std::string s) : error(std::move(e)), suffix(std::move(s)) {}
  const char* what() const noexcept override { return "an error in a batch slice"; }
};

void bind_errors(nb::module_& m);

}  // namespace gausskl::python
