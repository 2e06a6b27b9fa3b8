"""Gaussians fitted to samples: ``gk.fit_gaussian`` and ``gk.MomentAccumulator``.

The arithmetic is the C++ library's (gausskl/moments.hpp): each batch's own mean and centred
scatter in float64, joined to the running ones by Chan, Golub & LeVeque's pairwise update, so
pieces (batches, threads, Dask partitions, torch.distributed ranks) combine to ``np.cov``'s
result and a mean large against the spread costs no digits. Here the inputs are only converted.
"""

from __future__ import annotations

import operator
import sys
import threading

import numpy as np

from gausskl import _ext
from gausskl._distributions import DiagGaussian, FullGaussian

_FAMILIES = ("full", "diag")


def _family(op: str, family) -> str:
    if family not in _FAMILIES:
        raise ValueError(f"[{op}] family must be 'full' or 'diag', found {family!r}")
    return family


def _count(op: str, name: str, value) -> int:
    if isinstance(value, bool):
        raise TypeError(f"[{op}] {name} must be an integer, found bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"[{op}] {name} must be an integer, found "
                        f"{type(value).__name__}") from None


def _rows(op: str, x):
    """x as the library reads it: a float32 or float64 array on the CPU, in place if it is one."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach()
        if x.device.type != "cpu":
            x = x.cpu()
        if x.dtype not in (torch.float32, torch.float64):
            # float16 / bfloat16 widen exactly; integers and bools as np.cov takes them.
            x = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x.double()
        return x
    if not isinstance(x, np.ndarray):
        if hasattr(x, "__dlpack__") and not isinstance(x, np.generic):
            return x
        x = np.asarray(x)
    if x.dtype == np.float16:
        return x.astype(np.float32)
    if x.dtype.kind in "biu":
        return x.astype(np.float64)
    if x.dtype.kind not in "f" or x.dtype.itemsize > 8:
        raise ValueError(f"[{op}] x must be float32 or float64 (or integers), found {x.dtype}")
    return x


def _gaussian(mean, cov, family: str):
    if family == "full":
        return FullGaussian(mean, covariance=cov)
    return DiagGaussian(mean, var=cov)


def fit_gaussian(x, ddof=1, *, family="full", threads=0):
    """The Gaussian fitted to the rows of ``x``: mean and covariance as ``np.cov``, in float64.

    Equal to ``np.cov(x.astype(np.float64), rowvar=False, ddof=ddof)`` to ~1e-13, also when the
    mean is large against the spread (float32 features of mean 1e3 and std 0.1: relative error
    <= 1e-10, where raw sums ``sum x, sum x x^T`` lose most digits): each chunk of rows is
    centred on its own mean in float64 and the chunks are joined by Chan et al.'s pairwise
    update. For more rows than fit in memory, give them in pieces to ``gk.MomentAccumulator``
    (the same numbers); for a Dask array, ``gk.dask.fit_gaussian``.

    Parameters
    ----------
    x : array, ``[N, D]``
        N samples of D features (a ``[D]`` vector is one row): NumPy, torch (any device: copied
        to the CPU; no gradient flows), any DLPack array; float32 or float64 (integers are read
        as float64).
    ddof : int, default 1
        Delta degrees of freedom: the covariance is the scatter divided by ``N - ddof``. 1 is
        ``np.cov``'s and pytorch-fid's (unbiased); StyleGAN's FID divides by N: ``ddof=0``.
        Needs ``N > ddof``.
    family : {"full", "diag"}, default "full"
        ``"diag"``: the variances alone (O(D) memory).
    threads : int, default 0
        The most worker threads the library may use; 0: one per hardware thread.

    Returns
    -------
    gk.FullGaussian or gk.DiagGaussian
        ``gk.FullGaussian(mean, covariance=cov)`` with NumPy float64 ``mean [D]`` and ``cov
        [D, D]``; for ``family="diag"``, ``gk.DiagGaussian(mean, var=var)`` with ``var [D]``.
        Errors (ValueError) are tagged ``[fit_gaussian]`` and name the row and column of a
        value that is not finite.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> x = np.random.default_rng(0).normal(1e3, 0.1, size=(1000, 4)).astype(np.float32)
    >>> g = gk.fit_gaussian(x)
    >>> g
    FullGaussian(N=1, D=4, covariance, dtype=float64, numpy)
    >>> bool(np.allclose(g.scale, np.cov(x.astype(np.float64), rowvar=False), rtol=1e-12))
    True
    """
    op = "fit_gaussian"
    family = _family(op, family)
    ddof = _count(op, "ddof", ddof)
    mean, cov = _ext.fit_gaussian(_rows(op, x), ddof, family, _count(op, "threads", threads))
    return _gaussian(mean, cov, family)


class MomentAccumulator:
    """Running mean and covariance of rows given in pieces: memory O(D^2) whatever their number.

    ``acc = gk.MomentAccumulator(D)`` (``family="diag"``: variances only, O(D)); then
    ``acc.update(batch)`` for each batch ``[n, D]`` of any size (1 and 0 included; a ``[D]``
    vector is one row), as ``fit_gaussian`` reads ``x``; ``acc.merge(other)`` adds the rows
    another accumulator has seen (another process, thread, rank or file), exactly as if they had
    been given to this one (Chan et al.'s pairwise update, not raw sums). Then ``acc.count``,
    ``acc.mean`` (float64 ``[D]``), ``acc.covariance(ddof=1)`` (``np.cov``'s, ``[D, D]`` or
    ``[D]``), ``acc.scatter()`` (the sum of centred outer products), and ``acc.gaussian(ddof=1)``,
    the ``gk.FullGaussian`` (``gk.DiagGaussian``) of those.

    Accumulators pickle (for multiprocessing, Dask, ``torch.distributed.all_gather_object``) and
    ``acc.save(path)`` / ``gk.MomentAccumulator.load(path)`` keep one in an ``.npz`` of the
    arrays ``mean`` (float64 ``[D]``), ``scatter`` (float64 ``[D, D]`` for full, ``[D]`` for
    diag: the sum of centred outer products, not the covariance, so nothing depends on ddof) and
    ``count`` (int64 scalar). (``gausskl fit`` writes ``mean``, ``covariance`` and ``count``
    instead: a statistics file for ``gausskl kl``.)

    Errors (ValueError) are tagged ``[MomentAccumulator]``: a batch of another D, a value that
    is not finite (its row in the batch and column; the batch is then not added), ``ddof >=
    count``, merging another D or family.

    >>> import numpy as np, gausskl as gk
    >>> x = np.random.default_rng(1).normal(size=(1000, 3))
    >>> acc = gk.MomentAccumulator(3)
    >>> for batch in np.array_split(x, 7):
    ...     acc = acc.update(batch)
    >>> acc
    MomentAccumulator(D=3, full, count=1000)
    >>> bool(np.allclose(acc.covariance(), np.cov(x, rowvar=False), rtol=1e-13))
    True
    >>> other = gk.MomentAccumulator(3).update(x[:10])
    >>> acc.merge(other).count
    1010
    """

    __slots__ = ("_acc", "_lock")

    def __init__(self, d, family="full", *, threads=0):
        op = "MomentAccumulator"
        self._acc = _ext.MomentAccumulator(_count(op, "d", d), _family(op, family),
                                           _count(op, "threads", threads))
        self._lock = threading.Lock()

    @classmethod
    def _of(cls, acc):
        self = cls.__new__(cls)
        self._acc = acc
        self._lock = threading.Lock()
        return self

    def update(self, batch, *, first_row=0) -> "MomentAccumulator":
        """Adds the rows of ``batch`` (``[n, D]`` or one row ``[D]``); returns self.

        ``first_row``: the number of the batch's first row in error messages (a piece of a larger
        array says where it is in it).
        """
        rows = _rows("MomentAccumulator", batch)
        first_row = _count("MomentAccumulator", "first_row", first_row)
        with self._lock:
            self._acc.update(rows, first_row)
        return self

    def merge(self, other: "MomentAccumulator") -> "MomentAccumulator":
        """Adds the rows ``other`` has seen (same D and family); ``other`` is unchanged."""
        if not isinstance(other, MomentAccumulator):
            raise TypeError("[MomentAccumulator] merge takes a MomentAccumulator, found "
                            f"{type(other).__name__}")
        if other is self:
            with self._lock:
                self._acc.merge(self._acc)
            return self
        # Both locks in one order, so that a.merge(b) and b.merge(a) at once cannot deadlock.
        first, second = sorted((self, other), key=id)
        with first._lock, second._lock:
            self._acc.merge(other._acc)
        return self

    @property
    def count(self) -> int:
        """The number of rows seen."""
        return self._acc.count

    @property
    def d(self) -> int:
        """The number of features D."""
        return self._acc.d

    @property
    def family(self) -> str:
        """``"full"`` or ``"diag"``."""
        return self._acc.family

    @property
    def mean(self) -> np.ndarray:
        """The mean of the rows seen, float64 ``[D]`` (zeros before any row), a copy."""
        return self._acc.mean()

    def scatter(self) -> np.ndarray:
        """The sum over the rows of ``(x - mean)(x - mean)^T``: ``[D, D]`` (diag: ``[D]``)."""
        return self._acc.scatter()

    def covariance(self, ddof=1) -> np.ndarray:
        """``scatter / (count - ddof)``, ``np.cov``'s with the same ddof (0 <= ddof < count)."""
        return self._acc.covariance(_count("MomentAccumulator", "ddof", ddof))

    def gaussian(self, ddof=1):
        """``gk.FullGaussian(mean, covariance=...)`` (diag: ``gk.DiagGaussian(mean, var=...)``)."""
        cov = self.covariance(ddof)
        return _gaussian(self.mean, cov, self.family)

    def __getstate__(self):
        return {"count": self.count, "mean": self.mean, "scatter": self.scatter(),
                "family": self.family, "threads": self._acc.threads}

    def __setstate__(self, state):
        self._acc = _ext.MomentAccumulator.from_state(
            int(state["count"]), np.ascontiguousarray(state["mean"], dtype=np.float64),
            np.ascontiguousarray(state["scatter"], dtype=np.float64), state["family"],
            int(state.get("threads", 0)))
        self._lock = threading.Lock()

    def save(self, path) -> None:
        """Writes ``mean``, ``scatter`` and ``count`` to the ``.npz`` file ``path``."""
        np.savez(path, mean=self.mean, scatter=self.scatter(), count=np.int64(self.count))

    @classmethod
    def load(cls, path, *, threads=0) -> "MomentAccumulator":
        """An accumulator saved by ``save``; the family is read from the scatter's shape."""
        op = "MomentAccumulator"
        with np.load(path, allow_pickle=False) as f:
            missing = [k for k in ("mean", "scatter", "count") if k not in f.files]
            if missing:
                raise ValueError(f"[{op}] {path} has no array {missing[0]!r} (a saved "
                                 "accumulator holds mean, scatter and count)")
            mean, scatter, count = f["mean"], f["scatter"], f["count"]
        if mean.ndim != 1 or scatter.ndim not in (1, 2) or count.shape != ():
            raise ValueError(f"[{op}] {path}: expected mean [D], scatter [D, D] or [D] and a "
                             f"scalar count, found shapes {mean.shape}, {scatter.shape}, "
                             f"{count.shape}")
        if count.dtype.kind not in "iu":
            raise ValueError(f"[{op}] {path}: count must be an integer, found {count.dtype}")
        family = "full" if scatter.ndim == 2 else "diag"
        acc = _ext.MomentAccumulator.from_state(
            int(count), np.ascontiguousarray(mean, dtype=np.float64),
            np.ascontiguousarray(scatter, dtype=np.float64), family,
            _count(op, "threads", threads))
        return cls._of(acc)

    def __repr__(self) -> str:
        return f"MomentAccumulator(D={self.d}, {self.family}, count={self.count})"
