"""Densities, samples and the Monte Carlo KL of Gaussian mixtures (NumPy or torch).

Every component is read through its dense Cholesky factor L (L L' = Sigma; a diagonal batch
through its variances), built once per call. Monte Carlo samples are drawn in blocks of a fixed
number per component, each block from a generator seeded by (seed, block, component): the
values do not depend on memory_budget or on the number of threads.
"""

from __future__ import annotations

import math

import numpy as np

from gausskl import _anyarray as _x
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
            self.var = _dense.variances(g, op)
        else:
            self.L = _x.cholesky(_dense.covariance(g, op))

    def log_density(self, x):
        """log N(x; mu_c, Sigma_c) for x [k, ..., D] against every component: [k, ..., C]."""
        k, d = x.shape[0], x.shape[-1]
        mid = tuple(x.shape[1:-1])
        xf = x.reshape((k, -1, d))  # [k, M, D]
        dev = xf[:, None, :, :] - self.mean[:, :, None, :]  # [k, C, M, D]
        if self.diag:
            quad = (dev * dev / self.var[:, :, None, :]).sum(-1)
        else:  # one triangular solve per component, the M points as right-hand sides
            y = _x.solve_lower(self.L, _x.swap_last(dev))
            quad = (y * y).sum(-2)
        out = -0.5 * (quad + d * _LOG_2PI + self.logdet[:, :, None])  # [k, C, M]
        return _x.swap_last(out).reshape((k, *mid, out.shape[1]))

    def transform_rows(self, z, r0: int, r1: int, cols):
        """mu + L z for rows r0:r1, the components `cols` (an int array) and z [r1 - r0,
        len(cols), m, D] (standard normal): samples of those components."""
        cols = _x.index(cols, self.torch)
        mean = self.mean[r0:r1][:, cols, None, :]
        if self.diag:
            return mean + _x.sqrt(self.var[r0:r1][:, cols])[:, :, None, :] * z
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


def _normals(torch_: bool, like, shape, seed: int, *key: int):
    """Standard normals of `shape` from the generator of (seed, *key)."""
    if torch_:
        import torch

        gen = torch.Generator().manual_seed(int(np.random.SeedSequence([seed, *key])
                                                .generate_state(1, np.uint64)[0] >> 1))
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(like.device)
    return np.random.default_rng([seed, *key]).standard_normal(shape)


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
        generator of (seed, 2^31), the normals by that of (seed, 0)."""
        w = self.lw.detach().exp().cpu().numpy() if self.torch else np.exp(self.lw)
        u = np.random.default_rng([seed, 2**31]).random((self.k, n))
        cum = np.cumsum(w, -1)
        cum[:, -1] = np.inf  # rounding of the sum never leaves u past the last component
        idx = np.stack([np.searchsorted(cum[r], u[r], side="right") for r in range(self.k)])
        z = _normals(self.torch, self.lw, (self.k, n, self.f.mean.shape[-1]), seed, 0)
        f = self.f
        rows, idx = _x.index(np.arange(self.k)[:, None], self.torch), _x.index(idx, self.torch)
        mean = f.mean[rows, idx]
        if f.diag:
            return mean + _x.sqrt(f.var[rows, idx]) * z
        return mean + (f.L[rows, idx] @ z[..., None])[..., 0]

    def log_prob(self, x):
        """log of the mixture's density at x [k, ..., D]: [k, ...]."""
        return self.log_prob_rows(x, 0, self.k)

    def log_prob_rows(self, x, r0: int, r1: int):
        extra = x.ndim - 2
        lw = self.lw[r0:r1][(slice(None),) + (None,) * extra]
        return _x.lse(self.f.rows(r0, r1).log_density(x) + lw, -1)


def monte_carlo(f, g, batch: tuple, samples: int, seed: int, budget: int, op: str):
    """(estimate [k], standard error [k]) of KL(f || g), stratified by f's components with a
    proportional allocation: component a of each mixture gets m_a = max(2, ceil(samples w_a))
    samples (none at weight 0); the estimate is sum_a w_a mean_a(log f - log g), its variance
    sum_a w_a^2 var_a / m_a (at most plain sampling's for the same count, up to rounding).
    Blocks of BLOCK samples of one component come from the generator of (seed, block,
    component)."""
    F, G = Rows(f, batch, op), Rows(g, batch, op)
    k, c, d = F.k, F.c, f.d
    w = _x.exp(F.lw)
    w_np = w.detach().cpu().numpy() if F.torch else w
    m = np.where(w_np > 0, np.maximum(2, np.ceil(samples * w_np)), 0).astype(np.int64)  # [k, C]
    per_row = BLOCK * max(c, G.c) * d * 8 * 4  # the widest temporary of one row's block
    step = max(1, budget // per_row)
    # Each (row, component)'s count, mean and sum of squared deviations, merged block by block
    # (Chan et al.'s pairwise update; a first block, count 0 before it, sets them).
    count = np.zeros((k, c), np.int64)
    mean = _x.like(F.lw, np.zeros((k, c)))
    m2 = _x.like(F.lw, np.zeros((k, c)))
    for b in range(-(-int(m.max()) // BLOCK)):
        active = np.flatnonzero((m > b * BLOCK).any(0))  # the components some row still samples
        z = _x.stack([_normals(F.torch, F.lw, (k, BLOCK, d), seed, b, int(a)) for a in active],
                     1)  # [k, A, BLOCK, D]
        parts = []
        for r0 in range(0, k, step):
            r1 = min(k, r0 + step)
            x = F.f.transform_rows(z[r0:r1], r0, r1, active)
            parts.append(F.log_prob_rows(x, r0, r1) - G.log_prob_rows(x, r0, r1))
        r = _x.cat(parts)  # [k, A, BLOCK]
        valid = (b * BLOCK + np.arange(BLOCK)) < m[:, active, None]  # [k, A, BLOCK]
        n_b = valid.sum(-1)
        mask = _x.like(r, valid.astype(np.float64))
        bm = (r * mask).sum(-1) / _x.like(r, np.maximum(n_b, 1).astype(np.float64))
        bm2 = (((r - bm[..., None]) ** 2) * mask).sum(-1)
        old = count[:, active]
        frac = _x.like(r, n_b / np.maximum(old + n_b, 1))
        cols = _x.index(active, F.torch)
        delta = bm - mean[:, cols]
        new_mean = mean[:, cols] + delta * frac
        new_m2 = m2[:, cols] + bm2 + delta * delta * _x.like(r, old.astype(np.float64)) * frac
        if F.torch:
            mean, m2 = mean.index_copy(1, cols, new_mean), m2.index_copy(1, cols, new_m2)
        else:
            mean[:, cols], m2[:, cols] = new_mean, new_m2
        count[:, active] += n_b
    var = m2 / _x.like(w, np.maximum(count - 1, 1).astype(np.float64))
    est = (w * mean).sum(-1)
    se = (w * w * var / _x.like(w, np.maximum(count, 1).astype(np.float64))).sum(-1)
    return est, _x.sqrt(se)


def unscented(f, g, batch: tuple, op: str):
    """sum_a w_a / (2D) sum_k (log f - log g)(mu_a +- sqrt(D) L_a e_k), [k]."""
    F, G = Rows(f, batch, op), Rows(g, batch, op)
    # The columns of each component's factor: sd_k e_k for a diagonal family.
    cols = _x.diag_embed(_x.sqrt(F.f.var)) if F.f.diag else F.f.L  # [k, C, D, D]
    step = math.sqrt(f.d) * _x.swap_last(cols)  # [k, C, D (which point), D]
    mean = F.f.mean[:, :, None, :]
    x = _x.cat([mean + step, mean - step], 2)  # [k, C, 2D, D]
    r = F.log_prob(x) - G.log_prob(x)  # [k, C, 2D]
    return (_x.exp(F.lw) * r.mean(-1)).sum(-1)
