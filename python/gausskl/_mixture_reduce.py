"""Gaussian mixture reduction on moments (NumPy, float64): greedy moment-preserving merges.

A merge of i and j keeps the pair's weight, mean and covariance:

    w = w_i + w_j,  mu = (w_i mu_i + w_j mu_j) / w,
    P = (w_i P_i + w_j P_j) / w + (w_i w_j / w^2) (mu_i - mu_j)(mu_i - mu_j)^T

(the spread of the means from their difference: exact for means far from 0), so the mixture's
overall mean and covariance are preserved to rounding. The methods differ in the cost of a merge:

* runnalls (Runnalls 2007, "Kullback-Leibler approach to Gaussian mixture reduction", IEEE
  Trans. Aerospace and Electronic Systems 43(3)): B(i, j) = ((w_i + w_j) log det P_ij - w_i
  log det P_i - w_j log det P_j) / 2, an upper bound on the KL increase of the merge; the pair
  of least cost is merged.
* salmond (Salmond 1990, "Mixture reduction algorithms for target tracking in clutter", SPIE
  1305): (w_i w_j / (w_i + w_j)) (mu_i - mu_j)^T P^-1 (mu_i - mu_j), P the covariance of the
  whole mixture (fixed: merges preserve it); the pair of least cost is merged.
* west (West 1993, "Approximating posterior distributions by mixtures", JRSS B 55(2)): the
  component of least weight is merged with the one nearest to it in (w_i w_j / (w_i + w_j))
  (mu_i - mu_j)^T (P_i + P_j)^-1 (mu_i - mu_j) (the symmetric form of the Mahalanobis distance
  is our choice among the variants in use).

Lazy updates: the pair costs are one [C, C] matrix with each row's minimum kept; a merge
recomputes only the merged component's row and column (O(C) costs) and the minima of the rows
that pointed at the pair, so each merge costs O(C) cost evaluations rather than O(C^2).
"""

from __future__ import annotations

import numpy as np

METHODS = ("runnalls", "west", "salmond")
_BLOCK_BYTES = 256 << 20  # the initial costs, computed in row blocks of at most this


def merge(w, mu, P, i, j, diag: bool):
    """The moment-preserving merge of components i and j: (w, mu, P)."""
    wi, wj = w[i], w[j]
    wt = wi + wj
    d = mu[i] - mu[j]
    m = (wi * mu[i] + wj * mu[j]) / wt
    spread = d * d if diag else np.outer(d, d)
    return wt, m, (wi * P[i] + wj * P[j]) / wt + (wi * wj / (wt * wt)) * spread


def _logdet(P, diag: bool):
    if diag:
        return np.log(P).sum(-1)
    sign, ld = np.linalg.slogdet(P)
    return np.where(sign > 0, ld, -np.inf)


def _merged_cov(w, mu, P, i, js, diag: bool):
    """Covariances of i merged with each of js (vectorized), [len(js), D(, D)]."""
    wi, wj = w[i], w[js]
    wt = wi + wj
    d = mu[i] - mu[js]
    spread = d * d if diag else d[:, :, None] * d[:, None, :]
    shape = (-1, 1) if diag else (-1, 1, 1)
    return ((wi * P[i] + wj.reshape(shape) * P[js]) / wt.reshape(shape)
            + (wi * wj / (wt * wt)).reshape(shape) * spread)


def _costs(method, w, mu, P, ld, i, js, diag, Pinv_all):
    """The cost of merging i with each of js, [len(js)]."""
    if method == "runnalls":
        Pm = _merged_cov(w, mu, P, i, js, diag)
        return 0.5 * ((w[i] + w[js]) * _logdet(Pm, diag) - w[i] * ld[i] - w[js] * ld[js])
    d = mu[i] - mu[js]
    if method == "salmond":
        q = (d * d * Pinv_all).sum(-1) if diag else np.einsum("nd,de,ne->n", d, Pinv_all, d)
    else:  # west
        S = P[i] + P[js]
        q = (d * d / S).sum(-1) if diag else np.einsum("nd,nd->n", d,
                                                       np.linalg.solve(S, d[..., None])[..., 0])
    return w[i] * w[js] / (w[i] + w[js]) * q


def reduce_moments(weights, means, covs, *, components=None, threshold=None,
                   method="runnalls", op="reduce_mixture"):
    """weights [C], means [C, D], covs [C, D, D] (or [C, D]: diagonal variances, and every
    merge stays diagonal). Merges greedily until `components` remain or (threshold) the least
    cost exceeds `threshold`. Returns (weights [K], means [K, D], covs, groups [C] int64: each
    input component's output index). Inputs are assumed validated (gk.reduce_mixture does)."""
    w = np.array(weights, dtype=np.float64)
    mu = np.array(means, dtype=np.float64)
    P = np.array(covs, dtype=np.float64)
    c = w.shape[0]
    diag = P.ndim == 2
    if method not in METHODS:
        raise ValueError(f"[{op}] method must be one of {', '.join(METHODS)}, found {method!r}")
    if components is None and threshold is None:
        raise ValueError(f"[{op}] give components= (the number to keep), threshold= (the "
                         f"largest merge cost) or both")
    if components is not None and not (1 <= components <= c):
        raise ValueError(f"[{op}] components must be in 1..C = {c}, found {components}")
    keep = 1 if components is None else int(components)
    limit = np.inf if threshold is None else float(threshold)
    active = np.ones(c, bool)
    groups = np.arange(c)
    ld = _logdet(P, diag)
    Pinv_all = None
    if method == "salmond":
        m = (w[:, None] * mu).sum(0)
        dev = mu - m
        if diag:
            Pinv_all = 1.0 / (w[:, None] * (P + dev * dev)).sum(0)
        else:
            Pinv_all = np.linalg.inv((w[:, None, None] * (P + dev[:, :, None] * dev[:, None, :]))
                                     .sum(0))
    n_active = c
    if method == "west":
        while n_active > keep:
            idx = np.flatnonzero(active)
            i = idx[np.argmin(w[idx])]  # ties: the lowest index
            js = idx[idx != i]
            cost = _costs(method, w, mu, P, ld, i, js, diag, Pinv_all)
            k = int(np.argmin(cost))
            if cost[k] > limit:
                break
            j = int(js[k])
            a, b = min(i, j), max(i, j)
            w[a], mu[a], P[a] = merge(w, mu, P, a, b, diag)
            ld[a] = _logdet(P[a][None], diag)[0]
            active[b] = False
            groups[groups == b] = a
            n_active -= 1
        return _finish(w, mu, P, active, groups)

    # The pair costs, the diagonal and the lower triangle at +inf (pairs are i < j).
    cost = np.full((c, c), np.inf)
    per_row = c * (P[0].size + mu.shape[1]) * 8 * 4
    rows = max(1, _BLOCK_BYTES // max(per_row, 1))
    for r0 in range(0, c, rows):
        for i in range(r0, min(c, r0 + rows)):
            if i + 1 < c:
                js = np.arange(i + 1, c)
                cost[i, i + 1:] = _costs(method, w, mu, P, ld, i, js, diag, Pinv_all)
    row_min = cost.min(1)
    row_arg = cost.argmin(1)
    while n_active > keep:
        i = int(np.argmin(row_min))  # the lowest row among ties, then its lowest column
        j = int(row_arg[i])
        if not np.isfinite(row_min[i]) or row_min[i] > limit:
            break
        w[i], mu[i], P[i] = merge(w, mu, P, i, j, diag)
        ld[i] = _logdet(P[i][None], diag)[0]
        active[j] = False
        groups[groups == j] = i
        n_active -= 1
        cost[j, :] = np.inf
        cost[:, j] = np.inf
        others = np.flatnonzero(active)
        others = others[others != i]
        if others.size:
            new = _costs(method, w, mu, P, ld, i, others, diag, Pinv_all)
            lo, hi = others[others < i], others[others > i]
            cost[lo, i] = new[:lo.size]
            cost[i, hi] = new[lo.size:]
        cost[i, :i + 1] = np.inf
        # Rows whose minimum may have changed: i itself, j (now empty), rows that pointed at i
        # or j, and rows whose new cost to i undercuts their minimum.
        stale = np.flatnonzero((row_arg == i) | (row_arg == j))
        stale = np.union1d(stale, [i, j])
        for r in stale:
            row_min[r] = cost[r].min()
            row_arg[r] = cost[r].argmin()
        lo = others[others < i]
        c_lo = cost[lo, i]
        better = lo[(c_lo < row_min[lo]) | ((c_lo == row_min[lo]) & (i < row_arg[lo]))]
        row_min[better] = cost[better, i]
        row_arg[better] = i
    return _finish(w, mu, P, active, groups)


def _finish(w, mu, P, active, groups):
    idx = np.flatnonzero(active)
    renumber = np.full(len(active), -1)
    renumber[idx] = np.arange(idx.size)
    return w[idx], mu[idx], P[idx], renumber[groups].astype(np.int64)
