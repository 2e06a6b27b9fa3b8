"""Gaussian mixture reduction on moments (NumPy, float64): greedy moment-preserving merges.

A merge of i and j keeps the pair's weight, mean and covariance:

    w = w_i + w_j,  mu = (w_i mu_i + w_j mu_j) / w,
    P = (w_i P_i + w_j P_j) / w + (w_i w_j / w^2) (mu_i - mu_j)(mu_i - mu_j)^T

(the spread of the means from their difference, not from E[x x^T] - mu mu^T: exact for means
far from 0), so the mixture's overall mean and covariance are preserved to rounding. With
diagonal variances [C, D] the spread is the elementwise square and every merge stays diagonal.
The methods differ in the cost of a merge:

* runnalls (Runnalls 2007, "Kullback-Leibler approach to Gaussian mixture reduction", IEEE
  Trans. Aerospace and Electronic Systems 43(3)): B(i, j) = ((w_i + w_j) log det P_ij - w_i
  log det P_i - w_j log det P_j) / 2, an upper bound on the KL increase of the merge (log dets
  from the Cholesky pivots, or the sum of log variances); the pair of least cost is merged.
* salmond (Salmond 1990, "Mixture reduction algorithms for target tracking in clutter", SPIE
  1305): (w_i w_j / (w_i + w_j)) (mu_i - mu_j)^T P^-1 (mu_i - mu_j), P the covariance of the
  whole mixture, computed once (merges preserve it); the pair of least cost is merged.
* west (West 1993, "Approximating posterior distributions by mixtures", JRSS B 55(2)): the
  component of least weight is merged with the one of least (w_i w_j / (w_i + w_j))
  (mu_i - mu_j)^T (P_i + P_j)^-1 (mu_i - mu_j). Our choice among the variants in use: the
  symmetric Mahalanobis form with P_i + P_j, scaled like Salmond's (the scale does not change
  which partner is chosen, only what `threshold` compares against).

Ties go to the lowest (i, j), so results are deterministic.

Lazy updates (runnalls, salmond): the pair costs are one [C, C] float64 matrix (the upper
triangle used) with each row's minimum and its column cached. The initial costs are computed
in blocks of rows, vectorized, under a memory cap; a merge recomputes only the merged
component's row and column (O(C) costs) and the minima of the rows that pointed at the pair,
and the next pair is the least of the C row minima: O(C) per merge, not O(C^2). West's choice
needs only the costs from the lightest component: O(C) per merge without a matrix.
"""

from __future__ import annotations

import math

import numpy as np

METHODS = ("runnalls", "west", "salmond")
_SMALL_D = 8  # up to this D, log dets by vectorized elimination (_logdet)
_BLOCK_BYTES = 256 << 20  # the initial costs: rows * C * (D * D + D) * 8 bytes at most this


def merge(w, mu, P, i, j, diag: bool):
    """The moment-preserving merge of components i and j: (w, mu, P)."""
    wi, wj = w[i], w[j]
    wt = wi + wj
    d = mu[i] - mu[j]
    spread = d * d if diag else np.outer(d, d)
    return (wt, (wi * mu[i] + wj * mu[j]) / wt,
            (wi * P[i] + wj * P[j]) / wt + (wi * wj / (wt * wt)) * spread)


def _logdet(P, diag: bool):
    """log det of each covariance [..., D, D] or variance vector [..., D]."""
    if diag:
        return np.log(P).sum(-1)
    if P.shape[-1] > _SMALL_D:
        L = np.linalg.cholesky(P)
        return 2.0 * np.log(np.diagonal(L, 0, -2, -1)).sum(-1)
    # Small D: the Cholesky pivots by elimination, vectorized over the batch (D^3 / 3 array
    # operations beat one LAPACK call per 2x2 or 4x4 matrix by ~10x; the same pivots, stable
    # for SPD matrices, which every merge of SPD covariances is).
    A = np.array(P)
    ld = np.zeros(P.shape[:-2])
    for k in range(P.shape[-1]):
        piv = A[..., k, k]
        ld += np.log(piv)
        col = A[..., k + 1:, k] / piv[..., None]
        A[..., k + 1:, k + 1:] -= col[..., :, None] * A[..., k, k + 1:][..., None, :]
    return ld


def _costs(method, w, mu, P, ld, i, js, diag, Pinv_all):
    """The cost of merging i with each of js: i an index (costs [n]) or an index column [b, 1]
    (costs [b, n], broadcast)."""
    wi, wj = np.asarray(w[i]), w[js]
    d = mu[i] - mu[js]
    if method == "runnalls":
        wt = wi + wj
        e = (...,) + (None,) * (1 if diag else 2)  # weights against [.., D] or [.., D, D]
        spread = d * d if diag else d[..., :, None] * d[..., None, :]
        Pm = ((wi[e] * P[i] + wj[e] * P[js]) / wt[e] + (wi * wj / (wt * wt))[e] * spread)
        return 0.5 * (wt * _logdet(Pm, diag) - wi * ld[i] - wj * ld[js])
    if method == "salmond":
        q = (d * d * Pinv_all).sum(-1) if diag else np.einsum("...d,de,...e->...", d, Pinv_all, d)
    else:  # west
        S = P[i] + P[js]
        q = ((d * d / S).sum(-1) if diag else
             np.einsum("...d,...d->...", d, np.linalg.solve(S, d[..., None])[..., 0]))
    return wi * wj / (wi + wj) * q


def _check(op, w, mu, P, components, threshold, method):
    """The input rules, each a ValueError `[op] what, where`; returns C."""
    if method not in METHODS:
        raise ValueError(f"[{op}] method must be one of {', '.join(METHODS)}, found {method!r}")
    if w.ndim != 1 or w.shape[0] < 1:
        raise ValueError(f"[{op}] weights must be a vector [C] with C >= 1, found shape {w.shape}")
    c = w.shape[0]
    if mu.ndim != 2 or mu.shape[0] != c or mu.shape[1] < 1:
        raise ValueError(f"[{op}] means must be [C, D] = [{c}, D], found shape {mu.shape}")
    d = mu.shape[1]
    if P.shape not in ((c, d, d), (c, d)):
        raise ValueError(f"[{op}] covs must be [C, D, D] = [{c}, {d}, {d}] or diagonal "
                         f"[C, D] = [{c}, {d}], found shape {P.shape}")
    if components is None and threshold is None:
        raise ValueError(f"[{op}] give components= (the number to keep), threshold= (the "
                         f"largest merge cost) or both")
    if components is not None and not (isinstance(components, (int, np.integer))
                                       and 1 <= components <= c):
        raise ValueError(f"[{op}] components must be in 1..C = {c}, found {components!r}")
    if threshold is not None and not (isinstance(threshold, (int, float, np.floating))
                                      and math.isfinite(threshold) and threshold >= 0):
        raise ValueError(f"[{op}] threshold must be a finite number >= 0, found {threshold!r}")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"[{op}] weights must be finite and >= 0, found {float(w[k])!r} at "
                         f"component {k}")
    # 1e-6, not 16 C eps: gk.reduce_mixture passes exp(log_weights), and for a float32
    # mixture those sum to 1 only to ~1e-7 (measured up to 9e-8 at C = 10,000). Weights off by
    # more than that are a caller's error; the merges never rely on the sum being exactly 1.
    tol = 1e-6
    if abs(w.sum() - 1.0) > tol:
        raise ValueError(f"[{op}] weights must sum to 1 (within {tol:.3g}), found "
                         f"{float(w.sum())!r}")
    for name, a in (("means", mu), ("covs", P)):
        bad = ~np.isfinite(a).reshape(c, -1).all(1)
        if bad.any():
            raise ValueError(f"[{op}] {name} must be finite, found a non-finite entry at "
                             f"component {int(np.argmax(bad))}")
    if P.ndim == 2:
        bad = ~(P > 0).all(1)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"[{op}] diagonal covs must be > 0, found {P[k].tolist()} at "
                             f"component {k}")
        return c
    scale = np.abs(P).reshape(c, -1).max(1)
    asym = np.abs(P - np.swapaxes(P, -1, -2)).reshape(c, -1).max(1) > 1e-12 * scale
    if asym.any():
        raise ValueError(f"[{op}] covs must be symmetric, found an asymmetric matrix at "
                         f"component {int(np.argmax(asym))}")
    try:
        np.linalg.cholesky(P)
    except np.linalg.LinAlgError:
        for k in range(c):  # only on failure: which component
            try:
                np.linalg.cholesky(P[k])
            except np.linalg.LinAlgError:
                raise ValueError(f"[{op}] covs must be positive definite (Cholesky failed) "
                                 f"at component {k}") from None
    return c


def reduce_moments(weights, means, covs, *, components=None, threshold=None,
                   method="runnalls", op="reduce_mixture"):
    """Greedy moment-preserving reduction of a mixture on its moments.

    weights [C], means [C, D], covs [C, D, D] (full) or [C, D] (diagonal variances: every
    merge stays diagonal and the costs use diagonal determinants). Merges until `components`
    remain or, with `threshold`, until the least merge cost exceeds it (whichever comes first;
    at least one must be given). `method`: one of METHODS (the module docstring has the costs).

    Returns (weights [K], means [K, D], covs [K, D, D] or [K, D], groups int64 [C]: each input
    component's output index). Inputs that break a rule raise ValueError `[op] ...`.
    """
    w = np.array(weights, dtype=np.float64)
    mu = np.array(means, dtype=np.float64)
    P = np.array(covs, dtype=np.float64)
    c = _check(op, w, mu, P, components, threshold, method)
    diag = P.ndim == 2
    keep = 1 if components is None else int(components)
    limit = np.inf if threshold is None else float(threshold)
    ld = _logdet(P, diag)
    Pinv_all = _mixture_precision(w, mu, P, diag) if method == "salmond" else None
    state = (w, mu, P, ld, diag, Pinv_all)
    if method == "west":
        active = _west(state, c, keep, limit)
    else:
        active = _lazy_pairs(method, state, c, keep, limit)
    return _finish(w, mu, P, active)


def _mixture_precision(w, mu, P, diag):
    """The inverse of the whole mixture's covariance (Salmond's metric)."""
    dev = mu - (w[:, None] * mu).sum(0)
    if diag:
        return 1.0 / (w[:, None] * (P + dev * dev)).sum(0)
    return np.linalg.inv((w[:, None, None] * (P + dev[:, :, None] * dev[:, None, :])).sum(0))


def _merge_into(state, i, j, groups):
    """Merge j into i in place and relabel j's group."""
    w, mu, P, ld, diag, _ = state
    w[i], mu[i], P[i] = merge(w, mu, P, i, j, diag)
    ld[i] = _logdet(P[i], diag)
    groups[groups == j] = i


def _west(state, c, keep, limit):
    """West's greedy: the lightest component into its cheapest partner."""
    w, mu, P, ld, diag, _ = state
    active = np.ones(c, bool)
    groups = np.arange(c)
    for _ in range(c - keep):
        idx = np.flatnonzero(active)
        i = idx[np.argmin(w[idx])]  # ties: the lowest index
        js = idx[idx != i]
        cost = _costs("west", w, mu, P, ld, i, js, diag, None)
        k = int(np.argmin(cost))  # ties: the lowest partner index
        if cost[k] > limit:
            break
        a, b = min(i, int(js[k])), max(i, int(js[k]))
        _merge_into(state, a, b, groups)
        active[b] = False
    return active, groups


def _initial_costs(method, state, c):
    """The [C, C] pair costs, +inf on and below the diagonal, in vectorized row blocks."""
    w, mu, P, ld, diag, Pinv_all = state
    cost = np.full((c, c), np.inf)
    per_row = c * (P[0].size + mu.shape[1]) * 8 * 4  # ~4 temporaries of [C, D(, D)]
    rows = max(1, _BLOCK_BYTES // per_row)
    for r0 in range(0, c - 1, rows):
        r1 = min(c - 1, r0 + rows)
        js = np.arange(r0 + 1, c)  # columns right of the block's first row
        block = _costs(method, w, mu, P, ld, np.arange(r0, r1)[:, None], js, diag, Pinv_all)
        block[js[None, :] <= np.arange(r0, r1)[:, None]] = np.inf
        cost[r0:r1, r0 + 1:] = block
    return cost


def _lazy_pairs(method, state, c, keep, limit):
    """The greedy over all pairs (runnalls, salmond) with the cached row minima."""
    w, mu, P, ld, diag, Pinv_all = state
    active = np.ones(c, bool)
    groups = np.arange(c)
    cost = _initial_costs(method, state, c)
    row_min = cost.min(1)
    row_arg = cost.argmin(1)  # argmin: the lowest column among ties
    for _ in range(c - keep):
        i = int(np.argmin(row_min))  # the lowest row among ties, then its lowest column
        j = int(row_arg[i])
        if not np.isfinite(row_min[i]) or row_min[i] > limit:
            break
        _merge_into(state, i, j, groups)
        active[j] = False
        cost[j, :] = np.inf
        cost[:, j] = np.inf
        others = np.flatnonzero(active)
        others = others[others != i]
        if others.size:
            new = _costs(method, w, mu, P, ld, i, others, diag, Pinv_all)
            lo, hi = others[others < i], others[others > i]
            cost[lo, i] = new[:lo.size]
            cost[i, hi] = new[lo.size:]
        # Rows whose minimum may have changed: i, j (now empty) and the rows that pointed at
        # i or j are recomputed; other rows above i only compare their new cost to i.
        stale = np.union1d(np.flatnonzero((row_arg == i) | (row_arg == j)), [i, j])
        row_min[stale] = cost[stale].min(1)
        row_arg[stale] = cost[stale].argmin(1)
        lo = others[others < i]
        c_lo = cost[lo, i]
        wins = (c_lo < row_min[lo]) | ((c_lo == row_min[lo]) & (i < row_arg[lo]))
        row_min[lo[wins]] = c_lo[wins]
        row_arg[lo[wins]] = i
    return active, groups


def _finish(w, mu, P, active_groups):
    active, groups = active_groups
    idx = np.flatnonzero(active)
    renumber = np.full(active.size, -1, dtype=np.int64)
    renumber[idx] = np.arange(idx.size)
    return w[idx], mu[idx], P[idx], renumber[groups]
