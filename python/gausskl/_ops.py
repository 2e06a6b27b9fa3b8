"""The operations: kl, kl_standard_normal, pairwise_kl, knn_kl.

Each picks one of three paths:
* the C++ library (NumPy arrays, CPU tensors): arrays handed over in place, GIL released;
* the same, with torch.autograd gradients, when a tensor requires grad (gausskl._autograd);
* torch operations (gausskl._torch_path), for tensors the library cannot read (CUDA, MPS), or
  for CPU tensors when GAUSSKL_FORCE_TORCH_PATH=1 or torch_path=True.
Results come back in the caller's framework: torch tensors if any input is one (on its device),
else NumPy arrays (or, for another DLPack framework with an array namespace, that framework's).
Both the library and the torch path count the distributions they factored with the jitter; the
call ends with a JitterWarning per side that needed it. The torch path checks tolerance and
memory_budget by the library's rules, then ignores them (see the operations' docstrings).
"""

from __future__ import annotations

import operator

import numpy as np

from gausskl import _arrays
from gausskl import _ext
from gausskl import _options
from gausskl._distributions import Gaussian
from gausskl._jitter import Jitter


def _as_gaussian(op: str, side: str, x) -> Gaussian:
    if isinstance(x, Gaussian):
        return x
    torch = _arrays.torch_module()
    if torch is not None and isinstance(x, torch.distributions.Distribution):
        from gausskl._from_torch import from_torch

        return from_torch(x)
    raise TypeError(
        f"[{op}] {side} must be a DiagGaussian, FullGaussian, LowRankGaussian or a supported "
        f"torch.distributions object, found {type(x).__name__}"
    )


def _factored(g: Gaussian) -> bool:
    """Whether the batch has matrices that are factored (and may need the jitter)."""
    return g.family == "full" and g.param != "scale_tril"


class _Call:
    """What one call computes with: precision, framework, device, path, jitter."""

    def __init__(self, op: str, gs: list, torch_path, jitter):
        self.op = op
        self.jitter = Jitter(op, jitter)
        self.kind = (_arrays.FLOAT64 if any(g._kind == _arrays.FLOAT64 for g in gs)
                     else _arrays.FLOAT32)
        tensors = [t for g in gs for t in g._tensors]
        self.torch = _arrays.torch_module() if tensors else None
        self.namespace = None
        self.native = False
        self.grad = False
        self.device = None
        if self.torch is None:
            self.namespace = next((g._namespace for g in gs if g._namespace is not None), None)
            return
        devices = {t.device for t in tensors}
        if len(devices) > 1:
            raise ValueError(
                f"[{op}] arrays are on different devices: " + ", ".join(sorted(map(str, devices)))
            )
        self.device = devices.pop()
        if torch_path is None:
            torch_path = _arrays.force_torch_path()
        self.grad = self.torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
        # Gradients with a jitter come from the torch path, forward included: the library says
        # how many matrices it jittered but not which, and a backward deciding again with torch's
        # Cholesky could disagree on the nearly singular ones, those the jitter is for.
        jittered_grad = self.grad and self.jitter.eps > 0 and any(_factored(g) for g in gs)
        self.native = self.device.type != "cpu" or bool(torch_path) or jittered_grad

    def unify(self, g: Gaussian | None):
        """With torch results: every array as a tensor on the call's device (NumPy arrays are
        wrapped in place on the CPU)."""
        if g is None or self.torch is None:
            return g
        if len(g._tensors) == len(g._arrays):
            return g  # one device was checked above
        arrays = {}
        for name, a in g.arrays.items():
            if not _arrays.is_torch(a):
                a = self.torch.as_tensor(a, device=self.device)
            arrays[name] = a
        return g._replace(arrays)

    @property
    def out_dtype(self):
        if self.torch is not None:
            return self.torch.float64 if self.kind == _arrays.FLOAT64 else self.torch.float32
        return np.float64 if self.kind == _arrays.FLOAT64 else np.float32

    def empty(self, shape, dtype=None):
        """An uninitialized result in the call's framework. From _ext.MAPPED_BYTES on, in a
        block of the library's BlockBuffer (mapped for this array and unmapped when it goes; huge
        pages from 4 MiB), not from malloc's heap through torch.empty or np.empty: there, results
        freed between calls stay resident and fragment the heap among the library's buffers
        (bench/peers.py, pairwise_kl N = M = 1024, D = 256, ~100 calls: peak extra memory
        33-44 MiB, 23.3-25.0 MiB this way; src/core/block_buffer.hpp). Such a tensor shares its
        memory with a NumPy array, so it cannot be grown in place (resize_)."""
        dtype = self.out_dtype if dtype is None else dtype
        np_dtype = np.dtype(str(dtype).replace("torch.", "") if self.torch is not None else dtype)
        count = 1
        for s in shape:
            count *= s
        if count * np_dtype.itemsize >= _ext.MAPPED_BYTES:
            a = _ext.empty_bytes(count * np_dtype.itemsize).view(np_dtype).reshape(shape)
            return self.torch.from_numpy(a) if self.torch is not None else a
        if self.torch is not None:
            return self.torch.empty(shape, dtype=dtype)
        return np.empty(shape, dtype=dtype)

    def result(self, *xs):
        """The results in the caller's framework, after the call's JitterWarnings (attributed
        to the caller of the operation, which calls this)."""
        self.jitter.warn(stacklevel=3)
        if self.namespace is not None and hasattr(self.namespace, "from_dlpack"):
            xs = tuple(self.namespace.from_dlpack(x) for x in xs)
        return xs if len(xs) > 1 else xs[0]


def _threads(op: str, threads) -> int:
    threads = operator.index(threads)
    if threads < 0:
        raise ValueError(f"[{op}] options.threads must be >= 0 (0 = all cores), found {threads}")
    return threads


def _rows(p: Gaussian, q: Gaussian, check: bool = True) -> int:
    """The rows of a row-wise result. With check=False an N that does not broadcast gives p.n
    (the library then reports it, after the checks it makes first)."""
    if p.n == q.n or q.n == 1:
        return p.n
    if p.n == 1:
        return q.n
    if not check:
        return p.n
    raise ValueError(f"[kl] p and q have N = {p.n} and N = {q.n}; "
                     "N must match or one side must have N = 1")


def _check_d(op: str, p: Gaussian, q: Gaussian):
    if p.d != q.d:
        raise ValueError(f"[{op}] p and q have D = {p.d} and D = {q.d}; D must match")


def kl(p, q, *, jitter: float = 0.0, memory_budget: int | None = 0, threads: int = 0,
       torch_path: bool | None = None):
    """Row-wise KL divergence in nats: ``out[i] = KL(p_i || q_i)``, shape ``[max(N_p, N_q)]``.

    ``p`` and ``q`` are batches of any family (``DiagGaussian``, ``FullGaussian``,
    ``LowRankGaussian``, or a supported ``torch.distributions`` object); they have equal N, or
    one of them has N = 1 and is paired with every row of the other.

    ``jitter`` (>= 0, default 0): a covariance or precision matrix that is not positive definite
    is an error; with ``jitter > 0`` it is factored with ``jitter`` added to its diagonal instead
    (``C + jitter * I``; only such matrices), results and gradients are those of the jittered
    matrices, and a ``gausskl.JitterWarning`` says how many distributions of each side needed it.

    ``memory_budget`` (bytes, an int; default 0 or None: no limit): the most the library may
    allocate for the call, here its row-wise work (a double per row, per-thread scratch); your
    inputs and the returned array are not counted, and results do not depend on it. A budget
    too small raises RuntimeError with the library's message (``[kl] the memory budget (...)
    is too small: the row-wise work takes ...``) before anything is allocated; a negative one
    is a ValueError, anything but an int a TypeError.

    On the torch path (CUDA and MPS tensors, ``torch_path=True``, GAUSSKL_FORCE_TORCH_PATH=1)
    ``memory_budget`` is checked by the library's rules, then ignored: torch allocates as it
    does. With gradients on the library path it bounds the forward only.

    >>> import numpy as np, gausskl as gk
    >>> p = gk.DiagGaussian(np.zeros(2), std=np.ones(2))
    >>> q = gk.DiagGaussian(np.ones(2), std=np.full(2, 2.0))
    >>> gk.kl(p, q).round(6)  # 2 * (1/4 + 1/4 - 1 + 2 log 2) / 2
    array([0.886294])
    """
    op = "kl"
    p, q = _as_gaussian(op, "p", p), _as_gaussian(op, "q", q)
    threads = _threads(op, threads)
    budget = _options.memory_budget(op, memory_budget)
    call = _Call(op, [p, q], torch_path, jitter)
    p, q = call.unify(p), call.unify(q)
    if call.native:
        from gausskl import _torch_path

        _options.check_torch_path(op, call.jitter, budget=budget)
        _check_d(op, p, q)
        _rows(p, q)
        return call.result(_torch_path.rowwise(op, p, q, call.out_dtype, call.jitter))
    out = call.empty((_rows(p, q, check=False),))

    def forward():
        call.jitter.library(_ext.kl, p._batch(call.kind), q._batch(call.kind), out, threads,
                            memory_budget=budget)
        return out

    if call.grad:
        from gausskl import _autograd

        return call.result(_autograd.rowwise(forward, [p, q]))
    return call.result(forward())


def kl_standard_normal(p, *, jitter: float = 0.0, memory_budget: int | None = 0,
                       threads: int = 0, torch_path: bool | None = None):
    """``out[i] = KL(p_i || N(0, I))`` in nats, shape ``[N]``: the prior term of a VAE loss.

    ``jitter`` (>= 0, default 0): a covariance or precision matrix that is not positive definite
    is an error; with ``jitter > 0`` it is factored with ``jitter`` added to its diagonal instead
    (``C + jitter * I``; only such matrices), results and gradients are those of the jittered
    matrices, and a ``gausskl.JitterWarning`` says how many distributions of each side needed it.

    ``memory_budget`` (bytes, an int; default 0 or None: no limit): the most the library may
    allocate for the call, here its row-wise work (a double per row, per-thread scratch); your
    inputs and the returned array are not counted, and results do not depend on it. A budget
    too small raises RuntimeError with the library's message (``[kl_standard_normal] the
    memory budget (...) is too small: the row-wise work takes ...``) before anything is
    allocated; a negative one is a ValueError, anything but an int a TypeError.

    On the torch path ``memory_budget`` is checked by the library's rules, then ignored, as in
    ``kl``.

    A VAE loss with an encoder giving ``mu, logvar: [B, D]`` (torch; gradients flow)::

        recon = torch.nn.functional.mse_loss(decoder(z), x, reduction="sum")
        loss = recon + gk.kl_standard_normal(gk.DiagGaussian(mu, logvar=logvar)).sum()
    """
    op = "kl_standard_normal"
    p = _as_gaussian(op, "p", p)
    threads = _threads(op, threads)
    budget = _options.memory_budget(op, memory_budget)
    call = _Call(op, [p], torch_path, jitter)
    p = call.unify(p)
    if call.native:
        from gausskl import _torch_path

        _options.check_torch_path(op, call.jitter, budget=budget)
        return call.result(_torch_path.rowwise(op, p, None, call.out_dtype, call.jitter))
    out = call.empty((p.n,))

    def forward():
        call.jitter.library(_ext.kl_standard_normal, p._batch(call.kind), out, threads,
                            memory_budget=budget)
        return out

    if call.grad:
        from gausskl import _autograd

        return call.result(_autograd.rowwise(forward, [p]))
    return call.result(forward())


def pairwise_kl(p, q=None, *, jitter: float = 0.0, tolerance: float | None = 0.0,
                memory_budget: int | None = 0, threads: int = 0, torch_path: bool | None = None):
    """All pairs: ``out[i, j] = KL(p_i || q_j)`` in nats, shape ``[N, M]``; without ``q``,
    ``q = p`` and the diagonal is exactly 0. Memory is the ``[N, M]`` result plus O((N + M) D)
    (O(D^2) per distribution for non-diagonal families), never ``[N, M, D]``.

    ``jitter`` (>= 0, default 0): a covariance or precision matrix that is not positive definite
    is an error; with ``jitter > 0`` it is factored with ``jitter`` added to its diagonal instead
    (``C + jitter * I``; only such matrices), results and gradients are those of the jittered
    matrices, and a ``gausskl.JitterWarning`` says how many distributions of each side needed it
    (``q = p`` counts as p).

    ``tolerance`` (default 0 or None: the library's default): the error each result may have,
    as ``|KL - exact| / (|exact| + 1)`` before rounding to the result's dtype. It is a
    guarantee, not an estimate: every entry gets a deterministic error bound, and those whose
    bound exceeds it are recomputed in the exact per-dimension form. The default is 1e-7 when
    every input is float32 and 1e-13 otherwise; the most is 1e-3 (ValueError if larger,
    negative or NaN; TypeError if not a real number). From about 1e-5 up, float32 diagonal
    inputs may use a faster float kernel.

    ``memory_budget`` (bytes, an int; default 0 or None: no limit): the most the library may
    allocate for the call: the prepared (factored) copies of the inputs and work buffers, and
    blocks of rows of results in what they leave (without a budget, blocks of 128 MiB). Your
    inputs and the returned array are not counted, and results do not depend on it. A budget
    too small for the rest and one row raises RuntimeError with the library's message
    (``[pairwise_kl] the memory budget (...) is too small: ...``) before anything is allocated;
    a negative one is a ValueError, anything but an int a TypeError.

    On the torch path (CUDA and MPS tensors, ``torch_path=True``, GAUSSKL_FORCE_TORCH_PATH=1,
    and gradients of non-diagonal pairs) ``tolerance`` and ``memory_budget`` are checked by the
    library's rules, then ignored: that path computes in float64 (float32 on MPS) with the
    centred GEMM form, which has no per-entry error bound, and allocates as torch does.

    The forum's question (``mu, std: [B, H]``, the ``[B, B]`` matrix), as one line::

        kl = gk.pairwise_kl(gk.DiagGaussian(mu, std=std))
    """
    op = "pairwise_kl"
    p = _as_gaussian(op, "p", p)
    q = None if q is None else _as_gaussian(op, "q", q)
    threads = _threads(op, threads)
    tolerance = _options.tolerance(op, tolerance)
    budget = _options.memory_budget(op, memory_budget)
    call = _Call(op, [p] if q is None else [p, q], torch_path, jitter)
    p, q = call.unify(p), call.unify(q)
    m = p.n if q is None else q.n
    diagonal = p.family == "diag" and (q is None or q.family == "diag")
    if call.native or (call.grad and not diagonal):
        # Tensors the library cannot read; or gradients of non-diagonal pairs, which autograd
        # takes through the same GEMM form (still no [N, M, D]).
        from gausskl import _torch_path

        _options.check_torch_path(op, call.jitter, tolerance, budget)
        if q is not None:
            _check_d(op, p, q)
        return call.result(_torch_path.pairwise(op, p, q, call.out_dtype, call.jitter))
    out = call.empty((p.n, m))

    def forward():
        qb = None if q is None else q._batch(call.kind)
        call.jitter.library(_ext.pairwise_kl, p._batch(call.kind), qb, out, threads,
                            tolerance=tolerance, memory_budget=budget)
        return out

    if call.grad:
        from gausskl import _autograd

        return call.result(_autograd.pairwise_diag(forward, p, q))
    return call.result(forward())


def knn_kl(p, q=None, *, k: int, exclude_self: bool = False, jitter: float = 0.0,
           tolerance: float | None = 0.0, memory_budget: int | None = 0, threads: int = 0,
           torch_path: bool | None = None):
    """Nearest neighbours by KL: for each ``p_i``, the ``k`` smallest ``KL(p_i || q_j)``,
    ascending, ties to the lower ``j``. Returns ``(indices, kl)``, each ``[N, k]`` (indices
    int64). Without ``q``, ``q = p``; ``exclude_self=True`` then leaves out ``j == i``. The
    ``[N, M]`` matrix is never kept.

    ``jitter`` (>= 0, default 0): a covariance or precision matrix that is not positive definite
    is an error; with ``jitter > 0`` it is factored with ``jitter`` added to its diagonal instead
    (``C + jitter * I``; only such matrices), results and gradients are those of the jittered
    matrices, and a ``gausskl.JitterWarning`` says how many distributions of each side needed it
    (``q = p`` counts as p).

    ``tolerance`` (default 0 or None: the library's default): the error each result may have,
    as ``|KL - exact| / (|exact| + 1)`` before rounding to the result's dtype. It is a
    guarantee, not an estimate: every entry gets a deterministic error bound, and those whose
    bound exceeds it are recomputed in the exact per-dimension form. The default is 1e-7 when
    every input is float32 and 1e-13 otherwise; the most is 1e-3 (ValueError if larger,
    negative or NaN; TypeError if not a real number). From about 1e-5 up, float32 diagonal
    inputs may use a faster float kernel. Here it is the error of the screening pass: every
    candidate that could rank in the first ``k`` within it is re-scored with the exact pair
    formula, so the values and order returned do not depend on it, only the speed does.

    ``memory_budget`` (bytes, an int; default 0 or None: no limit): the most the library may
    allocate for the call: the prepared (factored) copies of the inputs, work buffers, and
    blocks of rows of the ``[N, M]`` matrix in what they leave (without a budget, blocks of
    128 MiB). Your inputs and the returned arrays are not counted, and results do not depend on
    it. A budget too small for the rest and one row raises RuntimeError with the library's
    message (``[knn_kl] the memory budget (...) is too small: ...``) before anything is
    allocated; a negative one is a ValueError, anything but an int a TypeError.

    On the torch path (CUDA and MPS tensors, ``torch_path=True``, GAUSSKL_FORCE_TORCH_PATH=1)
    ``tolerance`` and ``memory_budget`` are checked by the library's rules, then ignored: that
    path computes in float64 (float32 on MPS) with the centred GEMM form, which has no
    per-entry error bound, in blocks of rows of at most 64 MiB whatever the budget.

    Retrieval, "the 10 nearest Gaussians by KL" of each query among a database::

        idx, dist = gk.knn_kl(gk.DiagGaussian(q_mu, std=q_std), gk.DiagGaussian(db_mu, std=db_std), k=10)
    """
    op = "knn_kl"
    p = _as_gaussian(op, "p", p)
    q = None if q is None else _as_gaussian(op, "q", q)
    threads = _threads(op, threads)
    tolerance = _options.tolerance(op, tolerance)
    budget = _options.memory_budget(op, memory_budget)
    k = operator.index(k)
    call = _Call(op, [p] if q is None else [p, q], torch_path, jitter)
    p, q = call.unify(p), call.unify(q)
    # Checked before the [N, k] outputs are allocated, with the library's words.
    if q is not None:
        _check_d(op, p, q)
        if exclude_self:
            raise ValueError(f"[{op}] exclude_self needs q = p (call without q)")
    m = p.n if q is None else q.n
    max_k = m - 1 if exclude_self else m
    if k < 1 or k > max_k:
        raise ValueError(f"[{op}] k = {k} must be between 1 and "
                         f"{'M - 1 = ' if exclude_self else 'M = '}{max_k}")
    if call.native:
        from gausskl import _torch_path

        _options.check_torch_path(op, call.jitter, tolerance, budget)
        return call.result(*_torch_path.knn(op, p, q, k, exclude_self, call.out_dtype,
                                            call.jitter))
    index_dtype = call.torch.int64 if call.torch is not None else np.int64
    indices = call.empty((p.n, k), dtype=index_dtype)
    values = call.empty((p.n, k))
    qb = None if q is None else q._batch(call.kind)
    call.jitter.library(_ext.knn_kl, p._batch(call.kind), qb, k, indices, values, exclude_self,
                        threads, tolerance=tolerance, memory_budget=budget)
    if call.grad:
        # Values differentiable through the row-wise KL of the chosen pairs.
        from gausskl import _autograd

        torch = call.torch
        q_ = p if q is None else q
        rows = torch.arange(p.n).repeat_interleave(k)
        cols = indices.reshape(-1)
        pp = p._replace({n: a[rows] for n, a in p.arrays.items()})
        qq = q_._replace({n: a[cols] for n, a in q_.arrays.items()})
        flat = values.reshape(-1)
        values = _autograd.rowwise(lambda: flat.clone(), [pp, qq]).reshape(p.n, k)
    return call.result(indices, values)
