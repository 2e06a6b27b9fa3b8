// The library's errors (gausskl/errors.hpp) as the package's exceptions (gausskl._errors), with
// their data as attributes; and the library's hints and messages for the torch path, which
// checks device tensors in torch operations but words its errors as the library does.
#include "errors.hpp"

#include <nanobind/stl/string.h>

#include <cstdint>
#include <exception>
#include <string>

#include "gausskl/errors.hpp"

namespace gausskl::python {
namespace {

nb::object text_or_none(const std::string& text) {
  return text.empty() ? nb::none() : nb::object(nb::str(text.c_str()));
}

// The gausskl._errors exception for e, with `message` (e.what(), or more).
nb::object exception_of(const Error& e, const std::string& message) {
  nb::module_ errors = nb::module_::import_("gausskl._errors");
  nb::dict data;
  data["op"] = e.op();
  data["kind"] = error_kind_name(e.kind());
  data["side"] = text_or_none(e.side());
  data["index"] = e.index() < 0 ? nb::none() : nb::object(nb::int_(e.index()));
  data["hint"] = text_or_none(e.hint());
  data["hint_option"] = text_or_none(e.hint_option());
  const char* type = "InputError";
  if (const auto* o = dynamic_cast<const OptionError*>(&e)) {
    type = "OptionError";
    data["option"] = o->option();
    data["rule"] = o->rule();
  } else if (const auto* pd = dynamic_cast<const NotPositiveDefiniteError*>(&e)) {
    type = "NotPositiveDefiniteError";
    data["pivot"] = pd->pivot();
  } else if (const auto* b = dynamic_cast<const MemoryBudgetError*>(&e)) {
    type = "MemoryBudgetError";
    data["budget"] = b->budget();
    data["needs"] = b->needs();
  } else if (dynamic_cast<const std::runtime_error*>(&e)) {
    type = "ResourceError";
  }
  return errors.attr(type)(nb::str(message.c_str()), **data);
}

void raise(const Error& e, const std::string& message) {
  const nb::object error = exception_of(e, message);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
}

const char* what_of(const Error& e) {
  return dynamic_cast<const std::exception&>(e).what();
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const SliceError& slice) {
    try {
      std::rethrow_exception(slice.error);
    } catch (const Error& e) {
      raise(e, what_of(e) + slice.suffix);
    }
  } catch (const Error& e) {
    raise(e, what_of(e));
  }
}

nb::object not_positive_definite_error(const std::string& op, const std::string& side,
                                       const std::string& param, std::int64_t index,
                                       std::int64_t pivot, const std::string& value) {
  const NotPositiveDefiniteError e(op, side, param, index, pivot, value);
  return exception_of(e, e.what());
}

nb::object memory_budget_error(const std::string& op, std::int64_t budget,
                               const std::string& needs) {
  const MemoryBudgetError e(op, budget, needs);
  return exception_of(e, e.what());
}

}  // namespace

void bind_errors(nb::module_& m) {
  using nb::arg;
  nb::register_exception_translator(&translate);
  m.attr("REGULARIZE_HINT") = hints::regularize;
  m.attr("LOG_DIAGONAL_HINT") = hints::log_diagonal;
  m.def("not_positive_definite_error", &not_positive_definite_error, arg("op"), arg("side"),
        arg("param"), arg("index"), arg("pivot"), arg("value"),
        "The library's NotPositiveDefiniteError (gausskl._errors), to raise.");
  m.def("memory_budget_error", &memory_budget_error, arg("op"), arg("budget"), arg("needs"),
        "The library's MemoryBudgetError (gausskl._errors), to raise.");
}

}  // namespace gausskl::python
