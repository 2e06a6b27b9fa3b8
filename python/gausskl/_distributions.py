"""Batches of Gaussians: diagonal, full covariance, low rank + diagonal.

A batch keeps the caller's arrays as they are (NumPy, PyTorch, or any DLPack array read through
NumPy); nothing is copied or checked for values here. Every value rule (positive scales, finite
numbers, triangular factors, symmetric matrices, positive definiteness) is checked by the
operation that uses the batch, with a message naming the operation, the side (p or q), the array
and the index: ``[kl] p.scale (std) must be positive and finite, found -0.5 at row 17, column 3``.
Only the number of dimensions and the shapes are checked when the batch is made.
"""

from __future__ import annotations

from gausskl import _arrays
from gausskl import _ext

DIAG_PARAMS = ("std", "var", "logvar", "precision")
FULL_PARAMS = ("scale_tril", "covariance", "precision_matrix")


def _one_of(cls: str, options: tuple, given: dict):
    named = [k for k in options if given[k] is not None]
    if len(named) != 1:
        found = ", ".join(named) if named else "none"
        raise ValueError(
            f"[{cls}] give exactly one of {', '.join(options)}; found {found}"
        )
    return named[0], given[named[0]]


def _expand_scalar(x, like):
    """A 0-d scale as a broadcast view of mean's shape (stride 0, no copy)."""
    if len(x.shape) != 0:
        return x
    if _arrays.is_torch(x):
        return x.expand(tuple(like.shape))
    import numpy as np

    return np.broadcast_to(x, tuple(like.shape))


def _with_batch_axis(x):
    return x.unsqueeze(0) if _arrays.is_torch(x) else x[None]


class Gaussian:
    """Base of the three families. Not constructed directly."""

    family: str = ""
    _params: tuple = ()

    def __init__(self, cls: str, arrays: dict, param: str, namespace=None):
        # arrays: name -> array, mean first, already [N, ...]-shaped. namespace: the array API
        # namespace of a DLPack input that is neither NumPy nor torch (results go back to it).
        self._namespace = namespace
        self._cls = cls
        self._arrays = arrays
        self.param = param
        self._kind = _arrays.common_kind(arrays.values())
        self._tensors = [a for a in arrays.values() if _arrays.is_torch(a)]
        devices = {str(a.device) for a in self._tensors}
        if len(devices) > 1:
            raise ValueError(f"[{cls}] arrays are on different devices: {', '.join(sorted(devices))}")

    # -- the arrays -----------------------------------------------------------------------------
    @property
    def mean(self):
        """The means, [N, D] (a [D] mean was given a leading axis of 1)."""
        return self._arrays["mean"]

    @property
    def arrays(self) -> dict:
        """Every array by name (mean first), as given (after the leading axis for one distribution)."""
        return dict(self._arrays)

    @property
    def n(self) -> int:
        """The number of distributions N."""
        return int(self._arrays["mean"].shape[0])

    @property
    def d(self) -> int:
        """The dimension D."""
        return int(self._arrays["mean"].shape[1])

    @property
    def dtype(self) -> str:
        """'float32' or 'float64': the precision results come back in (float64 if any is)."""
        return self._kind

    @property
    def is_torch(self) -> bool:
        return bool(self._tensors)

    @property
    def device(self) -> str:
        return str(self._tensors[0].device) if self._tensors else "cpu"

    @property
    def requires_grad(self) -> bool:
        return any(t.requires_grad for t in self._tensors)

    def __repr__(self) -> str:
        framework = "torch" if self.is_torch else "numpy"
        where = f", device={self.device}" if self.is_torch and self.device != "cpu" else ""
        return (
            f"{self._cls}(N={self.n}, D={self.d}, {self._describe()}, "
            f"dtype={self.dtype}, {framework}{where})"
        )

    def _describe(self) -> str:
        return self.param

    # -- for the extension ----------------------------------------------------------------------
    def _batch(self, k: str) -> _ext.Batch:
        """Views of the arrays in precision k for the C++ library (in place when possible)."""
        views = [_arrays.cpu_view(a, k) for a in self._arrays.values()]
        if self.family == "diag":
            return _ext.Batch.diag(views[0], views[1], self.param)
        if self.family == "full":
            return _ext.Batch.full(views[0], views[1], self.param)
        return _ext.Batch.low_rank(views[0], views[1], views[2])

    def _replace(self, arrays: dict) -> "Gaussian":
        """The same family and parameterization over other arrays of the same roles."""
        g = object.__new__(type(self))
        Gaussian.__init__(g, self._cls, arrays, self.param, self._namespace)
        return g


def _prepare(cls: str, mean, scales: dict, scalar_ok=frozenset()):
    """Reads the arrays, gives a [D] mean (and its scales) a leading axis; returns them and the
    array namespace of a foreign DLPack mean (None for NumPy, torch and plain sequences)."""
    namespace = _arrays.foreign_namespace(mean)
    mean = _arrays.as_array(mean, "mean", cls)
    out = {"mean": mean}
    for name, x in scales.items():
        out[name] = _arrays.as_array(x, name, cls)
    if len(mean.shape) not in (1, 2):
        raise ValueError(
            f"[{cls}] mean must be [N, D] or [D] (one distribution), found shape {tuple(mean.shape)}"
        )
    one = len(mean.shape) == 1
    for name in scalar_ok:
        out[name] = _expand_scalar(out[name], mean)
    if one:
        out = {name: _with_batch_axis(a) for name, a in out.items()}
    return out, namespace


def _check_shape(cls: str, name: str, a, expected: tuple, text: str, one: bool):
    got = tuple(a.shape)
    if got != expected:
        shown = got[1:] if one else got
        want = text.replace("N, ", "") if one else text
        raise ValueError(f"[{cls}] {name} must be {want}, found shape {shown}")


class DiagGaussian(Gaussian):
    """N Gaussians with diagonal covariance: ``N(mean_i, diag(sigma_i^2))``.

    ``mean`` is ``[N, D]`` (or ``[D]`` for one distribution); exactly one of ``std`` (sigma),
    ``var`` (sigma^2), ``logvar`` (log sigma^2, natural log) or ``precision`` (1 / sigma^2), of
    the same shape as ``mean`` (or a scalar, shared by every entry).

    >>> import numpy as np, gausskl as gk
    >>> gk.DiagGaussian(np.zeros((4, 3)), std=np.ones((4, 3)))
    DiagGaussian(N=4, D=3, std, dtype=float64, numpy)
    """

    family = "diag"

    def __init__(self, mean, *, std=None, var=None, logvar=None, precision=None):
        cls = "DiagGaussian"
        param, scale = _one_of(
            cls, DIAG_PARAMS, {"std": std, "var": var, "logvar": logvar, "precision": precision}
        )
        one = _is_one(mean, cls)
        arrays, ns = _prepare(cls, mean, {param: scale}, scalar_ok={param})
        m = arrays["mean"]
        _check_shape(cls, param, arrays[param], tuple(m.shape), "[N, D] like mean", one)
        super().__init__(cls, {"mean": m, "scale": arrays[param]}, param, ns)

    @property
    def scale(self):
        """The scale array in the parameterization it was given in (see ``param``)."""
        return self._arrays["scale"]


class FullGaussian(Gaussian):
    """N Gaussians with full covariance: ``N(mean_i, Sigma_i)``.

    ``mean`` is ``[N, D]`` (or ``[D]``); exactly one of ``scale_tril`` (lower-triangular L with a
    positive diagonal, Sigma = L L^T; entries above the diagonal must be 0), ``covariance``
    (Sigma) or ``precision_matrix`` (Sigma^-1), each ``[N, D, D]`` (or ``[D, D]``). Symmetric
    matrices must be symmetric to round-off; their lower triangle is used.
    """

    family = "full"

    def __init__(self, mean, *, scale_tril=None, covariance=None, precision_matrix=None):
        cls = "FullGaussian"
        param, scale = _one_of(
            cls,
            FULL_PARAMS,
            {"scale_tril": scale_tril, "covariance": covariance, "precision_matrix": precision_matrix},
        )
        one = _is_one(mean, cls)
        arrays, ns = _prepare(cls, mean, {param: scale})
        m = arrays["mean"]
        n, d = tuple(m.shape)
        _check_shape(cls, param, arrays[param], (n, d, d), "[N, D, D] with D from mean", one)
        super().__init__(cls, {"mean": m, "scale": arrays[param]}, param, ns)

    @property
    def scale(self):
        """The matrix array in the parameterization it was given in (see ``param``)."""
        return self._arrays["scale"]


class LowRankGaussian(Gaussian):
    """N Gaussians with low rank + diagonal covariance: ``N(mean_i, W_i W_i^T + diag(d_i))``.

    ``mean`` ``[N, D]``, ``cov_factor`` W ``[N, D, R]``, ``cov_diag`` d ``[N, D]`` (positive), or
    ``[D]``, ``[D, R]``, ``[D]`` for one distribution. Never densified: every operation costs
    O(D R^2) per distribution, not O(D^3).
    """

    family = "low_rank"

    def __init__(self, mean, *, cov_factor, cov_diag):
        cls = "LowRankGaussian"
        one = _is_one(mean, cls)
        arrays, ns = _prepare(
            cls, mean, {"cov_factor": cov_factor, "cov_diag": cov_diag}, scalar_ok={"cov_diag"}
        )
        m = arrays["mean"]
        n, d = tuple(m.shape)
        w = arrays["cov_factor"]
        if len(w.shape) != 3 or tuple(w.shape[:2]) != (n, d):
            shown = tuple(w.shape)[1:] if one else tuple(w.shape)
            want = "[D, R]" if one else "[N, D, R]"
            raise ValueError(
                f"[{cls}] cov_factor must be {want} with D = {d} from mean, found shape {shown}"
            )
        _check_shape(cls, "cov_diag", arrays["cov_diag"], (n, d), "[N, D] like mean", one)
        super().__init__(cls, arrays, "cov_factor", ns)

    @property
    def cov_factor(self):
        return self._arrays["cov_factor"]

    @property
    def cov_diag(self):
        return self._arrays["cov_diag"]

    @property
    def rank(self) -> int:
        """R, the number of columns of each cov_factor."""
        return int(self._arrays["cov_factor"].shape[2])

    def _describe(self) -> str:
        return f"R={self.rank}"


def _is_one(mean, cls) -> bool:
    if hasattr(mean, "shape"):
        return len(mean.shape) == 1
    return _arrays.as_array(mean, "mean", cls).ndim == 1
