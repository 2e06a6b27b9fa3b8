"""Arrays from any framework: what is read in place, what is converted, and framework checks.

gausskl computes on NumPy arrays and PyTorch tensors directly (the extension reads them in place,
with their strides, whatever their layout) and on anything else that speaks DLPack (JAX, CuPy on
the host, ...) through ``numpy.from_dlpack``. A copy is made only to change the dtype (float32
and float64 are computed as they are; integers become float64, float16 and bfloat16 become
float32, and when float32 and float64 meet, everything becomes float64), to give NumPy a native
byte order, or to make contiguous a batch whose axes no single stride describes where an
operation needs one (the q side of pairwise_kl and knn_kl).
"""

from __future__ import annotations

import os
import sys

import numpy as np

FLOAT32 = "float32"
FLOAT64 = "float64"

# Types read in place: NumPy arrays (1), and torch.Tensor and its subclasses once seen (2).
NUMPY, TORCH = 1, 2
_NATIVE = {np.ndarray: NUMPY}
# The dtypes computed as they are, NumPy's and (added with torch.Tensor to _NATIVE) torch's: a batch
# of these is made without the general path's dtype checks.
FLOAT_DTYPES = {np.dtype(np.float32), np.dtype(np.float64)}


def torch_module():
    """The torch module if it is already imported (never imports it: torch is optional)."""
    return sys.modules.get("torch")


def is_torch(x) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(x, torch.Tensor)


def native(x) -> int:
    """NUMPY or TORCH for the arrays kept as given, else 0."""
    k = _NATIVE.get(type(x))
    if k is not None:
        return k
    if is_torch(x):
        if not compiling():  # torch.compile guards on the tables: no changes while tracing
            _NATIVE[type(x)] = TORCH
            torch = torch_module()
            FLOAT_DTYPES.update((torch.float32, torch.float64))
        return TORCH
    return 0


def is_dask(x) -> bool:
    """Whether x is a Dask array (without importing Dask: a Dask array means it is imported).
    Batches keep Dask arrays lazy, as given; gausskl.dask computes them chunk by chunk."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(x, da.Array)


def check_dtypes(cls: str, *arrays):
    """Complex arrays are refused when a batch is made (other dtypes are converted later)."""
    for a in arrays:
        if is_complex(a):
            raise TypeError(f"[{cls}] complex arrays are not supported (dtype {a.dtype})")


def is_complex(a) -> bool:
    k = _NATIVE.get(type(a))
    if k == TORCH or (k != NUMPY and is_torch(a)):
        return a.dtype.is_complex
    return a.dtype.kind == "c"


# (torch._C._are_functorch_transforms_active or None, torch.compiler.is_compiling) once torch is
# imported: looked up once, a fifth of a microsecond off every call on tensors. torch.compile
# recognises is_compiling by the function itself, however it is reached.
_TORCH_CHECKS = None


def _torch_checks():
    """_TORCH_CHECKS, looked up on the first call after torch is imported; None before."""
    global _TORCH_CHECKS
    if _TORCH_CHECKS is None:
        torch = torch_module()
        if torch is None:
            return None
        _TORCH_CHECKS = (getattr(torch._C, "_are_functorch_transforms_active", None),
                         torch.compiler.is_compiling)
    return _TORCH_CHECKS


def compiling() -> bool:
    """Whether torch.compile is tracing the caller (then the operations are torch custom
    operators, see gausskl._compile)."""
    checks = _torch_checks()
    return checks is not None and checks[1]()


def traced(op: str) -> bool:
    """Whether torch.compile is tracing the caller or torch.func.vmap is the active transform: the
    operations are then torch custom operators (gausskl._compile), whose fake implementations
    and vmap rules these need (with torch.func.grad inside or around vmap as well)."""
    checks = _TORCH_CHECKS or _torch_checks()
    if checks is None:
        return False
    transforms_active, is_compiling = checks
    if transforms_active is None or not transforms_active():  # a training step's answer, first
        return is_compiling()
    if is_compiling():
        return True
    torch = torch_module()
    functorch = torch._C._functorch
    return any(i.key() == functorch.TransformType.Vmap
               for i in functorch.get_interpreter_stack())


def transformed() -> bool:
    """Whether a torch.func transform (grad, vmap, ...) is active: its wrapped tensors have no
    memory the library could read, so the call runs in torch operations, which the transforms
    see through."""
    checks = _torch_checks()
    return checks is not None and checks[0] is not None and checks[0]()


def foreign_namespace(x):
    """The array API namespace of a DLPack array that is neither NumPy nor torch, else None."""
    if isinstance(x, np.ndarray) or is_torch(x) or not hasattr(x, "__dlpack__"):
        return None
    get = getattr(x, "__array_namespace__", None)
    try:
        return get() if get is not None else None
    except Exception:  # noqa: BLE001 - no usable namespace: results come back as NumPy
        return None


def as_array(x, name: str, where: str):
    """x as a NumPy array or a torch tensor (the two kinds gausskl handles natively); a Dask
    array as it is (never computed here)."""
    if isinstance(x, np.ndarray) or is_torch(x) or is_dask(x):
        return x
    if hasattr(x, "__dlpack__") and not isinstance(x, (list, tuple)):
        try:
            return np.from_dlpack(x)
        except (BufferError, RuntimeError, TypeError) as e:
            raise TypeError(
                f"[{where}] {name}: could not read this array through DLPack ({e}); "
                "gausskl reads NumPy arrays, PyTorch tensors and host DLPack arrays"
            ) from None
    try:
        a = np.asarray(x)
    except Exception as e:  # noqa: BLE001 - anything NumPy cannot read is a type error here
        raise TypeError(f"[{where}] {name}: not an array ({type(x).__name__}): {e}") from None
    if a.dtype == object:
        raise TypeError(f"[{where}] {name}: not a numeric array ({type(x).__name__})")
    if a.dtype.kind == "c":
        raise TypeError(f"[{where}] {name}: complex arrays are not supported (dtype {a.dtype})")
    return a


def kind(a) -> str:
    """'float32' or 'float64': the precision this array is computed in."""
    if is_torch(a):
        torch = torch_module()
        if a.dtype == torch.float64:
            return FLOAT64
        if a.dtype in (torch.float32, torch.float16, torch.bfloat16):
            return FLOAT32
        if a.is_complex():
            raise TypeError(f"complex tensors are not supported (dtype {a.dtype})")
        return FLOAT64
    dt = a.dtype
    if dt == np.float64:
        return FLOAT64
    if dt in (np.float32, np.float16):
        return FLOAT32
    if dt.kind in "biu":
        return FLOAT64
    if dt.kind == "f":  # long double and other extended types: computed in double
        return FLOAT64
    raise TypeError(f"arrays of dtype {dt} are not supported; use float32 or float64")


def common_kind(arrays) -> str:
    return FLOAT64 if any(kind(a) == FLOAT64 for a in arrays) else FLOAT32


def escaped(a) -> bool:
    """Whether a is a torch.func wrapper still, after converted(): a batched tensor kept from
    inside vmap, which nothing can read once its transform has exited."""
    if not is_torch(a):
        return False
    functorch = getattr(torch_module()._C, "_functorch", None)
    return functorch is not None and functorch.is_functorch_wrapped_tensor(a)


def converted(a, k: str):
    """a in dtype k as NumPy reads it in place (native byte order), or a tensor of that dtype;
    the same object when nothing changes."""
    if is_torch(a):
        torch = torch_module()
        # A torch.func.grad wrapper that outlived its transform: the tensor it holds, which
        # torch's own operations read in its place (a vmap one stays wrapped: escaped()).
        unwrap = getattr(getattr(torch._C, "_functorch", None), "unwrap_if_dead", None)
        if unwrap is not None:
            a = unwrap(a)
        target = torch.float64 if k == FLOAT64 else torch.float32
        if a.dtype != target:
            a = a.to(target)
        if a.is_conj():
            a = a.resolve_conj()
        if a.is_neg():
            a = a.resolve_neg()
        return a
    target = np.float64 if k == FLOAT64 else np.float32
    if a.dtype != target or not a.dtype.isnative:
        a = a.astype(target)
    return a


def contiguous(a, shape):
    """a broadcast to shape and made contiguous (a copy only where it is not already)."""
    if is_torch(a):
        return a.expand(shape).contiguous()
    return np.ascontiguousarray(np.broadcast_to(a, shape))


def force_torch_path() -> bool:
    """GAUSSKL_FORCE_TORCH_PATH=1 computes torch tensors with torch operations even on the CPU
    (the path taken for CUDA and MPS tensors); used to test that path."""
    return os.environ.get("GAUSSKL_FORCE_TORCH_PATH", "") not in ("", "0")


def widened_symmetric(a, k: str):
    """A float32 covariance or precision matrix (``[..., D, D]``) in dtype k: widened to float64,
    its lower triangle mirrored when it is symmetric within float32's round-off (the library's
    rule, gausskl/src/core/validate.cpp), so that a mixed float32/float64 call judges it at the
    precision it was given in, as a float32 call does; otherwise as converted() (the library then
    names the entry). A tensor keeps its gradient (the value mirrored, the gradient as is)."""
    w = converted(a, k)
    if k != FLOAT64 or kind(a) != FLOAT32 or w.shape[-1] < 2:
        return w
    xp = torch_module() if is_torch(w) else np  # the same operations in both
    wt = w.swapaxes(-1, -2)
    diag = abs(w.diagonal(0, -2, -1))
    scale = xp.maximum(xp.maximum(abs(w), abs(wt)),
                       (diag[..., :, None] * diag[..., None, :]) ** 0.5)
    if not bool((abs(w - wt) <= _SQRT_EPS32 * scale).all()):
        return w
    mirrored = xp.tril(w) + xp.tril(w, -1).swapaxes(-1, -2)
    return w + (mirrored - w).detach() if xp is not np else mirrored


_SQRT_EPS32 = float(np.sqrt(np.finfo(np.float32).eps))
