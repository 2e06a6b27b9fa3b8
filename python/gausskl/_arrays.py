"""Arrays from any framework: dtype choice, framework detection, hand-over to the extension.

gausskl computes on NumPy arrays and PyTorch tensors directly and on anything else that speaks
DLPack (JAX, CuPy on the host, ...) through ``numpy.from_dlpack``. Arrays are handed to the C++
library in place, with their strides, whatever their layout; a copy is made only to change the
dtype (float32 and float64 are computed as they are; integers become float64, float16 and
bfloat16 become float32, and when float32 and float64 meet, everything becomes float64) or to
give NumPy a native byte order.
"""

from __future__ import annotations

import os
import sys

import numpy as np

FLOAT32 = "float32"
FLOAT64 = "float64"


def torch_module():
    """The torch module if it is already imported (never imports it: torch is optional)."""
    return sys.modules.get("torch")


def is_torch(x) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(x, torch.Tensor)


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
    """x as a NumPy array or a torch tensor (the two kinds gausskl handles natively)."""
    if isinstance(x, np.ndarray) or is_torch(x):
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


def dtype_name(a) -> str:
    if is_torch(a):
        return str(a.dtype).replace("torch.", "")
    return str(a.dtype)


def common_kind(arrays) -> str:
    return FLOAT64 if any(kind(a) == FLOAT64 for a in arrays) else FLOAT32


def shape(a) -> tuple:
    return tuple(a.shape)


def cpu_view(a, k: str):
    """a ready for the extension: CPU, dtype k, any strides (no copy unless the dtype changes)."""
    if is_torch(a):
        torch = torch_module()
        t = a.detach()
        target = torch.float64 if k == FLOAT64 else torch.float32
        if t.dtype != target:
            t = t.to(target)
        if t.is_conj():
            t = t.resolve_conj()
        if t.is_neg():
            t = t.resolve_neg()
        return t
    target = np.float64 if k == FLOAT64 else np.float32
    if a.dtype != target or not a.dtype.isnative:
        a = a.astype(target)
    return a


def on_library_device(a) -> bool:
    """Whether the C++ library can read the array where it is (host memory)."""
    return not is_torch(a) or a.device.type == "cpu"


def force_torch_path() -> bool:
    """GAUSSKL_FORCE_TORCH_PATH=1 computes torch tensors with torch operations even on the CPU
    (the path taken for CUDA and MPS tensors); used to test that path."""
    return os.environ.get("GAUSSKL_FORCE_TORCH_PATH", "") not in ("", "0")
