// DiagGaussian's common construction in C: DiagGaussian(mean, logvar=s) or (mean, std=s), mean and
// s NumPy arrays or tensors of one type, one shape and float dtypes. Python's own DiagGaussian
// __init__ (gausskl._distributions) does the same in its first lines; this is its tp_init, which
// type.__call__ calls, and it hands every other case to that __init__ (the slot function Python
// made for it). The class's vectorcall makes the common case without type.__call__ at all. The
// class keeps its Python __init__ in its dict, for what looks it up by name: torch.compile's
// tracing, help(), a subclass's own slots and super().__init__, and interpreters that call
// __init__ directly (CPython 3.13's specialized calls), all with the same result.
// Why: a training step makes two batches per call; in C each costs half (bench/README.md).
#include <nanobind/nanobind.h>

#include <algorithm>

#include "arrays.hpp"

namespace gausskl::python {

namespace nb = nanobind;

namespace {

// What the fast path reads and writes, set once by install_diag_init and kept for the life of the
// process (the class and the package's tables outlive every batch).
struct DiagInit {
  initproc general = nullptr;  // the slot Python made for the Python __init__
  PyObject* native = nullptr;  // gausskl._arrays._NATIVE: array type -> NUMPY or TORCH
  PyObject* floats = nullptr;  // gausskl._arrays.FLOAT_DTYPES
  PyObject* torch_kind = nullptr;
  PyObject* codes[2] = {};   // the spec codes of std and logvar
  PyObject* params[2] = {};  // "std", "logvar"
  PyObject* cls_name = nullptr;
  PyObject *shape = nullptr, *dtype = nullptr;
  PyObject *a_cls = nullptr, *a_spec = nullptr, *a_param = nullptr, *a_batch = nullptr,
           *a_namespace = nullptr, *a_torch = nullptr;
};
DiagInit init_state;

PyObject* interned(const char* s) {
  return PyUnicode_InternFromString(s);
}

// Whether key names parameter k ("std" or "logvar"): keyword names are interned, so an identity
// test decides the usual call.
bool names(PyObject* key, int k) {
  PyObject* want = init_state.params[k];
  return key == want || (PyUnicode_Check(key) && PyUnicode_Compare(key, want) == 0);
}

// 1 where x.dtype is in FLOAT_DTYPES, 0 where not, -1 with a Python error.
int float_dtype(PyObject* x) {
  PyObject* dt = PyObject_GetAttr(x, init_state.dtype);
  if (!dt) return -1;
  const int yes = PySet_Contains(init_state.floats, dt);
  Py_DECREF(dt);
  return yes;
}

// The batch's attributes, as Python's __init__ sets them in the common case: 1, or -1 on an error.
int set_common(PyObject* self, int k, PyObject* mean, PyObject* scale, bool torch) {
  PyObject* spec = PyTuple_Pack(3, init_state.codes[k], mean, scale);
  if (!spec) return -1;
  const bool set = PyObject_SetAttr(self, init_state.a_cls, init_state.cls_name) == 0 &&
                   PyObject_SetAttr(self, init_state.a_spec, spec) == 0 &&
                   PyObject_SetAttr(self, init_state.a_param, init_state.params[k]) == 0 &&
                   PyObject_SetAttr(self, init_state.a_batch, Py_None) == 0 &&
                   PyObject_SetAttr(self, init_state.a_namespace, Py_None) == 0 &&
                   PyObject_SetAttr(self, init_state.a_torch, torch ? Py_True : Py_False) == 0;
  Py_DECREF(spec);
  return set ? 1 : -1;
}

// Whether (mean, name=scale) is the common case: 1 (k the parameter's index, torch whether they
// are tensors), 0 when not, -1 with a Python error.
int common_pair(PyObject* mean, PyObject* key, PyObject* scale, int& k, bool& torch) {
  k = names(key, 1) ? 1 : names(key, 0) ? 0 : -1;
  if (k < 0 || scale == Py_None) return 0;
  if (Py_TYPE(scale) != Py_TYPE(mean)) return 0;
  PyObject* kind = PyDict_GetItemWithError(init_state.native, (PyObject*)Py_TYPE(mean));
  if (!kind) return PyErr_Occurred() ? -1 : 0;
  torch = PyObject_RichCompareBool(kind, init_state.torch_kind, Py_EQ) > 0;
  // mean.shape nonempty and equal to scale.shape, both dtypes float: Python's test. A tensor's
  // from its DLPack view (no torch.Size and dtype objects made: half of this in a step); a
  // tensor without one (a torch.func wrapper) takes the Python path.
  if (torch) {
    Array a, b;
    return read_array(mean, a) && read_array(scale, b) && a.ndim >= 1 && a.ndim == b.ndim &&
           a.dtype != DType::other && b.dtype != DType::other &&
           std::equal(a.shape.begin(), a.shape.begin() + a.ndim, b.shape.begin());
  }
  PyObject* ms = PyObject_GetAttr(mean, init_state.shape);
  if (!ms) return -1;
  int ok = PyObject_IsTrue(ms);
  if (ok > 0) {
    PyObject* ss = PyObject_GetAttr(scale, init_state.shape);
    ok = ss ? PyObject_RichCompareBool(ms, ss, Py_EQ) : -1;
    Py_XDECREF(ss);
  }
  Py_DECREF(ms);
  if (ok > 0) ok = float_dtype(mean);
  if (ok > 0) ok = float_dtype(scale);
  return ok;
}

// The common case set on self: 1 when done, 0 when it is not the common case, -1 on an error.
int common_case(PyObject* self, PyObject* args, PyObject* kwds) {
  if (PyTuple_GET_SIZE(args) != 1 || !kwds || PyDict_GET_SIZE(kwds) != 1) return 0;
  Py_ssize_t pos = 0;
  PyObject *key = nullptr, *scale = nullptr;
  PyDict_Next(kwds, &pos, &key, &scale);
  PyObject* mean = PyTuple_GET_ITEM(args, 0);
  int k = -1;
  bool torch = false;
  const int common = common_pair(mean, key, scale, k, torch);
  if (common <= 0) return common;
  return set_common(self, k, mean, scale, torch);
}

int diag_init(PyObject* self, PyObject* args, PyObject* kwds) {
  const int done = common_case(self, args, kwds);
  if (done != 0) return done > 0 ? 0 : -1;
  return init_state.general(self, args, kwds);
}

// The class's vectorcall, what DiagGaussian(...) runs: the common case made here, without the
// arguments' tuple and dict and the lookups of __new__ and __init__ that type.__call__ makes (as
// object.__new__ would, then diag_init); anything else through type.__call__, which runs
// diag_init and the Python __init__ as before. Subclasses do not inherit it.
PyObject* diag_vectorcall(PyObject* type, PyObject* const* args, std::size_t nargsf,
                          PyObject* kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  auto* cls = reinterpret_cast<PyTypeObject*>(type);
  // A class whose __init__ or __new__ was reassigned since (its slots follow) runs them.
  const bool ours = cls->tp_init == diag_init && cls->tp_new == PyBaseObject_Type.tp_new;
  if (ours && nargs == 1 && kwnames && PyTuple_GET_SIZE(kwnames) == 1) {
    int k = -1;
    bool torch = false;
    const int common = common_pair(args[0], PyTuple_GET_ITEM(kwnames, 0), args[1], k, torch);
    if (common < 0) return nullptr;
    if (common > 0) {
      PyObject* self = cls->tp_alloc(cls, 0);
      if (!self) return nullptr;
      if (set_common(self, k, args[0], args[1], torch) < 0) {
        Py_DECREF(self);
        return nullptr;
      }
      return self;
    }
  }
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  nb::object positional = nb::steal(PyTuple_New(nargs));
  nb::object keywords = nb::steal(nkw ? PyDict_New() : nullptr);
  if (!positional.is_valid() || (nkw && !keywords.is_valid())) return nullptr;
  for (Py_ssize_t i = 0; i < nargs; ++i)
    PyTuple_SET_ITEM(positional.ptr(), i, Py_NewRef(args[i]));
  for (Py_ssize_t i = 0; i < nkw; ++i) {
    if (PyDict_SetItem(keywords.ptr(), PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
      return nullptr;
    }
  }
  return PyType_Type.tp_call(type, positional.ptr(), keywords.ptr());
}

}  // namespace

void bind_diag_init(nb::module_& m) {
  m.def(
      "install_diag_init",
      [](nb::type_object cls, nb::dict native, nb::set floats, nb::object torch_kind,
         nb::object std_code, nb::object logvar_code) {
        auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
        // Once: a second DiagGaussian (importlib.reload) keeps its Python __init__.
        if (init_state.general || !(type->tp_flags & Py_TPFLAGS_HEAPTYPE) || !type->tp_init) {
          return false;
        }
        init_state = {type->tp_init,
                      native.release().ptr(),
                      floats.release().ptr(),
                      torch_kind.release().ptr(),
                      {std_code.release().ptr(), logvar_code.release().ptr()},
                      {interned("std"), interned("logvar")},
                      interned("DiagGaussian"),
                      interned("shape"),
                      interned("dtype"),
                      interned("_cls"),
                      interned("_spec"),
                      interned("param"),
                      interned("_batch_shape"),
                      interned("_namespace"),
                      interned("_torch")};
        Py_INCREF(cls.ptr());  // the saved slot belongs to the class: keep it
        type->tp_init = diag_init;
        type->tp_vectorcall = diag_vectorcall;
        return true;
      },
      nb::arg("cls"), nb::arg("native"), nb::arg("floats"), nb::arg("torch_kind"),
      nb::arg("std_code"), nb::arg("logvar_code"),
      "Makes DiagGaussian's common construction (mean and logvar= or std= of one type, shape and "
      "float dtypes) C code, every other case going to its Python __init__. Once: False when "
      "already done.");
}

}  // namespace gausskl::python
