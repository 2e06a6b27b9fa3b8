// What every binding of an operation does before and around the library call: read both sides,
// choose the path, make the results, release the GIL, run the library over the batch's slices.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "errors.hpp"
#include "gausskl/errors.hpp"
#include "gausskl/types.hpp"
#include "layout.hpp"
#include "sides.hpp"

namespace gausskl::python {

// Returned (as a Python int) instead of a result when the call is not the library's to make
// as given; gausskl._ops then takes the path it names.
enum Status : int {
  kNeedsGrad = 1,  // a tensor requires grad and grad mode is on: the autograd path
  kTorchPath = 2,  // an array not in host memory (CUDA, MPS), or the torch path was asked for
  kConvert = 3,    // dtypes to convert, arrays NumPy cannot read in place, or a batch to make
                   // contiguous: the package converts, then calls again
};

struct Call {
  Side p, q;
  bool has_q = false;
  DType dtype = DType::other;
  const dlpack::ExchangeApi* api = nullptr;  // the framework results are made in (null: NumPy)
};

// Reads p and q (q may be None) into call; 0, or the Status that stops the call. for_grad: the
// forward of the autograd path, which ignores requires_grad. With kNeedsGrad the call is read
// whole (kept_forward can make it).
int read_call(nb::handle p, nb::handle q, nb::handle torch_path, bool for_grad, Call& call);

// A training step's row-wise KL of diagonal tensors that require grad (call read whole, q absent
// for N(0, I)): the values and each row's own gradients in one library call
// (gausskl::kl_with_gradients), as a Kept object whose backward (_ext.kept_backward) scales them
// by the upstream gradient. An array of one row for every pair (a [D] prior against [B, D]
// latents) gets the sum of its pairs' gradients. None when the call is not of that kind (a family
// other than diagonal, a batch no one stride describes, arrays not all tensors, or more than
// kKeptElements per array): the package then takes its autograd path.
nb::object kept_forward(Call& call, int threads);

// Options as the bindings pass them; on_jitter counts into `jittered` (it runs without the GIL).
struct Jittered {
  std::int64_t p = 0, q = 0;
};
Options options_of(int threads, double jitter, std::int64_t memory_budget, double tolerance,
                   bool exclude_self, Jittered& jittered);

// The result of a call that may have used the jitter: out, or (out, p count, q count) when a
// jitter was given.
nb::object with_jitter(nb::object out, double jitter, const Jittered& jittered);

// f(slice) for every slice of layout, without the GIL. With several slices, an error names the
// slice it happened in (row numbers in the library's message count within the slice).
template <class F>
void each_slice(const Layout& layout, F&& f) {
  const std::int64_t slices = layout.slices();
  nb::gil_scoped_release release;
  for (std::int64_t s = 0; s < slices; ++s) {
    if (slices == 1) {
      f(s);
      continue;
    }
    const auto where = [&] {
      return " (in the batch slice " + layout.slice_text(s) + " of shape " + layout.shape().text() +
             ")";
    };
    try {
      f(s);
    } catch (const Error&) {
      throw SliceError(std::current_exception(), where());  // keeps the error's data
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string(e.what()) + where());
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string(e.what()) + where());
    }
  }
}

// Calls f with a float or double tag, as the call's dtype says.
template <class F>
void with_type(DType dtype, F&& f) {
  if (dtype == DType::f64) {
    f(double{});
  } else {
    f(float{});
  }
}

inline std::size_t itemsize(DType dtype) {
  return dtype == DType::f64 ? 8 : 4;
}

// side's arrays added to layout (their operands recorded in side).
void add_side(Layout& layout, Side& side);

// A layout of side alone with its batch as one axis; false if that axis cannot be one stride.
bool single_axis(Side& side, Layout& layout);

}  // namespace gausskl::python
