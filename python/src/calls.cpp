#include "calls.hpp"

#include <cstdlib>

namespace gausskl::python {
namespace {

bool forced_torch_path(nb::handle torch_path) {
  if (torch_path.is_none()) {
    const char* env = std::getenv("GAUSSKL_FORCE_TORCH_PATH");
    return env && *env && std::strcmp(env, "0") != 0;
  }
  return PyObject_IsTrue(torch_path.ptr()) == 1;
}

}  // namespace

int read_call(nb::handle p, nb::handle q, nb::handle torch_path, bool for_grad, Call& call) {
  if (!read_side(p, call.p)) return kConvert;
  call.has_q = !q.is_none();
  if (call.has_q && !read_side(q, call.q)) return kConvert;
  const DType dtype = call.p.arrays[0].dtype;
  bool mixed = dtype == DType::other, cpu = true;
  const dlpack::ExchangeApi* api = nullptr;
  for (const Side* side : {&call.p, &call.q}) {
    if (side == &call.q && !call.has_q) break;
    for (int k = 0; k < side->count; ++k) {
      const Array& a = side->arrays[k];
      mixed |= a.dtype != dtype;
      cpu &= a.cpu;
      if (a.api && !api) api = a.api;
    }
  }
  if (!cpu) return kTorchPath;
  if (mixed) return kConvert;
  if (api && forced_torch_path(torch_path)) return kTorchPath;
  call.dtype = dtype;
  call.api = api;
  if (api && !for_grad) {
    bool grad = false;
    for (const Side* side : {&call.p, &call.q}) {
      if (side == &call.q && !call.has_q) break;
      for (int k = 0; k < side->count && !grad; ++k)
        grad = side->arrays[k].api && requires_grad(side->objects[k]);
    }
    if (grad && grad_enabled()) return kNeedsGrad;
  }
  return 0;
}

Options options_of(int threads, double jitter, std::int64_t memory_budget, double tolerance,
                   bool exclude_self, Jittered& jittered) {
  Options o;
  o.threads = threads;
  o.exclude_self = exclude_self;
  o.memory_budget = memory_budget;
  o.tolerance = tolerance;
  o.jitter = jitter;
  if (jitter > 0) {
    o.on_jitter = [&jittered](const char* side, std::int64_t count) {
      (side[0] == 'q' ? jittered.q : jittered.p) += count;
    };
  }
  return o;
}

nb::object with_jitter(nb::object out, double jitter, const Jittered& jittered) {
  if (!(jitter > 0)) return out;
  return nb::make_tuple(out, jittered.p, jittered.q);
}

void add_side(Layout& layout, Side& side) {
  for (int k = 0; k < side.count; ++k)
    side.operand[k] =
        layout.add(side.arrays[k], side.event_rank[k], itemsize(side.arrays[k].dtype));
}

bool single_axis(Side& side, Layout& layout) {
  add_side(layout, side);
  layout.merge();
  return layout.slices() == 1;
}

}  // namespace gausskl::python
