"""A validated batch's log det Sigma and dense Sigma, in float64, from its own parameterization
(log det never from a determinant that can underflow): NumPy for NumPy batches, torch operations
(differentiable) for tensors. The caller has validated the batch (an operation ran on it)."""

from __future__ import annotations

import numpy as np

from gausskl import _arrays


def logdet(g, op: str):
    """log det Sigma_i, of shape g.batch_shape, float64."""
    if g.is_torch:
        import torch

        from gausskl import _batches, _torch_path

        side = _torch_path.Side(op, "p", _batches.flat(g), torch.float64)
        return side.logdet.reshape(tuple(g.batch_shape))
    return _numpy_logdet(g)


def _numpy_logdet(g):
    a = {k: np.asarray(v, dtype=np.float64) for k, v in g.arrays.items()}
    batch, d = tuple(g.batch_shape), g.d
    if g.family == "diag":
        s = np.broadcast_to(a["scale"], (*batch, d))
        per_entry = {"std": lambda x: 2.0 * np.log(x), "var": np.log, "logvar": lambda x: x,
                     "precision": lambda x: -np.log(x)}[g.param]
        return per_entry(s).sum(-1)
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
    # covariance or precision_matrix: their lower triangle, factored.
    lower = np.tril(s)
    sym = lower + np.swapaxes(np.tril(s, -1), -1, -2)
    ld = _chol_logdet(sym)
    return -ld if g.param == "precision_matrix" else ld


def covariance(g, op: str):
    """Sigma_i, of shape g.batch_shape + (D, D), float64."""
    if g.is_torch:
        import torch

        from gausskl import _batches, _torch_path

        side = _torch_path.Side(op, "p", _batches.flat(g), torch.float64)
        return side.covariance_dense().reshape((*g.batch_shape, g.d, g.d))
    a = {k: np.asarray(v, dtype=np.float64) for k, v in g.arrays.items()}
    batch, d = tuple(g.batch_shape), g.d
    if g.family == "diag":
        s = np.broadcast_to(a["scale"], (*batch, d))
        var = {"std": np.square, "var": lambda x: x, "logvar": np.exp,
               "precision": lambda x: 1.0 / x}[g.param](s)
        return var[..., None] * np.eye(d)
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
    sym = np.tril(s) + np.swapaxes(np.tril(s, -1), -1, -2)
    return np.broadcast_to(np.linalg.inv(sym) if g.param == "precision_matrix" else sym,
                           (*batch, d, d))


def _chol_logdet(S):
    L = np.linalg.cholesky(S)
    return 2.0 * np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(-1)


def as_float64(x):
    """x as a float64 array of its framework (tensors keep their graph)."""
    return x.to(dtype=_torch_float64()) if _arrays.is_torch(x) else np.asarray(x, np.float64)


def _torch_float64():
    import torch

    return torch.float64
