"""gk.frechet_distance: the Fréchet distance of FID, FAD, FVD (the squared 2-Wasserstein
distance of two Gaussians), under the name those users search for; its parts on request."""

from __future__ import annotations

import numpy as np

from gausskl._divergence import divergence
from gausskl._ops import _GAUSSIANS, _as_gaussian


def frechet_distance(p, q, *, details: bool = False, jitter: float = 0.0,
                     memory_budget: int | None = 0, threads: int = 0,
                     torch_path: bool | None = None):
    """The Fréchet distance ``|m_p - m_q|^2 + tr(S_p + S_q - 2 (S_p^1/2 S_q S_p^1/2)^1/2)``.

    The same value as ``gk.divergence(p, q, "wasserstein2")`` (FID is this number for two
    Gaussians fitted to Inception features). Full covariances are computed by symmetric
    factorizations only, in float64 whatever the inputs' precision: ``S_p = L L^T`` (Cholesky),
    then the eigenvalues of the symmetric ``L^T S_q L``, whose square roots sum to the trace
    term; no ``sqrtm`` of a non-symmetric product, so never a complex part, a NaN or a negative
    value. A positive semi-definite covariance (a sample covariance of N <= D rows) is accepted
    and gives the exact value: eigenvalues that are zero up to rounding contribute zero. A
    covariance with an eigenvalue negative beyond rounding is an error naming the matrix, the
    distribution and the eigenvalue.

    Parameters
    ----------
    p, q : Gaussian batches (see ``gk.divergence``), e.g. ``gk.FullGaussian(mu, covariance=sigma)``
        for pytorch-fid's statistics.
    details : bool, default False
        Also return a dict of the parts, one entry per distribution of the broadcast batch
        (arrays of its shape): ``mean_term`` (``|m_p - m_q|^2``), ``trace_term`` (the rest),
        ``smallest_eigenvalues`` (the 5 smallest eigenvalues of ``L^T S_q L``, a trailing axis),
        ``zero_eigenvalues`` (how many were treated as zero: at most ``D eps`` times the largest)
        and ``rank_p``, ``rank_q`` (each covariance's eigenvalues above ``D eps`` times its
        largest). Computed again in NumPy (float64) from the inputs, beside the library's value.
    jitter, memory_budget, threads, torch_path
        As for ``gk.divergence``.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        ``gk.divergence(p, q, "wasserstein2")``; with ``details``, ``(value, dict)``.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> p = gk.FullGaussian(np.zeros(2), covariance=np.eye(2))
    >>> q = gk.FullGaussian(np.ones(2), covariance=4 * np.eye(2))
    >>> float(gk.frechet_distance(p, q))  # |(1, 1)|^2 + 2 (2 - 1)^2
    4.0
    """
    value = divergence(p, q, "wasserstein2", jitter=jitter, memory_budget=memory_budget,
                       threads=threads, torch_path=torch_path)
    if not details:
        return value
    return value, _details(p, q)


def _numpy_full(g):
    """(mean [..., D], covariance [..., D, D]) of a gausskl batch in float64 NumPy."""
    if g.__class__ not in _GAUSSIANS:
        g = _as_gaussian("frechet_distance", "p", g)

    def arr(x):
        if hasattr(x, "detach"):
            x = x.detach().cpu().numpy()
        return np.asarray(x, dtype=np.float64)

    a = [arr(v) for v in g.arrays.values()]  # mean, scale (, cov_diag)
    m, x = a[0], a[1]
    if g.family == "diag":
        var = {"std": lambda x: x * x, "var": lambda x: x, "logvar": np.exp,
               "precision": lambda x: 1 / x}[g.param](x)
        return m, var[..., :, None] * np.eye(m.shape[-1])
    if g.family == "lowrank":
        return m, x @ np.swapaxes(x, -1, -2) + a[2][..., :, None] * np.eye(m.shape[-1])
    if g.param == "covariance":
        return m, x
    if g.param == "scale_tril":
        return m, x @ np.swapaxes(x, -1, -2)
    if g.param == "precision_matrix":
        return m, np.linalg.inv(x)
    e = x  # packed_scale_tril: L's lower triangle row by row
    d = m.shape[-1]
    lt = np.zeros(e.shape[:-1] + (d, d))
    lt[..., np.tril_indices(d)[0], np.tril_indices(d)[1]] = e
    if g.log_diagonal:
        idx = np.arange(d)
        lt[..., idx, idx] = np.exp(lt[..., idx, idx])
    return m, lt @ np.swapaxes(lt, -1, -2)


def _factor(s):
    """F with F F^T = s: Cholesky, or from the eigenvectors where s is singular."""
    try:
        return np.linalg.cholesky(s)
    except np.linalg.LinAlgError:
        w, u = np.linalg.eigh(s)
        d = s.shape[-1]
        tol = d * np.finfo(np.float64).eps * np.abs(w).max(-1, keepdims=True)
        return u * np.sqrt(np.where(w > tol, w, 0.0))[..., None, :]


def _rank(s):
    w = np.linalg.eigvalsh(s)
    tol = s.shape[-1] * np.finfo(np.float64).eps * np.abs(w).max(-1, keepdims=True)
    return (w > tol).sum(-1)


def _details(p, q) -> dict:
    mp, sp = _numpy_full(p)
    mq, sq = _numpy_full(q)
    mp, mq = np.broadcast_arrays(mp, mq)
    sp, sq = np.broadcast_arrays(sp, sq)
    mean_term = ((mp - mq) ** 2).sum(-1)
    flat_p, flat_q = sp.reshape((-1,) + sp.shape[-2:]), sq.reshape((-1,) + sq.shape[-2:])
    eigs = []
    for a, b in zip(flat_p, flat_q):
        f = _factor(a)
        eigs.append(np.linalg.eigvalsh(f.T @ b @ f))
    mu = np.array(eigs).reshape(sp.shape[:-1])
    d = sp.shape[-1]
    tol = d * np.finfo(np.float64).eps * np.maximum(mu.max(-1, keepdims=True), 0.0)
    zero = mu <= tol
    roots = np.where(zero, 0.0, np.sqrt(np.where(zero, 0.0, mu))).sum(-1)
    trace_term = np.maximum(np.trace(sp, axis1=-2, axis2=-1) + np.trace(sq, axis1=-2, axis2=-1)
                            - 2 * roots, 0.0)
    return {"mean_term": mean_term, "trace_term": trace_term,
            "smallest_eigenvalues": mu[..., :5], "zero_eigenvalues": zero.sum(-1),
            "rank_p": _rank(sp), "rank_q": _rank(sq)}
