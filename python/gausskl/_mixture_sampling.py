"""Densities, samples and the Monte Carlo KL of Gaussian mixtures (NumPy or torch).

Every component is read through its dense Cholesky factor L (L L' = Sigma; a diagonal batch
through its variances), built once per call. Monte Carlo samples are drawn in blocks of a fixed
number per component, each block from a generator seeded by (seed, block, component): the
values do not depend on memory_budget or on the number of threads.
"""

from __future__ import annotations

import math

import numpy as np

from gausskl import _arrays, _dense
from gausskl._batches import broadcast, reshaped

_LOG_2PI = math.log(2.0 * math.pi)
BLOCK = 1024  # samples per component per generator block (the reproducibility unit)


class _Factors:
    """The components of a mixture, [k, C] rows: mean [k, C, D], and L [k, C, D, D] or the
    variances [k, C, D] of a diagonal family; log det Sigma [k, C]."""

    def __init__(self, g, op: str):
        self.torch = g.is_torch
        self.mean = _dense.as_float64(g.mean)
        self.logdet = _dense.logdet(g, op)
        self.diag = g.family == "diag"
        if self.diag:
            S = _dense.covariance(g, op)
            self.var = S.diagonal(dim1=-2, dim2=-1) if self.torch else np.diagonal(S, 0, -2, -1)
        else:
            S = _dense.covariance(g, op)
            self.L = _cholesky(S)

    def log_density(self, x):
        """log N(x; mu_c, Sigma_c) for x [k, ..., D] against every component: [k, ..., C]."""
        k, d = x.shape[0], x.shape[-1]
        mid = tuple(x.shape[1:-1])
        xf = x.reshape((k, -1, d))  # [k, M, D]
        dev = xf[:, None, :, :] - self.mean[:, :, None, :]  # [k, C, M, D]
        if self.diag:
            quad = (dev * dev / self.var[:, :, None, :]).sum(-1)
        else:  # one triangular solve per component, the M points as right-hand sides
            y = _solve_lower(self.L, _swap(dev))
            quad = (y * y).sum(-2)
        out = -0.5 * (quad + d * _LOG_2PI + self.logdet[:, :, None])  # [k, C, M]
        return _swap(out).reshape((k, *mid, out.shape[1]))

    def transform_rows(self, z, r0: int, r1: int, cols):
        """mu + L z for rows r0:r1, the components `cols` (an int array) and z [r1 - r0,
        len(cols), m, D] (standard normal): samples of those components."""
        cols = _index_of(cols, self.torch)
        mean = self.mean[r0:r1][:, cols, None, :]
        if self.diag:
            v = self.var[r0:r1][:, cols]
            sd = v.sqrt() if self.torch else np.sqrt(v)
            return mean + sd[:, :, None, :] * z
        return mean + (self.L[r0:r1][:, cols, None] @ z[..., None])[..., 0]

    def rows(self, r0: int, r1: int) -> "_Factors":
        out = object.__new__(_Factors)
        out.torch, out.diag = self.torch, self.diag
        out.mean, out.logdet = self.mean[r0:r1], self.logdet[r0:r1]
        if self.diag:
            out.var = self.var[r0:r1]
        else:
            out.L = self.L[r0:r1]
        return out


def swap_first(a):
    """The first two axes exchanged."""
    return a.transpose(0, 1) if _arrays.is_torch(a) else np.swapaxes(a, 0, 1)


def _swap(a):
    return a.transpose(-1, -2) if _arrays.is_torch(a) else np.swapaxes(a, -1, -2)


def _cholesky(S):
    if _arrays.is_torch(S):
        import torch

        return torch.linalg.cholesky(S)
    return np.linalg.cholesky(S)


def _solve_lower(L, B):
    """L^-1 B, L lower triangular [..., D, D], B [..., D, M]."""
    if _arrays.is_torch(L):
        import torch

        return torch.linalg.solve_triangular(L, B, upper=False)
    return np.linalg.solve(L, B)


def _lse(x, axis):
    if _arrays.is_torch(x):
        import torch

        return torch.logsumexp(x, dim=axis)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return (np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m).squeeze(axis)


def _normals(torch_: bool, like, shape, seed: int, *key: int):
    """Standard normals of `shape` from the generator of (seed, *key)."""
    if torch_:
        import torch

        gen = torch.Generator().manual_seed(int(np.random.SeedSequence([seed, *key])
                                                .generate_state(1, np.uint64)[0] >> 1))
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(like.device)
    return np.random.default_rng([seed, *key]).standard_normal(shape)


def _index_of(cols, torch_: bool):
    if torch_:
        import torch

        return torch.as_tensor(np.asarray(cols, dtype=np.int64))
    return np.asarray(cols, dtype=np.int64)


class Rows:
    """A mixture broadcast to a batch of k mixtures: its factors [k, C] and log weights [k, C]."""

    def __init__(self, m, batch: tuple, op: str):
        k = math.prod(batch)
        comps = m.components
        full = (*batch, m.n_components)
        self.f = _Factors(reshaped(broadcast(comps, full), (k, m.n_components)), op)
        lw = _dense.as_float64(m.log_weights)
        lw = lw.expand(full) if _arrays.is_torch(lw) else np.broadcast_to(lw, full)
        self.lw = lw.reshape((k, m.n_components))
        self.k, self.c, self.torch = k, m.n_components, self.f.torch

    def sample(self, n: int, seed: int):
        """n samples of each of the k mixtures, [k, n, D]: the components chosen by the
        generator of (seed, -1), the normals by that of (seed, 0)."""
        w = self.lw.detach().exp().cpu().numpy() if self.torch else np.exp(self.lw)
        u = np.random.default_rng([seed, 2**31]).random((self.k, n))
        cum = np.cumsum(w, -1)
        cum[:, -1] = np.inf  # rounding of the sum never leaves u past the last component
        idx = np.stack([np.searchsorted(cum[r], u[r], side="right") for r in range(self.k)])
        z = _normals(self.torch, self.lw, (self.k, n, self.f.mean.shape[-1]), seed, 0)
        f, rows = self.f, np.arange(self.k)[:, None]
        if self.torch:
            import torch

            rows, idx = torch.as_tensor(rows), torch.as_tensor(idx)
        mean = f.mean[rows, idx]
        if f.diag:
            v = f.var[rows, idx]
            return mean + (v.sqrt() if self.torch else np.sqrt(v)) * z
        return mean + (f.L[rows, idx] @ z[..., None])[..., 0]

    def log_prob(self, x):
        """log of the mixture's density at x [k, ..., D]: [k, ...]."""
        return self.log_prob_rows(x, 0, self.k)

    def log_prob_rows(self, x, r0: int, r1: int):
        extra = x.ndim - 2
        lw = self.lw[r0:r1][(slice(None),) + (None,) * extra]
        return _lse(self.f.rows(r0, r1).log_density(x) + lw, -1)


def monte_carlo(f, g, batch: tuple, samples: int, seed: int, budget: int, op: str):
    """(estimate [k], standard error [k]) of KL(f || g), stratified by f's components with a
    proportional allocation: component a of each mixture gets m_a = max(2, ceil(samples w_a))
    samples (none at weight 0); the estimate is sum_a w_a mean_a(log f - log g), its variance
    sum_a w_a^2 var_a / m_a (at most plain sampling's for the same count, up to rounding). Blocks of BLOCK
    samples of one component come from the generator of (seed, block, component)."""
    F, G = Rows(f, batch, op), Rows(g, batch, op)
    k, c, d = F.k, F.c, f.d
    w_np = (F.lw.detach().exp().cpu().numpy() if F.torch else np.exp(F.lw))
    m = np.where(w_np > 0, np.maximum(2, np.ceil(samples * w_np)), 0).astype(np.int64)  # [k, C]
    per_row = BLOCK * max(c, G.c) * d * 8 * 4  # the widest temporary of one row's block
    step = max(1, budget // per_row)
    count = np.zeros((k, c), np.int64)
    mean = m2 = None
    for b in range(-(-int(m.max()) // BLOCK)):
        active = np.flatnonzero((m > b * BLOCK).any(0))  # the components some row still samples
        z = _stack_axis1([_normals(F.torch, F.lw, (k, BLOCK, d), seed, b, int(a))
                          for a in active])  # [k, A, BLOCK, D]
        parts = []
        for r0 in range(0, k, step):
            r1 = min(k, r0 + step)
            x = F.f.transform_rows(z[r0:r1], r0, r1, active)
            parts.append(F.log_prob_rows(x, r0, r1) - G.log_prob_rows(x, r0, r1))
        r = _cat(parts)  # [k, A, BLOCK]
        valid = (b * BLOCK + np.arange(BLOCK)) < m[:, active, None]  # [k, A, BLOCK]
        n_b = valid.sum(-1)
        mask = _like(r, valid.astype(np.float64))
        safe = _like(r, np.maximum(n_b, 1).astype(np.float64))
        bm = (r * mask).sum(-1) / safe
        bm2 = (((r - bm[..., None]) ** 2) * mask).sum(-1)
        mean, m2 = _merge_columns(mean, m2, count, bm, bm2, n_b, active, (k, c), r)
        count[:, active] += n_b
    w = F.lw.exp() if F.torch else np.exp(F.lw)
    cnt = _like(w, np.maximum(count, 1).astype(np.float64))
    var = m2 / _like(w, np.maximum(count - 1, 1).astype(np.float64))
    est = (w * mean).sum(-1)
    se = (w * w * var / cnt).sum(-1)
    return est, (se.sqrt() if F.torch else np.sqrt(se))


def _merge_columns(mean, m2, count, bm, bm2, n_b, active, shape, like):
    """Chan et al.'s pairwise update of each (row, component)'s mean and sum of squares with a
    block's, for the block's components; a component's first block sets them."""
    if mean is None:
        if _arrays.is_torch(like):
            import torch

            mean = torch.zeros(shape, dtype=like.dtype)
            m2 = torch.zeros(shape, dtype=like.dtype)
        else:
            mean, m2 = np.zeros(shape), np.zeros(shape)
    old = _like(like, count[:, active].astype(np.float64))
    new = _like(like, n_b.astype(np.float64))
    total = old + new
    frac = new / _like(like, np.maximum(total.detach().cpu().numpy() if _arrays.is_torch(total)
                                        else total, 1).astype(np.float64))
    delta = bm - mean[:, active]
    upd_mean = mean[:, active] + delta * frac
    upd_m2 = m2[:, active] + bm2 + delta * delta * old * frac
    if _arrays.is_torch(like):
        import torch

        cols = torch.as_tensor(active)
        mean = mean.index_copy(1, cols, upd_mean)
        m2 = m2.index_copy(1, cols, upd_m2)
    else:
        mean[:, active], m2[:, active] = upd_mean, upd_m2
    return mean, m2


def _like(ref, a):
    """The NumPy array a in ref's framework (a tensor of ref's dtype for a tensor)."""
    if _arrays.is_torch(ref):
        import torch

        return torch.as_tensor(a, dtype=ref.dtype)
    return a


def _stack_axis1(parts):
    if _arrays.is_torch(parts[0]):
        import torch

        return torch.stack(parts, 1)
    return np.stack(parts, 1)


def _cat(parts):
    if _arrays.is_torch(parts[0]):
        import torch

        return torch.cat(parts)
    return np.concatenate(parts)


def unscented(f, g, batch: tuple, op: str):
    """sum_a w_a / (2D) sum_k (log f - log g)(mu_a +- sqrt(D) L_a e_k), [k]."""
    F, G = Rows(f, batch, op), Rows(g, batch, op)
    d = f.d
    if F.f.diag:
        v = F.f.var
        sd = v.sqrt() if F.torch else np.sqrt(v)
        cols = _diag_embed(sd)  # [k, C, D, D]: column k is sd_k e_k
    else:
        cols = F.f.L
    step = math.sqrt(d) * _swap(cols)  # [k, C, D (which point), D]
    mean = F.f.mean[:, :, None, :]
    x = _cat_axis([mean + step, mean - step], 2)  # [k, C, 2D, D]
    r = F.log_prob(x) - G.log_prob(x)  # [k, C, 2D]
    w = F.lw.exp() if F.torch else np.exp(F.lw)
    return (w * r.mean(-1)).sum(-1)


def _diag_embed(v):
    if _arrays.is_torch(v):
        import torch

        return torch.diag_embed(v)
    return v[..., None] * np.eye(v.shape[-1])


def _cat_axis(parts, axis):
    if _arrays.is_torch(parts[0]):
        import torch

        return torch.cat(parts, dim=axis)
    return np.concatenate(parts, axis=axis)
