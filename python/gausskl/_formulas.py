"""The divergences as torch formulas, one entry per kind (docs/divergences.md): its diagonal
form, its dense form, whether it is symmetric, whether it takes an order alpha. The torch path,
the gradients of the library's values, and the torch.compile / torch.func.vmap operators of
gausskl._compile all read KINDS.

* Diagonal form: diag(alpha, m1, s1, l1, m2, s2, l2), the closed form per dimension summed over
  the last axis, from each side's (mean, sigma, log sigma), broadcasting.
* Dense form: dense(alpha, P, Q, check) on prepared rows (gausskl._divergence_torch._Prep: mean,
  covariance S, square factor L with L L' = S, ln det S), (values, RenyiFailure or None); the
  failure only with check, where a mixed covariance is not positive definite.
* KL's torch formulas are gausskl._torch_path's (its Side, row-wise and GEMM forms), which the
  KL operators reach directly: its entry here says only what KL is (asymmetric, no alpha).
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import torch

from gausskl import _ext


class Kind(NamedTuple):
    name: str
    symmetric: bool
    takes_alpha: bool
    diag: Callable | None
    dense: Callable | None
    # renyi of order > 1 on diagonal sides: the first pair whose mixed variance is not positive
    diag_failure: Callable | None = None


class RenyiFailure:
    """The first pair (its index among the pairs given) whose mixed covariance is not positive
    definite: its pivot and the pivot's value, as the library reports them."""

    def __init__(self, index: int, pivot: int, value: float):
        self.index, self.pivot, self.value = index, pivot, value


# -- diagonal forms --------------------------------------------------------------------------------

def _m(u):
    """u - log1p(u); the library's series near 0 is for values, this is for gradients."""
    return u - torch.log1p(u)


def _jeffreys_diag(alpha, m1, s1, l1, m2, s2, l2):  # 4 sinh^2 t, no r - ln r
    delta, t = m1 - m2, l1 - l2
    return (0.5 * (delta**2 * (torch.exp(-2 * l1) + torch.exp(-2 * l2))
                   + 4 * torch.sinh(t) ** 2)).sum(-1)


def _bhattacharyya_diag(alpha, m1, s1, l1, m2, s2, l2):
    delta, t = m1 - m2, l1 - l2
    log_cosh = torch.abs(t) + torch.log1p(torch.exp(-2 * torch.abs(t))) - math.log(2)
    return (0.25 * delta**2 / (s1**2 + s2**2) + 0.5 * log_cosh).sum(-1)


def _wasserstein2_diag(alpha, m1, s1, l1, m2, s2, l2):
    return ((m1 - m2) ** 2 + (s1 - s2) ** 2).sum(-1)


def _renyi_diag(alpha, m1, s1, l1, m2, s2, l2):
    delta, t = m1 - m2, l1 - l2
    beta = 1 - alpha
    mu = torch.expm1(2 * t)
    mixed = 1 + beta * mu
    return (0.5 * alpha * delta**2 * torch.exp(-2 * l2) / mixed
            + 0.5 * (_m(mu) - _m(beta * mu) / beta)).sum(-1)


def _renyi_diag_failure(alpha, P, Q):
    if alpha <= 1:
        return None
    with torch.no_grad():
        mixed = 1 + (1 - alpha) * torch.expm1(2 * (P.logsigma - Q.logsigma))
        bad = torch.nonzero(~(mixed > 0))
    if not bad.numel():
        return None
    i, h = int(bad[0, 0]), int(bad[0, 1])
    return RenyiFailure(i, h, float(mixed[i, h] * Q.sigma[i, h] ** 2))


# -- dense forms -----------------------------------------------------------------------------------

def _solve(P, X):
    return torch.linalg.solve_triangular(P.L, X, upper=P.upper)


def _sq(X):
    return (X * X).sum((-2, -1))


def _logdet_of(L):
    return 2.0 * torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)


def _jeffreys_dense(alpha, P, Q, check):  # KL both ways: the log-determinants cancel out
    d = (P.mean - Q.mean)[..., None]
    dim = P.mean.shape[-1]
    two = (_sq(_solve(Q, P.L)) + _sq(_solve(P, Q.L)) + _sq(_solve(P, d)) + _sq(_solve(Q, d))
           - 2 * dim)
    return torch.clamp_min(0.5 * two, 0.0), None


# wasserstein2 as the library computes it (src/cpu/divergence/dense.hpp): up to this D the polar
# form, above it between full sides the trace form of symmetric factorizations.
_W2_POLAR_ALWAYS = 8


def _w2_trace(d, P, Q):
    """|d|^2 + tr S_1 + tr S_2 - 2 sum sqrt(eig(L_1' S_2 L_1)): L_1' S_2 L_1 is symmetric and
    similar to S_1 S_2, so its eigenvalues (eigvalsh, differentiable) are those of S_1 S_2;
    eigenvalues zero up to rounding (D eps of the largest) contribute zero."""
    M = P.L.transpose(-1, -2) @ Q.S @ P.L
    mu = torch.linalg.eigvalsh(0.5 * (M + M.transpose(-1, -2)))
    dim = mu.shape[-1]
    tol = dim * torch.finfo(mu.dtype).eps * torch.clamp_min(mu.detach().amax(-1, keepdim=True), 0)
    live = mu > tol
    roots = torch.where(live, torch.sqrt(torch.where(live, mu, torch.ones_like(mu))),
                        torch.zeros_like(mu)).sum(-1)
    traces = (torch.diagonal(P.S, dim1=-2, dim2=-1).sum(-1)
              + torch.diagonal(Q.S, dim1=-2, dim2=-1).sum(-1))
    return _sq(d) + torch.clamp_min(traces - 2 * roots, 0.0)


def _wasserstein2_dense(alpha, P, Q, check):
    """|d|^2 + |L_1 - L_2 U|_F^2, U the orthogonal polar factor of L_2' L_1 (from an SVD, held
    constant: the sum is stationary in U, so its gradient at fixed U is the gradient)."""
    d = (P.mean - Q.mean)[..., None]
    if P.full and Q.full and P.mean.shape[-1] > _W2_POLAR_ALWAYS:
        return _w2_trace(d, P, Q), None
    C = Q.L.transpose(-1, -2) @ P.L
    with torch.no_grad():
        A, _, Bh = torch.linalg.svd(C.detach())
        U = A @ Bh
    return _sq(d) + _sq(P.L - Q.L @ U), None


def _schur_pivot(M: torch.Tensor, k: int) -> float:
    """The k-th pivot of the Cholesky factorization of M (its leading k x k block factoring)."""
    M = M.detach()
    if k == 0:
        return float(M[0, 0])
    Lk = torch.linalg.cholesky(M[:k, :k])
    y = torch.linalg.solve_triangular(Lk, M[:k, k:k + 1], upper=False)
    return float(M[k, k] - (y * y).sum())


def _mixed(w, P, Q, check):
    """The mixed covariance M = w S_q + (1 - w) S_p through its Cholesky factor: (|Lm^-1 d|^2,
    ln det M - (1 - w) ln det S_p - w ln det S_q, None), or (None, None, RenyiFailure)."""
    d = (P.mean - Q.mean)[..., None]
    M = w * Q.S + (1 - w) * P.S
    Lm, info = torch.linalg.cholesky_ex(M)
    if check and bool((info != 0).any()):
        i = int(torch.nonzero(info != 0)[0, 0])
        k = int(info[i]) - 1
        return None, None, RenyiFailure(i, k, _schur_pivot(M[i], k))
    y = torch.linalg.solve_triangular(Lm, d, upper=False)
    return _sq(y), _logdet_of(Lm) - (1 - w) * P.logdet - w * Q.logdet, None


def _bhattacharyya_dense(alpha, P, Q, check):
    y2, logs, failure = _mixed(0.5, P, Q, check)
    if failure is not None:
        return None, failure
    return torch.clamp_min(0.125 * y2 + 0.5 * logs, 0.0), None


def _renyi_dense(alpha, P, Q, check):
    y2, logs, failure = _mixed(alpha, P, Q, check)
    if failure is not None:
        return None, failure
    return torch.clamp_min(0.5 * alpha * y2 - logs / (2 * (alpha - 1)), 0.0), None


# -- hellinger: 1 - exp(-bhattacharyya), of either form ------------------------------------------

def _hellinger_diag(*args):
    return -torch.expm1(-_bhattacharyya_diag(*args))


def _hellinger_dense(alpha, P, Q, check):
    value, failure = _bhattacharyya_dense(alpha, P, Q, check)
    return (None, failure) if failure is not None else (-torch.expm1(-value), None)


# name: (diagonal form, dense form, renyi's diagonal failure); symmetric and takes_alpha are the
# library's kind table (_ext.KINDS, include/gausskl/divergence_kinds.hpp).
_FORMS = {
    "kl": (None, None, None),
    "jeffreys": (_jeffreys_diag, _jeffreys_dense, None),
    "bhattacharyya": (_bhattacharyya_diag, _bhattacharyya_dense, None),
    "hellinger": (_hellinger_diag, _hellinger_dense, None),
    "wasserstein2": (_wasserstein2_diag, _wasserstein2_dense, None),
    "renyi": (_renyi_diag, _renyi_dense, _renyi_diag_failure),
}
KINDS = {k["name"]: Kind(k["name"], k["symmetric"], k["takes_alpha"], *_FORMS[k["name"]])
         for k in _ext.KINDS}

SYMMETRIC = tuple(k.name for k in KINDS.values() if k.symmetric)
