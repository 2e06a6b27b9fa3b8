"""gk.divergence: row-wise divergences other than KL (docs/divergences.md).

The library computes every value (exact in double, all nine family pairs). Gradients, for now,
for two diagonal sides only: torch operations of the same closed forms give the backward, the
library's exact value the forward. Other families with ``requires_grad`` are a clear
NotImplementedError, and so are arrays on devices the library does not run on (issue 15 adds
both).
"""

from __future__ import annotations

import math

from gausskl import _arrays, _ext, _options
from gausskl._distributions import DiagGaussian
from gausskl._jitter import with_hint
from gausskl._ops import (_GAUSSIANS, NEEDS_GRAD, TORCH_PATH, _as_gaussian, _Request, kl, knn_kl,
                          pairwise_kl)

KINDS = tuple(_ext.DIVERGENCES)


def _check_kind(kind, alpha, op="divergence") -> float:
    """Renyi's order as the library takes it (0 for the other kinds), or the error."""
    if kind.__class__ is not str or kind not in KINDS:
        raise ValueError(f"[{op}] kind must be one of {', '.join(KINDS)}, found {kind!r}")
    if kind != "renyi":
        if alpha is not None:
            raise ValueError(f"[{op}] alpha is the order of the renyi divergence; "
                             f"kind={kind!r} takes none, found alpha={alpha!r}")
        return 0.0
    rule = "(the order of the renyi divergence) must be finite and in (0, 1) or (1, inf)"
    if alpha is None:
        raise ValueError(f"[{op}] kind='renyi' needs alpha {rule}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise TypeError(f"[{op}] alpha {rule}, found {type(alpha).__name__}")
    a = float(alpha)
    if not (math.isfinite(a) and a > 0 and a != 1):
        raise ValueError(f"[{op}] alpha {rule}, found {alpha!r}")
    return a


def _sigma_terms(torch, g):
    """(mean, sigma, log sigma) of a DiagGaussian of tensors, each from its parameter."""
    x = g.scale
    if g.param == "std":
        return g.mean, x, torch.log(x)
    if g.param == "var":
        return g.mean, torch.sqrt(x), 0.5 * torch.log(x)
    if g.param == "logvar":
        return g.mean, torch.exp(0.5 * x), 0.5 * x
    return g.mean, torch.rsqrt(x), -0.5 * torch.log(x)


def _m(torch, u):
    """u - log1p(u); the library's series near 0 is for values, this is for gradients."""
    return u - torch.log1p(u)


def _diag_torch(torch, kind, alpha, p, q):
    """D(p || q) of two diagonal batches in torch operations: the closed forms per dimension."""
    m1, s1, l1 = _sigma_terms(torch, p)
    m2, s2, l2 = _sigma_terms(torch, q)
    delta, t = m1 - m2, l1 - l2
    if kind == "jeffreys":
        terms = 0.5 * (delta**2 * (torch.exp(-2 * l1) + torch.exp(-2 * l2))
                       + 4 * torch.sinh(t) ** 2)
    elif kind in ("bhattacharyya", "hellinger"):
        log_cosh = torch.abs(t) + torch.log1p(torch.exp(-2 * torch.abs(t))) - math.log(2)
        terms = 0.25 * delta**2 / (s1**2 + s2**2) + 0.5 * log_cosh
    elif kind == "wasserstein2":
        terms = delta**2 + (s1 - s2) ** 2
    else:
        beta = 1 - alpha
        mu = torch.expm1(2 * t)
        mixed = 1 + beta * mu
        terms = (0.5 * alpha * delta**2 * torch.exp(-2 * l2) / mixed
                 + 0.5 * (_m(torch, mu) - _m(torch, beta * mu) / beta))
    value = terms.sum(-1)
    return -torch.expm1(-value) if kind == "hellinger" else value


class _DivergenceRequest(_Request):
    def __init__(self, kind, alpha, p, q, **kwargs):
        super().__init__("divergence", p, q, **kwargs)
        self.kind, self.alpha = kind, alpha

    def _library(self, for_grad):
        return _ext.divergence(self.p._spec, self.q._spec, KINDS.index(self.kind), self.alpha,
                               self.threads, self.jitter.eps, self.budget, self.torch_path,
                               for_grad)

    def run(self, got=None):
        if got is None:
            got = self.library()
        converted = False
        while got.__class__ is int:
            if got in (NEEDS_GRAD, TORCH_PATH):
                return self.finish(self.with_grad(got == NEEDS_GRAD))
            if converted:
                raise RuntimeError("[divergence] internal error: inputs not readable after "
                                   "conversion")
            self.convert()
            converted = True
            got = self.library()
        return self.finish(self.values(got))

    def with_grad(self, on_host):
        torch = self.unify()
        both_diag = isinstance(self.p, DiagGaussian) and isinstance(self.q, DiagGaussian)
        if not on_host or not both_diag or self.jitter.eps:
            what = ("arrays on a device the library does not run on" if not on_host
                    else "gradients with a jitter" if both_diag
                    else f"gradients for {self.p.family} and {self.q.family} sides")
            raise NotImplementedError(
                f"[divergence] kind={self.kind!r}: {what} are not implemented yet (so far: "
                "gradients for two DiagGaussians on the CPU); detach the inputs, or use gk.kl")
        got = self.library(for_grad=True)  # validates, and the exact values
        exact = torch.as_tensor(got).to(self.out_dtype())
        formula = _diag_torch(torch, self.kind, self.alpha, self.p, self.q).to(exact.dtype)
        # The library's values forward, the formula's gradient backward.
        return exact + (formula - formula.detach())

    def finish(self, result):
        if _arrays.is_torch(result):
            self.jitter.warn(stacklevel=4)
            return result
        return super().finish(result)


def divergence(p, q, kind: str = "kl", alpha: float | None = None, *, jitter: float = 0.0,
               memory_budget: int | None = 0, threads: int = 0, torch_path: bool | None = None):
    """Row-wise divergence in nats: ``out[...] = D(p[...] || q[...])`` of the given kind.

    Parameters
    ----------
    p, q : DiagGaussian, FullGaussian, LowRankGaussian, or a torch.distributions object
        Any families, batch shapes broadcasting as for ``gk.kl``.
    kind : str, default "kl"
        ``kl``; ``jeffreys`` (KL(p || q) + KL(q || p)); ``bhattacharyya``; ``hellinger`` (the
        squared Hellinger distance 1 - exp(-bhattacharyya), in [0, 1]); ``wasserstein2`` (the
        squared 2-Wasserstein distance); ``renyi`` (order ``alpha``). Formulas and sources:
        docs/divergences.md.
    alpha : float, renyi only (and then required)
        The order: finite, in (0, 1) or (1, inf). For alpha > 1 the mixed covariance
        ``alpha Sigma_q + (1 - alpha) Sigma_p`` must be positive definite (else the divergence is
        infinite: a ValueError naming the row).
    jitter, memory_budget, threads, torch_path
        As for ``gk.kl``.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        Of the broadcast batch shape, in the inputs' framework and precision. Values are exact
        (computed in double); ``p = q`` gives exactly 0, and a symmetric kind the same value with
        p and q swapped. Gradients (torch tensors with ``requires_grad``): ``kind="kl"`` as
        ``gk.kl``; the other kinds for two DiagGaussians so far.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> p = gk.DiagGaussian(np.zeros(1), std=np.ones(1))
    >>> q = gk.DiagGaussian(np.ones(1), std=np.full(1, 2.0))
    >>> float(gk.divergence(p, q, "wasserstein2"))  # (0 - 1)^2 + (1 - 2)^2
    2.0
    >>> round(float(gk.divergence(p, q, "renyi", alpha=0.5)), 6)  # 0.1 + log(1.25)
    0.323144
    """
    a = _check_kind(kind, alpha)
    if kind == "kl":
        return kl(p, q, jitter=jitter, memory_budget=memory_budget, threads=threads,
                  torch_path=torch_path)
    if p.__class__ not in _GAUSSIANS:
        p = _as_gaussian("divergence", "p", p)
    if q.__class__ not in _GAUSSIANS:
        q = _as_gaussian("divergence", "q", q)
    jitter, memory_budget, threads = _options.common("divergence", jitter, memory_budget, threads)
    request = _DivergenceRequest(kind, a, p, q, threads=threads, jitter=jitter,
                                 budget=memory_budget, torch_path=torch_path)
    try:
        got = request.library()
    except ValueError as e:
        raise with_hint(e) from None
    return request.run(got)


class _PairsRequest(_Request):
    """pairwise and knn of a kind other than kl: the library's exact values; no gradients and no
    torch path yet."""

    def __init__(self, op, kind, alpha, p, q, **kwargs):
        super().__init__(op, p, q, self_pairs=q is None, **kwargs)
        self.kind, self.alpha = kind, alpha

    def _library(self, for_grad):
        q = None if self.q is None else self.q._spec
        if self.op == "pairwise":
            return _ext.pairwise(self.p._spec, q, KINDS.index(self.kind), self.alpha,
                                 self.threads, self.jitter.eps, self.tolerance, self.budget,
                                 self.torch_path, for_grad)
        return _ext.knn(self.p._spec, q, self.k, self.exclude_self, KINDS.index(self.kind),
                        self.alpha, self.threads, self.jitter.eps, self.tolerance, self.budget,
                        self.torch_path, for_grad)

    def run(self, got=None):
        if got is None:
            got = self.library()
        converted = False
        while got.__class__ is int:
            if got in (NEEDS_GRAD, TORCH_PATH):
                what = ("gradients" if got == NEEDS_GRAD
                        else "arrays on a device the library does not run on")
                raise NotImplementedError(
                    f"[{self.op}] kind={self.kind!r}: {what} are not implemented yet for all "
                    f"pairs (so far: the library's values on the CPU); detach the inputs, or "
                    f"use gk.{self.op}_kl")
            if converted:
                raise RuntimeError(f"[{self.op}] internal error: inputs not readable after "
                                   "conversion")
            self.convert()
            converted = True
            got = self.library()
        return self.finish(self.values(got))


def _pairs_inputs(op, p, q):
    if p.__class__ not in _GAUSSIANS:
        p = _as_gaussian(op, "p", p)
    if q is not None and q.__class__ not in _GAUSSIANS:
        q = _as_gaussian(op, "q", q)
    return p, q


def pairwise(p, q=None, kind: str = "kl", alpha: float | None = None, *, jitter: float = 0.0,
             tolerance: float | None = 0.0, memory_budget: int | None = 0, threads: int = 0,
             torch_path: bool | None = None):
    """All pairs of any divergence: ``out[i, j] = D(p_i || q_j)`` in nats; without ``q``,
    ``q = p`` and the diagonal is exactly 0.

    ``kind="kl"`` is exactly ``gk.pairwise_kl`` (gradients, torch path). The other kinds (those
    of ``gk.divergence``, ``alpha`` for renyi) are the library's: ``jeffreys`` and
    ``wasserstein2`` of two diagonal batches by KL's tiled kernel within ``tolerance`` as
    ``gk.pairwise_kl``, everything else exactly per pair in double (where ``tolerance`` changes
    nothing): NumPy and torch CPU arrays, any families,
    batch shapes as ``gk.pairwise_kl`` (the result is ``p.batch_shape + q.batch_shape``). With
    ``q = p`` a symmetric kind gives a bit-symmetric matrix. Gradients and arrays on other devices
    are not implemented yet for those kinds (NotImplementedError).

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> p = gk.DiagGaussian(np.array([[0.0], [1.0]]), std=np.array([[1.0], [2.0]]))
    >>> gk.pairwise(p, kind="wasserstein2")  # (0 - 1)^2 + (1 - 2)^2 off the diagonal
    array([[0., 2.],
           [2., 0.]])
    """
    a = _check_kind(kind, alpha, "pairwise")
    if kind == "kl":
        return pairwise_kl(p, q, jitter=jitter, tolerance=tolerance, memory_budget=memory_budget,
                           threads=threads, torch_path=torch_path)
    p, q = _pairs_inputs("pairwise", p, q)
    jitter, memory_budget, threads = _options.common("pairwise", jitter, memory_budget, threads)
    request = _PairsRequest("pairwise", kind, a, p, q, threads=threads, jitter=jitter,
                            budget=memory_budget, torch_path=torch_path,
                            tolerance=_options.tolerance("pairwise", tolerance))
    return request.run()


def knn(p, q=None, *, k: int, kind: str = "kl", alpha: float | None = None,
        exclude_self: bool = False, jitter: float = 0.0, tolerance: float | None = 0.0,
        memory_budget: int | None = 0, threads: int = 0, torch_path: bool | None = None):
    """Nearest neighbours by any divergence: for each ``p_i``, the ``k`` smallest
    ``D(p_i || q_j)``, ascending, ties to the lower ``j``; returns ``(indices, values)``.

    ``kind="kl"`` is exactly ``gk.knn_kl``. The other kinds are the library's values, as
    ``gk.pairwise`` computes them with the same ``tolerance`` (the same bits), selected row by row without keeping the
    ``[N, M]`` matrix; ``exclude_self`` (without q) leaves out ``j == i``. No gradients yet for
    those kinds (NotImplementedError).

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> p = gk.DiagGaussian(np.array([[0.0], [1.0], [5.0]]), std=np.ones((3, 1)))
    >>> gk.knn(p, k=1, kind="hellinger", exclude_self=True)[0]
    array([[1],
           [0],
           [1]], dtype=int64)
    """
    a = _check_kind(kind, alpha, "knn")
    if kind == "kl":
        return knn_kl(p, q, k=k, exclude_self=exclude_self, jitter=jitter, tolerance=tolerance,
                      memory_budget=memory_budget, threads=threads, torch_path=torch_path)
    p, q = _pairs_inputs("knn", p, q)
    jitter, memory_budget, threads = _options.common("knn", jitter, memory_budget, threads)
    if k.__class__ is bool or not isinstance(k, int):
        raise TypeError(f"[knn] k must be an int, found {type(k).__name__}")
    request = _PairsRequest("knn", kind, a, p, q, threads=threads, jitter=jitter,
                            budget=memory_budget, torch_path=torch_path, k=k,
                            exclude_self=bool(exclude_self),
                            tolerance=_options.tolerance("knn", tolerance))
    return request.run()
