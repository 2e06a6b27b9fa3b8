"""The operations the mixture code (_mixtures, _mixture_sampling) applies to NumPy arrays and
torch tensors alike, each dispatched on what it is given (torch is imported only for tensors)."""

from __future__ import annotations

import numpy as np

from gausskl import _arrays


def _torch():
    import torch

    return torch


def exp(x):
    return x.exp() if _arrays.is_torch(x) else np.exp(x)


def sqrt(x):
    return x.sqrt() if _arrays.is_torch(x) else np.sqrt(x)


def lse(x, axis):
    """log sum exp over `axis`; -inf where every entry is -inf."""
    if _arrays.is_torch(x):
        return _torch().logsumexp(x, dim=axis)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return (np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m).squeeze(axis)


def cat(parts, axis: int = 0):
    if _arrays.is_torch(parts[0]):
        return _torch().cat(parts, dim=axis)
    return np.concatenate(parts, axis=axis)


def stack(parts, axis: int = 0):
    if _arrays.is_torch(parts[0]):
        return _torch().stack(parts, dim=axis)
    return np.stack(parts, axis=axis)


def index(idx, torch_: bool):
    """An int64 index (array or sequence) for indexing a tensor (torch_) or a NumPy array."""
    idx = np.array(idx, dtype=np.int64)
    return _torch().as_tensor(idx) if torch_ else idx


def clamp_min(x, lo):
    return x.clamp_min(lo) if _arrays.is_torch(x) else np.maximum(x, lo)


def minimum(x, y):
    """The elementwise minimum of x and y (a tensor or array and a number or the same)."""
    if _arrays.is_torch(x):
        torch = _torch()
        return torch.minimum(x, torch.as_tensor(y, dtype=x.dtype))
    return np.minimum(x, y)


def maximum(x, y):
    return _torch().maximum(x, y) if _arrays.is_torch(x) else np.maximum(x, y)


def swap_first(a):
    """The first two axes exchanged."""
    return a.transpose(0, 1) if _arrays.is_torch(a) else np.swapaxes(a, 0, 1)


def swap_last(a):
    """The last two axes exchanged."""
    return a.transpose(-1, -2) if _arrays.is_torch(a) else np.swapaxes(a, -1, -2)


def cholesky(S):
    return _torch().linalg.cholesky(S) if _arrays.is_torch(S) else np.linalg.cholesky(S)


def solve_lower(L, B):
    """L^-1 B, L lower triangular [..., D, D], B [..., D, M]."""
    if _arrays.is_torch(L):
        return _torch().linalg.solve_triangular(L, B, upper=False)
    return np.linalg.solve(L, B)


def diag_embed(v):
    """[..., D] as diagonal matrices [..., D, D]."""
    if _arrays.is_torch(v):
        return _torch().diag_embed(v)
    return v[..., None] * np.eye(v.shape[-1])


def like(ref, a):
    """The NumPy array a in ref's framework (a tensor of ref's dtype for a tensor)."""
    return _torch().as_tensor(a, dtype=ref.dtype) if _arrays.is_torch(ref) else a
