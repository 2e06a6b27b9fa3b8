"""A validated batch's log det Sigma, dense Sigma and (diagonal families) variances, in float64,
from its own parameterization (log det never from a determinant that can underflow): NumPy for
NumPy batches, the torch path's forms (differentiable) for tensors. The caller has validated the
batch (an operation ran on it)."""

from __future__ import annotations

import numpy as np

from gausskl import _arrays

_VARIANCE = {"std": np.square, "var": lambda x: x, "logvar": np.exp,
             "precision": lambda x: 1.0 / x}
_LOG_VARIANCE = {"std": lambda x: 2.0 * np.log(x), "var": np.log, "logvar": lambda x: x,
                 "precision": lambda x: -np.log(x)}


def _side(g, op: str):
    """g in the torch path's form (gausskl._torch_path.Side), float64, one row per distribution."""
    import torch

    from gausskl import _batches, _torch_path

    return _torch_path.Side(op, "p", _batches.flat(g), torch.float64)


def _numpy_arrays(g) -> dict:
    return {k: np.asarray(v, dtype=np.float64) for k, v in g.arrays.items()}


def logdet(g, op: str):
    """log det Sigma_i, of shape g.batch_shape, float64."""
    if g.is_torch:
        return _side(g, op).logdet.reshape(tuple(g.batch_shape))
    a, batch, d = _numpy_arrays(g), tuple(g.batch_shape), g.d
    if g.family == "diag":
        return _LOG_VARIANCE[g.param](np.broadcast_to(a["scale"], (*batch, d))).sum(-1)
    if g.family == "low_rank":
        W = np.broadcast_to(a["cov_factor"], (*batch, *a["cov_factor"].shape[-2:]))
        Dg = np.broadcast_to(a["cov_diag"], (*batch, d))
        # Matrix determinant lemma: det(Dg + W W') = det(Dg) det(I + W' Dg^-1 W).
        C = np.eye(W.shape[-1]) + np.swapaxes(W, -1, -2) @ (W / Dg[..., None])
        return np.log(Dg).sum(-1) + _chol_logdet(C)
    s = a["scale"]
    if g.param == "packed_scale_tril":
        r = np.arange(d)
        diag = np.broadcast_to(s, (*batch, s.shape[-1]))[..., r * (r + 1) // 2 + r]
        return 2.0 * (diag if g.log_diagonal else np.log(diag)).sum(-1)
    s = np.broadcast_to(s, (*batch, d, d))
    if g.param == "scale_tril":
        return 2.0 * np.log(np.diagonal(s, axis1=-2, axis2=-1)).sum(-1)
    ld = _chol_logdet(_symmetric_from_lower(s))  # covariance or precision_matrix
    return -ld if g.param == "precision_matrix" else ld


def variances(g, op: str):
    """sigma_i^2 of a diagonal batch, of shape g.batch_shape + (D,), float64."""
    if g.is_torch:
        return _side(g, op).v.reshape((*g.batch_shape, g.d))
    s = np.broadcast_to(_numpy_arrays(g)["scale"], (*g.batch_shape, g.d))
    return _VARIANCE[g.param](s)


def covariance(g, op: str):
    """Sigma_i, of shape g.batch_shape + (D, D), float64."""
    if g.is_torch:
        return _side(g, op).covariance_dense().reshape((*g.batch_shape, g.d, g.d))
    if g.family == "diag":
        return variances(g, op)[..., None] * np.eye(g.d)
    a, batch, d = _numpy_arrays(g), tuple(g.batch_shape), g.d
    if g.family == "low_rank":
        W = a["cov_factor"]
        S = W @ np.swapaxes(W, -1, -2) + a["cov_diag"][..., None] * np.eye(d)
        return np.broadcast_to(S, (*batch, d, d))
    s = a["scale"]
    if g.param == "packed_scale_tril":
        rows, cols = np.tril_indices(d)
        L = np.zeros((*s.shape[:-1], d, d))
        L[..., rows, cols] = s
        if g.log_diagonal:
            r = np.arange(d)
            L[..., r, r] = np.exp(L[..., r, r])
        s = L
    if g.param in ("scale_tril", "packed_scale_tril"):
        L = np.tril(s)
        return np.broadcast_to(L @ np.swapaxes(L, -1, -2), (*batch, d, d))
    sym = _symmetric_from_lower(s)
    return np.broadcast_to(np.linalg.inv(sym) if g.param == "precision_matrix" else sym,
                           (*batch, d, d))


def _symmetric_from_lower(s):
    """The symmetric matrices of s's lower triangles (covariance and precision matrices are read
    by their lower triangle, as everywhere in gausskl)."""
    return np.tril(s) + np.swapaxes(np.tril(s, -1), -1, -2)


def _chol_logdet(S):
    L = np.linalg.cholesky(S)
    return 2.0 * np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(-1)


def as_float64(x):
    """x as a float64 array of its framework (tensors keep their graph)."""
    if _arrays.is_torch(x):
        import torch

        return x.to(dtype=torch.float64)
    return np.asarray(x, np.float64)
