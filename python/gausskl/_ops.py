"""The operations: kl, kl_standard_normal, pairwise_kl, knn_kl.

Each call hands the batches' specs to the extension, which reads the arrays in place, makes the
result in the caller's framework and runs the C++ library over the batch without the GIL: that
is the whole of a call on NumPy arrays and CPU tensors (a few microseconds over the library's own
time). The extension answers with a status instead when the call is not the library's to make as
given, and the call then takes that path:

* NEEDS_GRAD: a tensor requires grad; the library computes the values and its gradients
  (gausskl._autograd);
* TORCH_PATH: tensors the library cannot read (CUDA, MPS), or CPU tensors with
  GAUSSKL_FORCE_TORCH_PATH=1 or torch_path=True: torch operations (gausskl._torch_path);
* CONVERT: arrays to bring to one dtype (or native byte order), or an all-pairs q batch to make
  contiguous; converted here, then handed over again.

Under torch.compile the operations are torch custom operators (gausskl._compile). Results come
back in the caller's framework: torch tensors if any input is one (on its device), else NumPy
arrays (or, for another DLPack framework with an array namespace, that framework's). The checks
here are Python's own (types of the keywords); every rule on values and shapes of the inputs is
the library's, and the torch path applies the same rules with the same words.
"""

from __future__ import annotations

from gausskl import _arrays
from gausskl import _ext
from gausskl import _options
from gausskl._distributions import FAMILIES, Gaussian
from gausskl._jitter import Jitter, with_hint

_GAUSSIANS = frozenset(FAMILIES)
NEEDS_GRAD, TORCH_PATH, CONVERT = _ext.NEEDS_GRAD, _ext.TORCH_PATH, _ext.CONVERT


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


class _Request:
    """One call's inputs and options, for every path but the fast one."""

    def __init__(self, op: str, p: Gaussian, q: Gaussian | None, *, threads, jitter, budget,
                 torch_path, tolerance=0.0, k=None, exclude_self=False, self_pairs=False):
        self.op, self.p, self.q = op, p, q
        self.threads, self.budget, self.tolerance = threads, budget, tolerance
        self.jitter = Jitter(op, jitter)
        self.torch_path = torch_path
        self.k, self.exclude_self = k, exclude_self
        # pairwise_kl and knn_kl without q: q = p (the library then uses p's batch on both sides)
        self.self_pairs = self_pairs

    @property
    def gaussians(self):
        return [self.p] if self.q is None else [self.p, self.q]

    def library(self, for_grad: bool = False):
        """The extension's call: a result (or (result, counts) with a jitter), or a status."""
        try:
            return self._library(for_grad)
        except ValueError as e:
            raise with_hint(e) from None

    def _library(self, for_grad):
        p, q, op = self.p._spec, None if self.q is None else self.q._spec, self.op
        eps = self.jitter.eps
        if op == "kl":
            return _ext.kl(p, q, self.threads, eps, self.budget, self.torch_path, for_grad)
        if op == "kl_standard_normal":
            return _ext.kl_standard_normal(p, self.threads, eps, self.budget, self.torch_path,
                                           for_grad)
        if op == "pairwise_kl":
            return _ext.pairwise_kl(p, q, self.threads, eps, self.tolerance, self.budget,
                                    self.torch_path, for_grad)
        return _ext.knn_kl(p, q, self.k, self.exclude_self, self.threads, eps, self.tolerance,
                           self.budget, self.torch_path, for_grad)

    def values(self, got):
        """The result of a library call, its jitter counts taken."""
        if self.jitter.eps > 0:
            got, count_p, count_q = got
            self.jitter.add("p", count_p)
            self.jitter.add("q", count_q)
        return got

    def run(self, got=None):
        """The result by whichever path the extension's answer `got` names (None: ask it)."""
        if got is None:
            got = self.library()
        converted = False
        while got.__class__ is int:
            if got == NEEDS_GRAD:
                from gausskl import _autograd

                return self.finish(_autograd.run(self))
            if got == TORCH_PATH or _arrays.transformed():
                return self.finish(self.torch_ops())
            if converted:
                raise RuntimeError(f"[{self.op}] internal error: inputs not readable after "
                                   "conversion")
            self.convert()
            converted = True
            got = self.library()
        return self.finish(self.values(got))

    def convert(self):
        """Every array in the common dtype the library reads in place; an all-pairs q batch (p
        without q) contiguous."""
        gs = self.gaussians
        if any(_arrays.is_dask(a) for g in gs for a in g._spec[1:]):
            raise TypeError(f"[{self.op}] the distributions hold Dask arrays: use "
                            f"gausskl.dask.{self.op} (lazy, chunk by chunk), or compute them first")
        k = _arrays.common_kind(a for g in gs for a in g._spec[1:])
        gs = [g._replace([_arrays.converted(a, k) for a in g._spec[1:]]) for g in gs]
        if self.op in ("pairwise_kl", "knn_kl"):
            i = len(gs) - 1
            gs[i] = _contiguous(gs[i])
        self.p, self.q = gs[0], (gs[1] if len(gs) > 1 else None)

    def unify(self):
        """With a torch tensor among the inputs: every array a tensor on its device (NumPy
        arrays wrapped in place on the CPU), one device for all, or the error."""
        torch = _arrays.torch_module()
        tensors = [a for g in self.gaussians for a in g._spec[1:] if _arrays.is_torch(a)]
        if not tensors:
            return None
        devices = {a.device for a in tensors}
        if len(devices) > 1:
            raise ValueError(f"[{self.op}] arrays are on different devices: "
                             + ", ".join(sorted(map(str, devices))))
        device = devices.pop()

        def as_tensor(g):
            if g is None or all(_arrays.is_torch(a) for a in g._spec[1:]):
                return g
            return g._replace([a if _arrays.is_torch(a) else torch.as_tensor(a, device=device)
                               for a in g._spec[1:]])

        self.p, self.q = as_tensor(self.p), as_tensor(self.q)
        return torch

    def out_dtype(self):
        torch = _arrays.torch_module()
        f64 = _arrays.common_kind(a for g in self.gaussians for a in g._spec[1:]) == "float64"
        return torch.float64 if f64 else torch.float32

    def torch_ops(self):
        """The result in torch operations (gausskl._torch_path): tensors on devices the library
        cannot read, or the torch path asked for."""
        from gausskl import _torch_path

        self.unify()
        return _torch_path.run(self)

    def finish(self, result):
        """The result in the caller's framework, after the call's JitterWarnings (attributed to
        the caller of the operation)."""
        self.jitter.warn(stacklevel=4)
        ns = next((g._namespace for g in self.gaussians if g._namespace is not None), None)
        if ns is not None and hasattr(ns, "from_dlpack"):
            if isinstance(result, tuple):
                return tuple(ns.from_dlpack(x) for x in result)
            return ns.from_dlpack(result)
        return result


def _contiguous(g: Gaussian) -> Gaussian:
    ranks = g._event_ranks()
    return g._replace([_arrays.contiguous(a, (*g._batch, *a.shape[a.ndim - r:]))
                       for a, r in zip(g._spec[1:], ranks)])


_AUTOGRAD = None


def _autograd():
    """gausskl._autograd, imported on first use (it imports torch)."""
    global _AUTOGRAD
    if _AUTOGRAD is None:
        from gausskl import _autograd as module

        _AUTOGRAD = module
    return _AUTOGRAD


def _compiled(name):
    from gausskl import _compile

    return getattr(_compile, name)


def kl(p, q, *, jitter: float = 0.0, memory_budget: int | None = 0, threads: int = 0,
       torch_path: bool | None = None):
    """Row-wise KL divergence in nats: ``out[...] = KL(p[...] || q[...])``.

    ``p`` and ``q`` are batches of any family (``DiagGaussian``, ``FullGaussian``,
    ``LowRankGaussian``, or a supported ``torch.distributions`` object). Their batch shapes
    broadcast as in torch and NumPy (equal N, or N = 1 on one side paired with every row of the
    other; a batch ``[B, T]`` with one of ``[T]``, ...), and the result has the broadcast shape:
    ``[N]`` for batches of N, a 0-d array for two single distributions.

    Returns a NumPy array for NumPy inputs and a torch tensor if any input is one (on its
    device), in float32 when every input is float32 and float64 otherwise; tensors with
    ``requires_grad`` get gradients.

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

    ``threads`` (default 0: all cores): the most worker threads; small calls run on the calling
    thread whatever it says. Results do not depend on it.

    ``torch_path`` (default None: by device): True computes torch tensors with torch operations
    even on the CPU, as CUDA and MPS tensors always are (``GAUSSKL_FORCE_TORCH_PATH=1`` does the
    same for every call). There ``memory_budget`` is checked by the library's rules, then
    ignored: torch allocates as it does. With gradients on the library path it bounds the
    forward only.

    >>> import numpy as np, gausskl as gk
    >>> p = gk.DiagGaussian(np.zeros(2), std=np.ones(2))
    >>> q = gk.DiagGaussian(np.ones(2), std=np.full(2, 2.0))
    >>> gk.kl(p, q).round(6)  # 2 * (1/4 + 1/4 - 1 + 2 log 2) / 2
    np.float64(0.886294)
    """
    if p.__class__ not in _GAUSSIANS:
        p = _as_gaussian("kl", "p", p)
    if q.__class__ not in _GAUSSIANS:
        q = _as_gaussian("kl", "q", q)
    if jitter.__class__ is not float or jitter or memory_budget or threads:
        jitter, memory_budget, threads = _options.common("kl", jitter, memory_budget, threads)
    else:
        memory_budget = 0
    if (p._torch or q._torch) and _arrays.compiling():
        return _compiled("kl")(p, q, jitter, memory_budget, threads)
    try:
        out = _ext.kl(p._spec, q._spec, threads, jitter, memory_budget, torch_path)
    except ValueError as e:
        raise with_hint(e) from None
    if out.__class__ is int or jitter or p._namespace is not None or q._namespace is not None:
        if out == NEEDS_GRAD and not jitter and p._namespace is None and q._namespace is None:
            return _autograd().rowwise("kl", p, q, threads, memory_budget)
        return _Request("kl", p, q, threads=threads, jitter=jitter, budget=memory_budget,
                        torch_path=torch_path).run(out)
    return out


def kl_standard_normal(p, *, jitter: float = 0.0, memory_budget: int | None = 0,
                       threads: int = 0, torch_path: bool | None = None):
    """``out[...] = KL(p[...] || N(0, I))`` in nats, of p's batch shape: the prior term of a VAE.

    ``jitter``, ``memory_budget``, ``threads`` and ``torch_path`` as in ``kl`` (a budget too
    small gives ``[kl_standard_normal] the memory budget (...) is too small: the row-wise work
    takes ...``). Results in p's framework, float32 for float32 inputs, float64 otherwise;
    gradients flow to tensors with ``requires_grad``.

    A VAE loss with an encoder giving ``mu, logvar: [B, D]`` (torch; gradients flow)::

        recon = torch.nn.functional.mse_loss(decoder(z), x, reduction="sum")
        loss = recon + gk.kl_standard_normal(gk.DiagGaussian(mu, logvar=logvar)).sum()
    """
    if p.__class__ not in _GAUSSIANS:
        p = _as_gaussian("kl_standard_normal", "p", p)
    if jitter.__class__ is not float or jitter or memory_budget or threads:
        jitter, memory_budget, threads = _options.common("kl_standard_normal", jitter,
                                                         memory_budget, threads)
    else:
        memory_budget = 0
    if p._torch and _arrays.compiling():
        return _compiled("kl_standard_normal")(p, jitter, memory_budget, threads)
    try:
        out = _ext.kl_standard_normal(p._spec, threads, jitter, memory_budget, torch_path)
    except ValueError as e:
        raise with_hint(e) from None
    if out.__class__ is int or jitter or p._namespace is not None:
        if out == NEEDS_GRAD and not jitter and p._namespace is None:
            return _autograd().rowwise("kl_standard_normal", p, None, threads, memory_budget)
        return _Request("kl_standard_normal", p, None, threads=threads, jitter=jitter,
                        budget=memory_budget, torch_path=torch_path).run(out)
    return out


def pairwise_kl(p, q=None, *, jitter: float = 0.0, tolerance: float | None = 0.0,
                memory_budget: int | None = 0, threads: int = 0, torch_path: bool | None = None):
    """All pairs: ``out[i, j] = KL(p_i || q_j)`` in nats, shape ``[N, M]`` (for batch shapes
    ``p.batch_shape + q.batch_shape``); without ``q``, ``q = p`` and the diagonal is exactly 0.

    Memory is O(N M) plus the factored q: no ``[N, M, D]`` intermediate. Results in the
    inputs' framework (torch tensors if any input is one), float32 when every input is float32
    and float64 otherwise. Gradients: diagonal pairs by the library (GEMM-shaped, no
    ``[N, M, D]``), other families through torch operations on the same algorithm.

    ``jitter``, ``threads`` and ``torch_path`` as in ``kl``.

    ``tolerance`` (default 0 or None: the library's default): the error each result may have,
    as ``|KL - exact| / (|exact| + 1)`` before rounding to the result's dtype. It is a
    guarantee, not an estimate: every entry gets a deterministic error bound, and those whose
    bound exceeds it are recomputed in the exact per-dimension form. The default is 1e-7 when
    every input is float32 and 1e-13 otherwise; the most is 1e-3 (ValueError if larger,
    negative or NaN; TypeError if not a real number). From about 1e-5 up, float32 diagonal
    inputs may use a faster float kernel.

    ``memory_budget`` (bytes, an int; default 0 or None: no limit): the most the library may
    allocate for the call: the prepared (factored) copies of the inputs, work buffers, and
    blocks of rows of results in what they leave (without a budget, blocks of 128 MiB). Your
    inputs and the returned array are not counted, and results do not depend on it. A budget
    too small for the rest and one row raises RuntimeError with the library's message
    (``[pairwise_kl] the memory budget (...) is too small: ...``) before anything is allocated;
    a negative one is a ValueError, anything but an int a TypeError.

    On the torch path (CUDA and MPS tensors, ``torch_path=True``, GAUSSKL_FORCE_TORCH_PATH=1)
    ``tolerance`` and ``memory_budget`` are checked by the library's rules, then ignored: that
    path computes in float64 (float32 on MPS) with the centred GEMM form, which has no
    per-entry error bound.

    The forum's pairwise KL of diagonal Gaussians (``mu, std: [B, H]``), as one line::

        kl = gk.pairwise_kl(gk.DiagGaussian(mu, std=std))       # [B, B], no [B, B, H]
    """
    op = "pairwise_kl"
    if p.__class__ not in _GAUSSIANS:
        p = _as_gaussian(op, "p", p)
    if q is not None and q.__class__ not in _GAUSSIANS:
        q = _as_gaussian(op, "q", q)
    if jitter.__class__ is not float or jitter or memory_budget or threads:
        jitter, memory_budget, threads = _options.common(op, jitter, memory_budget, threads)
    else:
        memory_budget = 0
    if tolerance.__class__ is not float or tolerance:
        tolerance = _options.tolerance(op, tolerance)
    if (p._torch or (q is not None and q._torch)) and _arrays.compiling():
        return _compiled("pairwise_kl")(p, q, jitter, tolerance, memory_budget, threads)
    try:
        out = _ext.pairwise_kl(p._spec, None if q is None else q._spec, threads, jitter,
                               tolerance, memory_budget, torch_path)
    except ValueError as e:
        raise with_hint(e) from None
    if (out.__class__ is int or jitter or p._namespace is not None
            or (q is not None and q._namespace is not None)):
        return _Request(op, p, q, threads=threads, jitter=jitter, budget=memory_budget,
                        torch_path=torch_path, tolerance=tolerance,
                        self_pairs=q is None).run(out)
    return out


def knn_kl(p, q=None, *, k: int, exclude_self: bool = False, jitter: float = 0.0,
           tolerance: float | None = 0.0, memory_budget: int | None = 0, threads: int = 0,
           torch_path: bool | None = None):
    """Nearest neighbours by KL: for each ``p_i``, the ``k`` smallest ``KL(p_i || q_j)``,
    ascending, ties to the lower ``j``. Returns ``(indices, kl)``, each ``[N, k]`` (for a batch
    shape of p, ``p.batch_shape + (k,)``), indices int64 into q's batch (in C order when it has
    several axes), values as in ``pairwise_kl``. Without ``q``, ``q = p``; ``exclude_self=True``
    then leaves out ``j == i``. The ``[N, M]`` matrix is never kept.

    ``jitter``, ``threads`` and ``torch_path`` as in ``kl``; ``memory_budget`` as in
    ``pairwise_kl`` (blocks of rows of the matrix and their best k).

    ``tolerance`` (default 0 or None: the library's default) is the error of the screening pass:
    every candidate that could rank in the first ``k`` within it is re-scored with the exact
    pair formula, so the values and order returned do not depend on it, only the speed does.
    Its rules are those of ``pairwise_kl``.

    Tensors with ``requires_grad`` get gradients of the values (through the pairs chosen).

    Retrieval, "the 10 nearest Gaussians by KL" of each query among a database::

        idx, dist = gk.knn_kl(gk.DiagGaussian(q_mu, std=q_std), gk.DiagGaussian(db_mu, std=db_std), k=10)
    """
    op = "knn_kl"
    if p.__class__ not in _GAUSSIANS:
        p = _as_gaussian(op, "p", p)
    if q is not None and q.__class__ not in _GAUSSIANS:
        q = _as_gaussian(op, "q", q)
    if jitter.__class__ is not float or jitter or memory_budget or threads:
        jitter, memory_budget, threads = _options.common(op, jitter, memory_budget, threads)
    else:
        memory_budget = 0
    if tolerance.__class__ is not float or tolerance:
        tolerance = _options.tolerance(op, tolerance)
    exclude_self = bool(exclude_self)
    request = _Request(op, p, q, threads=threads, jitter=jitter, budget=memory_budget,
                       torch_path=torch_path, tolerance=tolerance, k=k,
                       exclude_self=exclude_self, self_pairs=q is None)
    if (p._torch or (q is not None and q._torch)) and _arrays.compiling():
        return _compiled("knn_kl")(request)
    return request.run()
