"""gk.divergence, gk.pairwise, gk.knn: the kind a parameter, kl by gausskl._ops
(docs/divergences.md).

The library computes every value on the CPU (exact in double, all nine family pairs). Tensors
with ``requires_grad`` get the library's values forward and the gradient of the same closed
forms written in torch operations (gausskl._divergence_torch) backward: row-wise as
``exact + (formula - formula.detach())``; all pairs and knn by a Function that recomputes the
formula chunk by chunk in the backward. Tensors the library does not read (the torch path) get
values and gradients of the torch formulas.
"""

from __future__ import annotations

import math

from gausskl import _arrays, _options, _progress
from gausskl._dispatch import KINDS, Request
from gausskl._errors import for_caller
from gausskl._jitter import with_hint
from gausskl._ops import (_compiled, _knn_k, kl, knn_kl, pairs_inputs, pairwise_kl,
                          rowwise_inputs)


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
        raise ValueError(f"[{op}] kind='renyi' needs alpha, the order of the renyi divergence: "
                         "finite and in (0, 1) or (1, inf)")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise TypeError(f"[{op}] alpha {rule}, found {type(alpha).__name__}")
    a = float(alpha)
    if not (math.isfinite(a) and a > 0 and a != 1):
        raise ValueError(f"[{op}] alpha {rule}, found {alpha!r}")
    return a


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
        As for ``gk.kl``. The torch path (tensors on devices the library does not run on, CPU
        tensors with ``torch_path=True``) computes the closed forms of docs/divergences.md in
        torch operations, in float64 (float32 on MPS), with the library's errors.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        Of the broadcast batch shape, in the inputs' framework and precision. Values are exact
        (computed in double); ``p = q`` gives exactly 0, and a symmetric kind the same value with
        p and q swapped. Gradients (torch tensors with ``requires_grad``), every kind and family
        pair: the library's values forward, the gradient of the same closed forms in torch
        operations backward (double backward too); on the torch path, and with a ``jitter``
        where a covariance or precision matrix is factored (as ``gk.kl``), values and gradients
        of the torch forms. ``torch.func.grad`` takes the torch path; under ``torch.func.vmap``
        and ``torch.compile`` the call is a torch custom operator (gausskl._compile).

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
    p0, q0 = p, q
    try:
        a = _check_kind(kind, alpha)
        if kind == "kl":
            return kl(p, q, jitter=jitter, memory_budget=memory_budget, threads=threads,
                      torch_path=torch_path)
        p, q = rowwise_inputs("divergence", p, q)
        jitter, memory_budget, threads = _options.common("divergence", jitter, memory_budget,
                                                         threads)
        if (p._torch or q._torch) and _arrays.traced("divergence"):
            return _compiled("divergence")(kind, a, p, q, jitter, memory_budget, threads)
        request = Request("divergence", p, q, threads=threads, jitter=jitter,
                          budget=memory_budget, torch_path=torch_path, kind=kind, alpha=a)
        try:
            got = request.library()
        except ValueError as e:
            raise with_hint(e) from None
        return request.run(got)
    except (ValueError, TypeError, RuntimeError) as e:
        raise for_caller(e, "divergence", {"p": p0, "q": q0}) from None


def pairwise(p, q=None, kind: str = "kl", alpha: float | None = None, *, jitter: float = 0.0,
             tolerance: float | None = 0.0, memory_budget: int | None = 0, threads: int = 0,
             torch_path: bool | None = None, progress=None):
    """All pairs of any divergence: ``out[i, j] = D(p_i || q_j)`` in nats; without ``q``,
    ``q = p`` and the diagonal is exactly 0.

    ``kind="kl"`` is exactly ``gk.pairwise_kl`` (gradients, torch path). The other kinds (those
    of ``gk.divergence``, ``alpha`` for renyi) are the library's: ``jeffreys``,
    ``wasserstein2``, ``bhattacharyya`` and ``hellinger`` of two diagonal batches by tiled
    kernels within ``tolerance`` as
    ``gk.pairwise_kl``, everything else exactly per pair in double (where ``tolerance`` changes
    nothing): NumPy and torch CPU arrays, any families,
    batch shapes as ``gk.pairwise_kl`` (the result is ``p.batch_shape + q.batch_shape``). With
    ``q = p`` a symmetric kind gives a bit-symmetric matrix.

    Gradients (torch tensors with ``requires_grad``): the library's values forward; the backward
    recomputes the closed forms in torch operations chunk by chunk of pairs (each distribution
    prepared once; chunks within ``memory_budget``, 16 MiB without one), never holding the
    graph of all ``N * M`` pairs. The torch path (tensors on other devices, ``torch_path=True``)
    computes every pair by those forms in float64 (float32 on MPS), in blocks within
    ``memory_budget``, differentiable; ``tolerance`` is checked but changes nothing there.
    ``progress`` (True: a line on stderr about every 10 s; a callable ``f(done, total)``) as for
    ``gk.pairwise_kl``.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> p = gk.DiagGaussian(np.array([[0.0], [1.0]]), std=np.array([[1.0], [2.0]]))
    >>> gk.pairwise(p, kind="wasserstein2")  # (0 - 1)^2 + (1 - 2)^2 off the diagonal
    array([[0., 2.],
           [2., 0.]])
    """
    p0, q0 = p, q
    try:
        a = _check_kind(kind, alpha, "pairwise")
        if kind == "kl":
            return pairwise_kl(p, q, jitter=jitter, tolerance=tolerance,
                               memory_budget=memory_budget, threads=threads,
                               torch_path=torch_path,
                               progress=_progress.callback("pairwise", progress))
        p, q = pairs_inputs("pairwise", p, q)
        jitter, memory_budget, threads = _options.common("pairwise", jitter, memory_budget, threads)
        if (p._torch or (q is not None and q._torch)) and _arrays.traced("pairwise"):
            return _compiled("pairwise")(kind, a, p, q, jitter,
                                        _options.tolerance("pairwise", tolerance), memory_budget,
                                        threads)
        request = Request("pairwise", p, q, self_pairs=q is None, kind=kind, alpha=a,
                          threads=threads, jitter=jitter, budget=memory_budget,
                          torch_path=torch_path, progress=_progress.callback("pairwise", progress),
                          tolerance=_options.tolerance("pairwise", tolerance))
        return request.run()
    except (ValueError, TypeError, RuntimeError) as e:
        raise for_caller(e, "pairwise", {"p": p0, "q": q0}) from None


def knn(p, q=None, k: int | None = None, *, kind: str = "kl", alpha: float | None = None,
        exclude_self: bool = False, jitter: float = 0.0, tolerance: float | None = 0.0,
        memory_budget: int | None = 0, threads: int = 0, torch_path: bool | None = None,
        progress=None):
    """Nearest neighbours by any divergence: for each ``p_i``, the ``k`` smallest
    ``D(p_i || q_j)``, ascending, ties to the lower ``j``; returns ``(indices, values)``.
    ``k`` is the third argument or a keyword (``knn(p, q, 5)``, ``knn(p, k=5, kind=...)``).

    ``kind="kl"`` is exactly ``gk.knn_kl``. The other kinds are the library's values, as
    ``gk.pairwise`` computes them with the same ``tolerance`` (the same bits), selected row by
    row without keeping the ``[N, M]`` matrix; ``exclude_self`` (without q) leaves out
    ``j == i``; ``progress`` as for ``gk.pairwise_kl``. Gradients flow through the chosen pairs
    only: those of the closed forms of ``(p_i, q_indices[i, r])``, recomputed chunk by chunk as
    for ``gk.pairwise``. The torch path
    computes blocks of rows by the closed forms, selects by value (ties to the lower ``j``), and
    with gradients computes the chosen pairs again with their graph.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> p = gk.DiagGaussian(np.array([[0.0], [1.0], [5.0]]), std=np.ones((3, 1)))
    >>> gk.knn(p, k=1, kind="hellinger", exclude_self=True)[0]
    array([[1],
           [0],
           [1]], dtype=int64)
    """
    p0, q0 = p, q
    try:
        a = _check_kind(kind, alpha, "knn")
        k = _knn_k("knn", q, k)
        if kind == "kl":
            return knn_kl(p, q, k=k, exclude_self=exclude_self, jitter=jitter, tolerance=tolerance,
                          memory_budget=memory_budget, threads=threads, torch_path=torch_path,
                          progress=_progress.callback("knn", progress))
        p, q = pairs_inputs("knn", p, q)
        jitter, memory_budget, threads = _options.common("knn", jitter, memory_budget, threads)
        if k.__class__ is bool or not isinstance(k, int):
            raise TypeError(f"[knn] k must be an int, found {type(k).__name__}")
        if (p._torch or (q is not None and q._torch)) and _arrays.traced("knn"):
            return _compiled("knn")(kind, a, p, q, k, bool(exclude_self), jitter,
                                   _options.tolerance("knn", tolerance), memory_budget, threads)
        request = Request("knn", p, q, self_pairs=q is None, kind=kind, alpha=a,
                          threads=threads, jitter=jitter, budget=memory_budget,
                          torch_path=torch_path, k=k, progress=_progress.callback("knn", progress),
                          exclude_self=bool(exclude_self),
                          tolerance=_options.tolerance("knn", tolerance))
        return request.run()
    except (ValueError, TypeError, RuntimeError) as e:
        raise for_caller(e, "knn", {"p": p0, "q": q0}) from None
