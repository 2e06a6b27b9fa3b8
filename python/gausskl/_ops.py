"""The operations: kl, kl_standard_normal, pairwise_kl, knn_kl.

Each call hands the batches' specs to the extension, which reads the arrays in place, makes the
result in the caller's framework and runs the C++ library over the batch without the GIL: that
is the whole of a call on NumPy arrays and CPU tensors (a few microseconds over the library's own
time). The extension answers with a status instead when the call is not the library's to make as
given, and the call then takes that path (gausskl._dispatch):

* NEEDS_GRAD: a tensor requires grad; the library computes the values and its gradients
  (gausskl._autograd). For kl and kl_standard_normal of diagonal tensors (a training step's VAE
  term, a learned prior per row or shared by the batch) the extension answers instead with a
  Kept: the values, and each pair's own gradients made in the same pass, which
  kl and kl_standard_normal hand to autograd (gausskl._autograd._Kept);
* TORCH_PATH: tensors the library cannot read (CUDA, MPS), or CPU tensors with
  GAUSSKL_FORCE_TORCH_PATH=1 or torch_path=True: torch operations (gausskl._torch_path);
* CONVERT: arrays to bring to one dtype (or native byte order), or an all-pairs q batch to make
  contiguous; converted, then handed over again.

Under torch.compile the operations are torch custom operators (gausskl._compile). Results come
back in the caller's framework: torch tensors if any input is one (on its device), else NumPy
arrays (or, for another DLPack framework with an array namespace, that framework's). The checks
here are Python's own (types of the keywords); every rule on values and shapes of the inputs is
the library's, and the torch path applies the same rules with the same words.
"""

from __future__ import annotations

from gausskl import _arrays
from gausskl import _events
from gausskl import _ext
from gausskl import _options
from gausskl import _progress
from gausskl._dispatch import _KEPT, Request, step
from gausskl._distributions import FAMILIES, Gaussian
from gausskl._errors import for_caller
from gausskl._jitter import with_hint

_GAUSSIANS = frozenset(FAMILIES)


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


def rowwise_inputs(op: str, p, q):
    """The row-wise ops' p and q as gausskl batches, Ds matched as torch's (a size-1 diagonal
    event broadcast)."""
    p0, q0 = p, q
    if p.__class__ not in _GAUSSIANS:
        p = _as_gaussian(op, "p", p)
    if q.__class__ not in _GAUSSIANS:
        q = _as_gaussian(op, "q", q)
    if p is not p0 or q is not q0:
        p, q = _events.scalar_normals((p0, q0), p, q)
    if p._spec[1].shape[-1] != q._spec[1].shape[-1]:
        p, q = _events.match(op, (p0, q0), p, q)
    return p, q


def _pairs_options(op: str, jitter, memory_budget, threads, tolerance):
    """The all-pairs ops' checked options; the defaults pass untouched (a training step's call)."""
    if (jitter.__class__ is not float or jitter or memory_budget or threads
            or threads.__class__ is not int):
        jitter, memory_budget, threads = _options.common(op, jitter, memory_budget, threads)
    else:
        memory_budget = 0
    if tolerance.__class__ is not float or tolerance:
        tolerance = _options.tolerance(op, tolerance)
    return jitter, memory_budget, threads, tolerance


def pairs_inputs(op: str, p, q):
    """The all-pairs ops' p and q as gausskl batches (q None: q = p), Ds matched as torch's."""
    p0, q0 = p, q
    if p.__class__ not in _GAUSSIANS:
        p = _as_gaussian(op, "p", p)
        _events.check_pairs_input(op, "p", p0, p)
    if q is not None:
        if q.__class__ not in _GAUSSIANS:
            q = _as_gaussian(op, "q", q)
            _events.check_pairs_input(op, "q", q0, q)
        if p is not p0 or q is not q0:
            p, q = _events.scalar_normals((p0, q0), p, q)
        if p._spec[1].shape[-1] != q._spec[1].shape[-1]:
            p, q = _events.match(op, (p0, q0), p, q, widen=False)
    return p, q


def _knn_k(op: str, q, k):
    """k, given as the third argument or by keyword; an int given as q is a TypeError that says
    where k goes."""
    if isinstance(q, int) and not isinstance(q, bool):
        raise TypeError(f"[{op}] q must be a batch of Gaussians or None, found an int; k is the "
                        f"third argument: {op}(p, q, k) or {op}(p, k={q})")
    if k is None:
        raise TypeError(f"[{op}] k is required: {op}(p, q, k) or {op}(p, k=K)")
    return k


def _compiled(name):
    from gausskl import _compile

    return getattr(_compile, name)


def _limit_text(x: float) -> str:
    """A limit as the library writes it: "1e-3", "1e-13" (gausskl/limits.hpp's values)."""
    mantissa, exponent = f"{x:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


_TOL32 = _limit_text(_ext.DEFAULT_TOLERANCE_FLOAT32)
_TOL64 = _limit_text(_ext.DEFAULT_TOLERANCE_FLOAT64)
_TOLMAX = _limit_text(_ext.MAX_TOLERANCE)

# The parameters that several operations share, described once: _documented writes them into
# each operation's docstring, so help() shows every parameter of every operation in full. Each is
# (the numpydoc header line, or None, and the description, wrapped where it is written in).
_PARAMETERS = {
    "jitter": ("jitter : float, default 0", """
        A covariance or precision matrix that is not positive definite is an error (ValueError);
        with ``jitter > 0`` each such matrix, and only those, is factored as ``C + jitter * I``
        instead, results and gradients are those of the jittered matrices, and a
        ``gausskl.JitterWarning`` says how many distributions of each side needed it. Negative
        or not finite: ValueError; not a real number: TypeError."""),
    "tolerance": ("tolerance : float or None, default 0", f"""
        The error each result may have, as ``|KL - exact| / (|exact| + 1)`` before rounding to
        the result's dtype; 0 or None: {_TOL32} when every input is float32, {_TOL64} otherwise. A
        guarantee, not an estimate: every entry gets a deterministic error bound, and those whose
        bound exceeds it are recomputed in the exact per-dimension form. At most {_TOLMAX}
        (ValueError if larger, negative or NaN; TypeError if not a real number). From about 1e-5 up, float32
        diagonal inputs may use a faster float kernel."""),
    "memory_budget_pairs": ("memory_budget : int or None, default 0", f"""
        Bytes the library may allocate for the call: the prepared (factored) copies of the
        inputs, work buffers, and blocks of rows of results in what they leave; 0 or None: no
        limit (blocks of {_ext.DEFAULT_BLOCK_BYTES >> 20} MiB). Your inputs and the returned
        arrays are not counted, and results do not depend on it. Too small for the rest and one row: RuntimeError with the
        library's message (``[pairwise_kl] the memory budget (...) is too small: ...``) before
        anything is allocated; negative: ValueError; not an int: TypeError."""),
    "threads": ("threads : int, default 0", """
        The most worker threads the library may use; 0: one per hardware thread. Small calls
        run on the calling thread whatever it says, and results do not depend on it. Workers are
        kept between calls: after one they wait awake (yielding the CPU) for 0.1 ms, then
        sleep. Negative: ValueError; not an int: TypeError."""),
    "torch_path": ("torch_path : bool or None, default None", f"""
        Which code computes torch tensors on the CPU: None, the library unless the environment
        variable ``GAUSSKL_FORCE_TORCH_PATH`` is set (to anything but 0); True, torch operations
        (the same algorithms, as for CUDA and MPS tensors, which always take that path); False,
        the library. NumPy inputs are always the library's. The torch path keeps the library's
        promise in torch operations: float64 arithmetic (float32 on MPS, default tolerance {_TOL32}
        there); all pairs and knn certified to ``tolerance`` (diagonal pairs by the centred GEMM
        form with a rounding bound per entry, the entries it cannot certify recomputed directly;
        other families directly) in row blocks sized by ``memory_budget``, with the same
        errors."""),
    "progress": ("progress : bool or callable, default None", """
        True: a line on ``sys.stderr`` about every 10 seconds (to a log file as to a terminal)
        with the rows of p done, the rate and the time left, and one when the call ends; a
        callable: called as ``progress(done, total)`` after each block of rows the library
        finishes (what it raises stops the call and propagates); None or False: nothing. The
        library's path only (not the torch path, nor gradients' backward)."""),
    "framework": (None, """
        A torch tensor (on the inputs' device) if any input is one, else a NumPy array (for
        another DLPack framework's arrays with an array namespace, that framework's array);
        float32 when every input is float32, float64 otherwise. Tensors with ``requires_grad``
        get gradients through it."""),
}


def _documented(f):
    """f with each docstring line that is only ``{name}`` replaced by _PARAMETERS[name]: the
    header at the placeholder's indentation, the description 4 spaces further in (or at the
    placeholder's, without a header)."""
    if f.__doc__ is None:  # python -OO
        return f
    lines = []
    for line in f.__doc__.split("\n"):
        key = line.strip()[1:-1]
        if line.strip() != "{" + key + "}" or key not in _PARAMETERS:
            lines.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())]
        header, text = _PARAMETERS[key]
        if header is not None:
            lines.append(indent + header)
            indent += "    "
        lines += [indent + part.strip() for part in text.strip().split("\n")]
    f.__doc__ = "\n".join(lines)
    return f


@_documented
def kl(p, q, *, jitter: float = 0.0, memory_budget: int | None = 0, threads: int = 0,
       torch_path: bool | None = None):
    """Row-wise KL divergence in nats: ``out[...] = KL(p[...] || q[...])``.

    Parameters
    ----------
    p, q : DiagGaussian, FullGaussian, LowRankGaussian, or a torch.distributions object
        Batches of any families (``Normal``, ``Independent(Normal, r)``, ``MultivariateNormal``
        and ``LowRankMultivariateNormal`` are read by ``from_torch``). Their batch shapes
        broadcast as in torch and NumPy: equal N, N = 1 on one side paired with every row of
        the other, a batch ``[B, T]`` with one of ``[T]``, ...
    {jitter}
    memory_budget : int or None, default 0
        Bytes the library may allocate for the call, here its row-wise work (a double per row,
        per-thread scratch); 0 or None: no limit. Your inputs and the returned array are not
        counted, and results do not depend on it; with gradients it bounds the forward pass
        only. Too small: RuntimeError with the library's message (``[kl] the memory budget
        (...) is too small: the row-wise work takes ...``) before anything is allocated;
        negative: ValueError; not an int: TypeError.
    {threads}
    {torch_path}

    Returns
    -------
    numpy.ndarray or torch.Tensor
        KL(p || q) of the broadcast batch shape: ``[N]`` for batches of N, 0-d for two single
        distributions.
        {framework}

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> p = gk.DiagGaussian(np.zeros(2), std=np.ones(2))
    >>> q = gk.DiagGaussian(np.ones(2), std=np.full(2, 2.0))
    >>> gk.kl(p, q).round(6)  # 2 * (1/4 + 1/4 - 1 + 2 log 2) / 2
    np.float64(0.886294)
    >>> p3 = gk.DiagGaussian(np.zeros((3, 2), np.float32), std=np.ones((3, 2), np.float32))
    >>> gk.kl(p3, p3)  # three pairs; float32 in, float32 out
    array([0., 0., 0.], dtype=float32)
    """
    p0, q0 = p, q
    try:
        if (p.__class__ not in _GAUSSIANS or q.__class__ not in _GAUSSIANS
                or p._spec[1].shape[-1] != q._spec[1].shape[-1]):
            p, q = rowwise_inputs("kl", p, q)
        if (jitter.__class__ is not float or jitter or memory_budget or threads
                or threads.__class__ is not int):
            jitter, memory_budget, threads = _options.common("kl", jitter, memory_budget, threads)
        else:
            memory_budget = 0
        if (p._torch or q._torch) and _arrays.traced("kl"):
            return _compiled("kl")(p, q, jitter, memory_budget, threads)
        try:
            out = _ext.kl(p._spec, q._spec, threads, jitter, memory_budget, torch_path)
        except ValueError as e:
            raise with_hint(e) from None
        if (out.__class__ is _KEPT or out.__class__ is int or jitter
                or p._namespace is not None or q._namespace is not None):
            fast = step("kl", out, p, q, jitter, threads, memory_budget)
            if fast is not None:
                return fast
            return Request("kl", p, q, threads=threads, jitter=jitter, budget=memory_budget,
                           torch_path=torch_path).run(out)
        return out
    except (ValueError, TypeError, RuntimeError) as e:
        raise for_caller(e, "kl", {"p": p0, "q": q0}) from None


@_documented
def kl_standard_normal(p, *, jitter: float = 0.0, memory_budget: int | None = 0,
                       threads: int = 0, torch_path: bool | None = None):
    """``out[...] = KL(p[...] || N(0, I))`` in nats, of p's batch shape: the prior term of a VAE.

    Parameters
    ----------
    p : DiagGaussian, FullGaussian, LowRankGaussian, or a torch.distributions object
        A batch of any family (torch.distributions objects are read by ``from_torch``).
    {jitter}
    memory_budget : int or None, default 0
        Bytes the library may allocate for the call, here its row-wise work; 0 or None: no
        limit. Your inputs and the returned array are not counted, and results do not depend
        on it; with gradients it bounds the forward pass only. Too small: RuntimeError
        (``[kl_standard_normal] the memory budget (...) is too small: the row-wise work takes
        ...``) before anything is allocated; negative: ValueError; not an int: TypeError.
    {threads}
    {torch_path}

    Returns
    -------
    numpy.ndarray or torch.Tensor
        KL(p || N(0, I)) of p's batch shape (``[N]``, or 0-d for one distribution).
        {framework}

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> p = gk.DiagGaussian(np.array([[0.0, 0.0], [1.0, 2.0]]), logvar=np.zeros((2, 2)))
    >>> gk.kl_standard_normal(p)  # |mean|^2 / 2 with unit variances
    array([0. , 2.5])

    A VAE's prior term in a loss (torch): the encoder gives ``mu, logvar: [B, D]``, and the
    gradients reach its weights:

    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> encoder = torch.nn.Linear(10, 2 * 4)  # x [B, 10] -> mu, logvar [B, 4]
    >>> mu, logvar = encoder(torch.rand(16, 10)).chunk(2, dim=1)
    >>> prior = gk.kl_standard_normal(gk.DiagGaussian(mu, logvar=logvar))
    >>> prior.shape, prior.dtype
    (torch.Size([16]), torch.float32)
    >>> prior.sum().backward()
    >>> encoder.weight.grad.shape
    torch.Size([8, 10])
    """
    p0 = p
    try:
        if p.__class__ not in _GAUSSIANS:
            p = _as_gaussian("kl_standard_normal", "p", p)
        if (jitter.__class__ is not float or jitter or memory_budget or threads
                or threads.__class__ is not int):
            jitter, memory_budget, threads = _options.common("kl_standard_normal", jitter,
                                                             memory_budget, threads)
        else:
            memory_budget = 0
        if p._torch and _arrays.traced("kl_standard_normal"):
            return _compiled("kl_standard_normal")(p, jitter, memory_budget, threads)
        try:
            out = _ext.kl_standard_normal(p._spec, threads, jitter, memory_budget, torch_path)
        except ValueError as e:
            raise with_hint(e) from None
        if out.__class__ is _KEPT or out.__class__ is int or jitter or p._namespace is not None:
            fast = step("kl_standard_normal", out, p, None, jitter, threads, memory_budget)
            if fast is not None:
                return fast
            return Request("kl_standard_normal", p, None, threads=threads, jitter=jitter,
                           budget=memory_budget, torch_path=torch_path).run(out)
        return out
    except (ValueError, TypeError, RuntimeError) as e:
        raise for_caller(e, "kl_standard_normal", {"p": p0}) from None


@_documented
def pairwise_kl(p, q=None, *, jitter: float = 0.0, tolerance: float | None = 0.0,
                memory_budget: int | None = 0, threads: int = 0, torch_path: bool | None = None,
                progress=None):
    """All pairs: ``out[i, j] = KL(p_i || q_j)`` in nats; without ``q``, ``q = p`` and the
    diagonal is exactly 0.

    Memory is O(N M) plus the factored q: no ``[N, M, D]`` intermediate. Gradients: diagonal
    pairs by the library (GEMM-shaped, no ``[N, M, D]``), other families through torch
    operations on the same algorithm.

    Parameters
    ----------
    p : DiagGaussian, FullGaussian, LowRankGaussian, or a torch.distributions object
        The rows: N distributions (any batch shape), any family.
    q : the same, or None (default)
        The columns: M distributions, any family; None: q = p.
    {jitter}
    {tolerance}
    {memory_budget_pairs}
    {threads}
    {torch_path}
    {progress}

    Returns
    -------
    numpy.ndarray or torch.Tensor
        ``[N, M]``: KL(p_i || q_j) at ``[i, j]``; for batch shapes, ``p.batch_shape +
        q.batch_shape``.
        {framework}

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> mean = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> std = np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 0.5]])
    >>> gk.pairwise_kl(gk.DiagGaussian(mean, std=std))  # q = p
    array([[0.   , 0.5  , 9.125],
           [0.5  , 0.   , 9.25 ],
           [3.125, 3.625, 0.   ]])

    The pairwise KL matrix of a batch: the ``[B, B]`` matrix of KL between every pair of B
    diagonal Gaussians (``mu, std: [B, H]``), often computed by broadcasting to ``[B, B, H]``;
    here in one call that never forms ``[B, B, H]``:

    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> B, H = 64, 32
    >>> mu, std = torch.randn(B, H), torch.rand(B, H) + 0.5
    >>> kl = gk.pairwise_kl(gk.DiagGaussian(mu, std=std))
    >>> kl.shape, kl.dtype, bool((kl.diagonal() == 0).all())
    (torch.Size([64, 64]), torch.float32, True)
    """
    p0, q0 = p, q
    try:
        op = "pairwise_kl"
        p, q = pairs_inputs(op, p, q)
        jitter, memory_budget, threads, tolerance = _pairs_options(op, jitter, memory_budget,
                                                                   threads, tolerance)
        if (p._torch or (q is not None and q._torch)) and _arrays.traced("pairwise_kl"):
            return _compiled("pairwise_kl")(p, q, jitter, tolerance, memory_budget, threads)
        try:
            if progress is not None:
                progress = _progress.callback(op, progress)
            out = _ext.pairwise_kl(p._spec, None if q is None else q._spec, threads, jitter,
                                   tolerance, memory_budget, torch_path, False, progress)
        except ValueError as e:
            raise with_hint(e) from None
        if (out.__class__ is int or jitter or p._namespace is not None
                or (q is not None and q._namespace is not None)):
            return Request(op, p, q, threads=threads, jitter=jitter, budget=memory_budget,
                           torch_path=torch_path, tolerance=tolerance, self_pairs=q is None,
                           progress=progress).run(out)
        return out
    except (ValueError, TypeError, RuntimeError) as e:
        raise for_caller(e, "pairwise_kl", {"p": p0, "q": q0}) from None


@_documented
def knn_kl(p, q=None, k: int | None = None, *, exclude_self: bool = False, jitter: float = 0.0,
           tolerance: float | None = 0.0, memory_budget: int | None = 0, threads: int = 0,
           torch_path: bool | None = None, progress=None):
    """Nearest neighbours by KL: for each ``p_i``, the ``k`` smallest ``KL(p_i || q_j)``,
    ascending, ties to the lower ``j``. The ``[N, M]`` matrix is never kept. Tensors with
    ``requires_grad`` get gradients of the values (through the pairs chosen).

    Parameters
    ----------
    p : DiagGaussian, FullGaussian, LowRankGaussian, or a torch.distributions object
        The queries: N distributions (any batch shape), any family.
    q : the same, or None (default)
        The database: M distributions, any family; None: q = p.
    k : int
        How many neighbours per query, 1 <= k <= M (M - 1 with ``exclude_self``), the third
        argument or by keyword (``knn_kl(p, q, 10)``, ``knn_kl(p, k=10)``); ValueError outside
        that range, TypeError if not an int or not given.
    exclude_self : bool, default False
        Without q only: leave out ``j == i`` (each distribution's own zero).
    {jitter}
    tolerance : float or None, default 0
        The error of the screening pass: every candidate that could rank in the first ``k``
        within it is re-scored with the exact pair formula, so the values and order returned do
        not depend on it, only the speed does. The rules of ``pairwise_kl``'s ``tolerance``.
    {memory_budget_pairs}
    {threads}
    {torch_path}
    {progress}

    Returns
    -------
    (indices, kl) : tuple of two numpy.ndarray or torch.Tensor
        Each ``[N, k]`` (for a batch shape of p, ``p.batch_shape + (k,)``). ``indices`` is int64,
        into q's batch (in C order when it has several axes); ``kl`` the values, ascending along
        each row.
        {framework}

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> mean = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> std = np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 0.5]])
    >>> idx, dist = gk.knn_kl(gk.DiagGaussian(mean, std=std), k=2, exclude_self=True)
    >>> idx
    array([[1, 2],
           [0, 2],
           [0, 1]], dtype=int64)
    >>> dist
    array([[0.5  , 9.125],
           [0.5  , 9.25 ],
           [3.125, 3.625]])

    Retrieval: the 10 database Gaussians nearest by KL to each of 3 queries (here the first 3
    items of the database, slightly moved, which find themselves first):

    >>> rng = np.random.default_rng(0)
    >>> db_mu, db_std = rng.normal(size=(1000, 16)), rng.uniform(0.5, 2.0, size=(1000, 16))
    >>> q_mu, q_std = db_mu[:3] + 0.01, db_std[:3]
    >>> idx, dist = gk.knn_kl(gk.DiagGaussian(q_mu, std=q_std), gk.DiagGaussian(db_mu, std=db_std),
    ...                       k=10)
    >>> idx.shape, idx.dtype, dist.dtype, idx[:, 0]
    ((3, 10), dtype('int64'), dtype('float64'), array([0, 1, 2], dtype=int64))
    """
    p0, q0 = p, q
    try:
        op = "knn_kl"
        k = _knn_k(op, q, k)
        p, q = pairs_inputs(op, p, q)
        jitter, memory_budget, threads, tolerance = _pairs_options(op, jitter, memory_budget,
                                                                   threads, tolerance)
        k = _options.integer(op, "k", k, _options.INT64_MAX, "2^63 - 1")
        exclude_self = bool(exclude_self)
        request = Request(op, p, q, threads=threads, jitter=jitter, budget=memory_budget,
                          torch_path=torch_path, tolerance=tolerance, k=k,
                          exclude_self=exclude_self, self_pairs=q is None,
                          progress=_progress.callback(op, progress))
        if (p._torch or (q is not None and q._torch)) and _arrays.traced("knn_kl"):
            return _compiled("knn_kl")(request)
        return request.run()
    except (ValueError, TypeError, RuntimeError) as e:
        raise for_caller(e, "knn_kl", {"p": p0, "q": q0}) from None
