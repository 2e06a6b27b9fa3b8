"""The oracle of the CLI tests: KL divergences in NumPy float64, written independently of the
C++ library.

A batch of Gaussians is a dict of arrays named as in the CLI input files: `mean` plus one of
`std`, `var`, `logvar`, `precision`, `scale_tril`, `covariance`, `precision_matrix`,
`packed_scale_tril` (L's lower triangle row by row, its diagonal as log L_rr with
log_diagonal=True, as the CLI's --log-diagonal), or `cov_factor` with `cov_diag`. A 1-D `mean`
is one distribution. Diagonal pairs use the closed form; anything else is densified to
covariances and goes through a Cholesky factor and solves:

    2 KL(p || q) = tr(T^-1 S) + (mu_p - mu_q)' T^-1 (mu_p - mu_q) - D + log|T| - log|S|
"""

import numpy as np

DIAGONAL = ("std", "var", "logvar", "precision")
FULL = ("scale_tril", "covariance", "precision_matrix")


def _batched(g):
    """The batch with every array in float64 and a leading N axis."""
    g = {k: np.asarray(v, dtype=np.float64) for k, v in g.items()}
    if g["mean"].ndim == 1:
        g = {k: v[np.newaxis] for k, v in g.items()}
    return g


def _variance(g):
    if "std" in g:
        return g["std"] ** 2
    if "var" in g:
        return g["var"]
    if "logvar" in g:
        return np.exp(g["logvar"])
    if "precision" in g:
        return 1.0 / g["precision"]
    return None


def _unpack(packed, d, log_diagonal):
    """[N, d (d + 1) / 2] -> [N, d, d]: L's lower triangle row by row (torch.tril_indices)."""
    L = np.zeros((packed.shape[0], d, d))
    rows, cols = np.tril_indices(d)
    L[:, rows, cols] = packed
    if log_diagonal:
        L[:, np.arange(d), np.arange(d)] = np.exp(np.diagonal(L, axis1=1, axis2=2))
    return L


def _covariance(g, log_diagonal=False):
    var = _variance(g)
    if var is not None:
        return var[:, :, np.newaxis] * np.eye(var.shape[1])
    if "scale_tril" in g or "packed_scale_tril" in g:
        L = g.get("scale_tril")
        if L is None:
            L = _unpack(g["packed_scale_tril"], g["mean"].shape[1], log_diagonal)
        return L @ L.transpose(0, 2, 1)
    if "covariance" in g:
        return g["covariance"]
    if "precision_matrix" in g:
        return np.linalg.inv(g["precision_matrix"])
    W = g["cov_factor"]
    return W @ W.transpose(0, 2, 1) + g["cov_diag"][:, :, np.newaxis] * np.eye(W.shape[1])


def _kl_diag(mp, vp, mq, vq):
    return 0.5 * np.sum(vp / vq + (mp - mq) ** 2 / vq - 1.0 - np.log(vp) + np.log(vq), axis=-1)


def _logdet(L):
    return 2.0 * np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), axis=-1)


def _kl_full(mp, S, mq, T):
    Lq = np.linalg.cholesky(T)
    Lp = np.linalg.cholesky(S)
    trace = np.trace(np.linalg.solve(T, S), axis1=-2, axis2=-1)
    diff = (mq - mp)[..., np.newaxis]
    maha = np.sum(diff * np.linalg.solve(T, diff), axis=(-2, -1))
    return 0.5 * (trace + maha - mp.shape[-1] + _logdet(Lq) - _logdet(Lp))


def _kl_rows(p, ip, q, iq, log_diagonal=False):
    """KL(p[ip[k]] || q[iq[k]]) for each k."""
    vp, vq = _variance(p), _variance(q)
    if vp is not None and vq is not None:
        return _kl_diag(p["mean"][ip], vp[ip], q["mean"][iq], vq[iq])
    sp, sq = _covariance(p, log_diagonal), _covariance(q, log_diagonal)
    return _kl_full(p["mean"][ip], sp[ip], q["mean"][iq], sq[iq])


def standard_normal(d):
    return {"mean": np.zeros((1, d)), "var": np.ones((1, d))}


def kl(p, q=None, log_diagonal=False):
    """out[i] = KL(p_i || q_i), N = 1 broadcasting on either side; q = N(0, I) when None."""
    p = _batched(p)
    q = standard_normal(p["mean"].shape[1]) if q is None else _batched(q)
    n, m = len(p["mean"]), len(q["mean"])
    assert n == m or n == 1 or m == 1
    k = np.arange(max(n, m))
    return _kl_rows(p, np.minimum(k, n - 1), q, np.minimum(k, m - 1), log_diagonal)


def pairwise(p, q=None, log_diagonal=False):
    """out[i, j] = KL(p_i || q_j); q = p when None."""
    p = _batched(p)
    q = p if q is None else _batched(q)
    n, m = len(p["mean"]), len(q["mean"])
    i, j = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    return _kl_rows(p, i.ravel(), q, j.ravel(), log_diagonal).reshape(n, m)


def knn(matrix, k, exclude_self=False):
    """Brute force on a pairwise matrix: the k smallest per row, ascending, ties to lower j."""
    matrix = np.array(matrix, dtype=np.float64)
    if exclude_self:
        np.fill_diagonal(matrix, np.inf)
    columns = np.arange(matrix.shape[1])
    indices = np.array([np.lexsort((columns, row))[:k] for row in matrix], dtype=np.int64)
    return indices, np.take_along_axis(matrix, indices, axis=1)
