"""Batches of Gaussians: diagonal, full covariance, low rank + diagonal.

A batch keeps the caller's arrays as they are (NumPy arrays, PyTorch tensors; other DLPack arrays
and sequences are read through NumPy); nothing is copied or checked for values here. Every value
rule (positive scales, finite numbers, triangular factors, symmetric matrices, positive
definiteness) is checked by the operation that uses the batch, with a message naming the
operation, the side (p or q), the array and the index:
``[kl] p.scale (std) must be positive and finite, found -0.5 at row 17, column 3``.
Only the number of axes and the shapes are checked when the batch is made.

Batch axes follow torch's and NumPy's broadcasting: the arrays of a batch broadcast against each
other over their leading (batch) axes, ``batch_shape`` is the result, and the operations' results
have the broadcast batch shape of their inputs (a 0-d result for one unbatched distribution).
Row numbers in error messages count distributions in C order of the batch.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from gausskl import _arrays, _ext

# The parameterizations' names, the library's (gausskl/types.hpp).
DIAG_PARAMS = _ext.DIAG_PARAMS
FULL_PARAMS = _ext.FULL_PARAMS

# The code of each family and parameterization in a batch's spec, the tuple the extension reads:
# (code, mean, scale) or (code, mean, cov_factor, cov_diag), and what each code is (FORMS[code]:
# family, param, arrays, event ranks, factored, the library's gradients): the extension's table
# (python/src/families.hpp).
CODES = dict(_ext.CODES)
Form = namedtuple("Form", ("code", "name", "family", "cls", "param", "log_diagonal", "arrays",
                           "event_ranks", "factored", "gradients"))
FORMS = tuple(Form(**record) for record in _ext.FAMILIES)


def _one_of(cls: str, named: dict):
    given = [k for k, v in named.items() if v is not None]
    if len(given) != 1:
        found = ", ".join(given) if given else "none"
        raise ValueError(f"[{cls}] give exactly one of {', '.join(named)}; found {found}")
    return given[0], named[given[0]]


def _positional(cls: str, how: str):
    raise TypeError(f"[{cls}] give the scale by keyword after the mean: {how}")


def _text(shape) -> str:
    return str(tuple(int(s) for s in shape))


def _broadcast(cls: str, name: str, want: str, mean_shape, shape, batch, event_rank: int):
    """The broadcast of batch with the batch axes of an array of this shape, or the shape error."""
    got = tuple(shape[:len(shape) - event_rank])
    try:
        return np.broadcast_shapes(tuple(batch), got)
    except ValueError:
        raise ValueError(
            f"[{cls}] {name} must be {want}, found shape {_text(shape)} (mean has shape "
            f"{_text(mean_shape)}; the batch axes {_text(got)} and {_text(batch)} do not "
            "broadcast)") from None


class Gaussian:
    """Base of the three families. Not constructed directly.

    ``batch_shape`` (the broadcast of the arrays' leading axes) and ``event_shape`` (``(D,)``)
    are torch's; ``n`` is the number of distributions (the product of ``batch_shape``) and ``d``
    the dimension D.
    """

    family: str = ""
    # No __dict__: a training step makes two batches per call (bench/README.md, "The seeds' own
    # sizes").
    __slots__ = ("_cls", "_spec", "param", "_batch_shape", "_namespace", "_torch")

    def _set(self, cls: str, arrays: tuple, param: str, code: int, batch, namespace=None,
             torch_=None):
        # arrays: mean first, then the scale arrays of the family, NumPy arrays or tensors.
        self._cls = cls
        self._spec = (code, *arrays)
        self.param = param
        self._batch_shape = batch
        self._namespace = namespace
        if torch_ is None:
            _arrays.check_dtypes(cls, *arrays)
            torch_ = any(_arrays.native(a) == _arrays.TORCH for a in arrays)
        self._torch = torch_

    @property
    def _batch(self):
        """batch_shape as made (None: the mean's leading axes, the diagonal fast path's)."""
        b = self._batch_shape
        if b is None:
            b = self._batch_shape = self._spec[1].shape[:-1]
        return b

    # -- the arrays -----------------------------------------------------------------------------
    @property
    def mean(self):
        """The means, broadcast to ``batch_shape + (D,)`` (the array as given when it has that
        shape)."""
        m = self._spec[1]
        want = (*self._batch, m.shape[-1])
        if tuple(m.shape) == want:
            return m
        return m.expand(want) if _arrays.is_torch(m) else np.broadcast_to(m, want)

    @property
    def arrays(self) -> dict:
        """Every array by name (mean first), as given (a scalar scale broadcast to its shape)."""
        return dict(zip(self._names(), self._spec[1:]))

    @property
    def batch_shape(self) -> tuple:
        """The broadcast of the arrays' leading (batch) axes, e.g. ``(N,)``; ``()`` for one
        distribution."""
        return self._batch

    @property
    def event_shape(self) -> tuple:
        """``(D,)``, as torch.distributions."""
        return (self.d,)

    @property
    def n(self) -> int:
        """The number of distributions: the product of ``batch_shape``."""
        return math.prod(self._batch)

    @property
    def d(self) -> int:
        """The dimension D."""
        return int(self._spec[1].shape[-1])

    @property
    def dtype(self) -> str:
        """'float32' or 'float64': the precision results come back in (float64 if any is)."""
        return _arrays.common_kind(self._spec[1:])

    @property
    def is_torch(self) -> bool:
        """Whether any array is a torch tensor (results are then tensors)."""
        return self._torch

    @property
    def device(self) -> str:
        """The tensors' device, e.g. ``'cpu'`` or ``'cuda:0'``; ``'cpu'`` for NumPy arrays."""
        for a in self._spec[1:]:
            if _arrays.is_torch(a):
                return str(a.device)
        return "cpu"

    @property
    def requires_grad(self) -> bool:
        """Whether any array is a tensor with ``requires_grad``."""
        return any(getattr(a, "requires_grad", False) for a in self._spec[1:])

    def __repr__(self) -> str:
        framework = ("torch" if self._torch else
                     "dask" if any(_arrays.is_dask(a) for a in self._spec[1:]) else "numpy")
        where = f", device={self.device}" if self._torch and self.device != "cpu" else ""
        size = f"N={self.n}" if len(self._batch) <= 1 else f"batch_shape={tuple(self._batch)}"
        return (f"{self._cls}({size}, D={self.d}, {self._describe()}, dtype={self.dtype}, "
                f"{framework}{where})")

    def _describe(self) -> str:
        return self.param

    def _names(self) -> tuple:
        return FORMS[self._spec[0]].arrays

    def _replace(self, arrays) -> "Gaussian":
        """The same family and parameterization over other arrays of the same roles (in spec
        order), whose batch axes broadcast to ``batch``."""
        g = object.__new__(type(self))
        batch = np.broadcast_shapes(*(tuple(a.shape[:a.ndim - r])
                                      for a, r in zip(arrays, self._event_ranks())))
        Gaussian._set(g, self._cls, tuple(arrays), self.param, self._spec[0], batch,
                      self._namespace)
        return g

    def _event_ranks(self) -> tuple:
        return FORMS[self._spec[0]].event_ranks


def _read(cls: str, mean, scales: dict):
    """The arrays as NumPy arrays or tensors, and the array API namespace of a foreign DLPack
    mean (None for NumPy, torch and plain sequences)."""
    namespace = None
    if not _arrays.native(mean):
        namespace = _arrays.foreign_namespace(mean)
        mean = _arrays.as_array(mean, "mean", cls)
    out = {}
    for name, x in scales.items():
        out[name] = x if _arrays.native(x) else _arrays.as_array(x, name, cls)
    if len(mean.shape) == 0:
        raise ValueError(f"[{cls}] mean must be [N, D] or [D] (or have more batch axes), found "
                         "shape ()")
    return mean, out, namespace


def _expand_scalar(x, like):
    """A 0-d scale as a broadcast view of the mean's shape (stride 0, no copy), in the mean's
    precision: a Python scalar or a 0-d array does not promote, as in torch and NumPy (a float32
    mean with ``std=1.0`` gives float32 results). A Python scalar beside a tensor becomes a
    tensor on its device."""
    k = _arrays.kind(like)
    if _arrays.is_torch(x):
        return _arrays.converted(x, k).expand(tuple(like.shape))
    if _arrays.is_torch(like):
        torch = _arrays.torch_module()
        dtype = torch.float64 if k == _arrays.FLOAT64 else torch.float32
        return torch.as_tensor(x, dtype=dtype, device=like.device).expand(tuple(like.shape))
    return np.broadcast_to(_arrays.converted(x, k), tuple(like.shape))


class DiagGaussian(Gaussian):
    """Gaussians with diagonal covariance: ``N(mean_i, diag(sigma_i^2))``.

    The arrays are kept as given (no copy); their values are checked by the operations.

    Parameters
    ----------
    mean : array (NumPy, torch, any DLPack array, or a nested sequence), float32 or float64
        ``[N, D]``, ``[D]`` for one distribution, or any batch axes ``[..., D]``.
    std, var, logvar, precision : array, by keyword, exactly one of them
        sigma, sigma^2, log sigma^2 (natural log) or 1 / sigma^2, of the shape of ``mean`` or
        broadcasting with it (a scalar is shared by every entry). A second positional argument
        is a TypeError that says to give the scale by keyword.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> gk.DiagGaussian(np.zeros((4, 3)), std=np.ones((4, 3)))
    DiagGaussian(N=4, D=3, std, dtype=float64, numpy)
    >>> gk.DiagGaussian([0.0, 1.0], logvar=0.0).batch_shape  # one distribution, a shared logvar
    ()
    """

    family = "diag"
    __slots__ = ()

    def __init__(self, mean, *args, std=None, var=None, logvar=None, precision=None):
        # A training step makes its batches on every call (bench/README.md): the common case, std
        # or logvar of the mean's shape, both tensors (or both NumPy arrays), is set here in one
        # pass (and by the class's tp_init in C before this runs: install_diag_init below);
        # anything else takes the general path below.
        if logvar is not None:
            param, code, scale = "logvar", _LOGVAR, logvar
            alone = std is None and var is None and precision is None
        elif std is not None:
            param, code, scale = "std", _STD, std
            alone = var is None and precision is None
        else:
            alone = False
        if alone and not args:
            kind = _NATIVE.get(mean.__class__)
            if kind is not None and scale.__class__ is mean.__class__:
                ms = mean.shape
                if ms and ms == scale.shape and mean.dtype in _FLOATS and scale.dtype in _FLOATS:
                    self._cls = "DiagGaussian"
                    self._spec = (code, mean, scale)
                    self.param = param
                    self._batch_shape = None  # ms[:-1], made when asked for
                    self._namespace = None
                    self._torch = kind == _TORCH
                    return
        cls = "DiagGaussian"
        if args:
            _positional(cls, "DiagGaussian(mean, std=...) (or var=, logvar=, precision=)")
        if not alone:
            param, scale = _one_of(cls, {"std": std, "var": var, "logvar": logvar,
                                         "precision": precision})
        km, ks = _arrays.native(mean), _arrays.native(scale)
        ns = None
        if not (km and ks):
            mean, scales, ns = _read(cls, mean, {param: scale})
            scale = scales[param]
            km, ks = _arrays.native(mean), _arrays.native(scale)
        ms, ss = mean.shape, scale.shape
        if ss == ms and ms:
            batch = ms[:-1]
        else:
            if len(ms) == 0:
                _read(cls, mean, {})  # the error for a 0-d mean
            if len(ss) == 0:
                scale = _expand_scalar(scale, mean)
                batch = ms[:-1]
            else:
                want = "[D] like mean" if len(ms) == 1 else "[N, D] like mean"
                if ss[-1] != ms[-1] and ss[-1] != 1:
                    raise ValueError(f"[{cls}] {param} must be {want}, found shape {_text(ss)}")
                if ss[-1] != ms[-1]:  # a size-1 last axis broadcasts over D
                    scale = _broadcast_event(scale, (*ss[:-1], ms[-1]))
                batch = _broadcast(cls, param, want, ms, ss, ms[:-1], 1)
        _arrays.check_dtypes(cls, mean, scale)
        self._set(cls, (mean, scale), param, CODES[param], batch, ns,
                  km == _arrays.TORCH or ks == _arrays.TORCH)

    @property
    def scale(self):
        """The scale array in the parameterization it was given in (see ``param``)."""
        return self._spec[2]


_NATIVE = _arrays._NATIVE  # array type -> NUMPY or TORCH, as _arrays.native() fills it
_FLOATS = _arrays.FLOAT_DTYPES  # float32 and float64 of NumPy, and of torch once seen
_TORCH = _arrays.TORCH
_STD, _LOGVAR = CODES["std"], CODES["logvar"]

# The common case above, in C as the class's tp_init (python/src/diag_init.cpp): the same result
# at half the cost. __init__ stays the class's, for what calls it by name (torch.compile's
# tracing, subclasses, CPython 3.13's specialized calls).
_ext.install_diag_init(DiagGaussian, _NATIVE, _FLOATS, _TORCH, _STD, _LOGVAR)


def _broadcast_event(x, shape):
    return x.expand(shape) if _arrays.is_torch(x) else np.broadcast_to(x, shape)


def _tril_size(d: int) -> int:
    return d * (d + 1) // 2


class FullGaussian(Gaussian):
    """Gaussians with full covariance: ``N(mean_i, Sigma_i)``.

    ``mean`` is ``[N, D]`` (``[D]`` for one distribution, or any batch axes); exactly one of

    * ``scale_tril``: lower-triangular L with a positive diagonal, Sigma = L L^T (entries above
      the diagonal must be 0), ``[N, D, D]``;
    * ``covariance`` (Sigma) or ``precision_matrix`` (Sigma^-1), ``[N, D, D]``, symmetric to
      round-off (their lower triangle is used);
    * ``packed_scale_tril``: L's lower triangle packed row by row, ``[N, D (D + 1) / 2]`` in the
      order of ``torch.tril_indices(D, D)`` (entry (r, c), c <= r, at r (r + 1) / 2 + c), as a
      network outputs it; with ``log_diagonal=True`` its diagonal entries are log L_rr (the
      factor takes ``exp`` of them: any finite value gives a valid factor). Never unpacked
      to ``D x D`` where the packed form suffices; gradients flow to it.

    The batch axes of ``mean`` and the matrix broadcast. The arrays are kept as given (no copy);
    their values are checked by the operations.

    Parameters
    ----------
    mean : array (NumPy, torch, any DLPack array, or a nested sequence), float32 or float64
        ``[N, D]``, ``[D]`` for one distribution, or any batch axes ``[..., D]``.
    scale_tril, covariance, precision_matrix, packed_scale_tril : array, by keyword, exactly one
        As above. A second positional argument is a TypeError that says to give the scale by
        keyword.
    log_diagonal : bool, default False
        ``packed_scale_tril`` only: its diagonal entries are log L_rr.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> L = np.array([[[1.0, 0.0], [0.5, 2.0]]])  # one lower-triangular factor, D = 2
    >>> gk.FullGaussian(np.zeros((1, 2)), scale_tril=L)
    FullGaussian(N=1, D=2, scale_tril, dtype=float64, numpy)
    >>> E = np.array([[0.0, 0.5, 0.0]])  # log L_00, L_10, log L_11
    >>> gk.FullGaussian(np.zeros((1, 2)), packed_scale_tril=E, log_diagonal=True)
    FullGaussian(N=1, D=2, packed_scale_tril, log_diagonal, dtype=float64, numpy)
    """

    family = "full"
    __slots__ = ()

    def __init__(self, mean, *args, scale_tril=None, covariance=None, precision_matrix=None,
                 packed_scale_tril=None, log_diagonal=False):
        cls = "FullGaussian"
        if args:
            _positional(cls, "FullGaussian(mean, scale_tril=...) (or covariance=, "
                             "precision_matrix=, packed_scale_tril=)")
        if (scale_tril is not None and covariance is None and precision_matrix is None
                and packed_scale_tril is None):
            param, scale = "scale_tril", scale_tril
        else:
            param, scale = _one_of(cls, {"scale_tril": scale_tril, "covariance": covariance,
                                         "precision_matrix": precision_matrix,
                                         "packed_scale_tril": packed_scale_tril})
        if log_diagonal is not False and log_diagonal is not True:
            raise TypeError(f"[{cls}] log_diagonal must be True or False, found "
                            f"{type(log_diagonal).__name__}")
        if log_diagonal and param != "packed_scale_tril":
            raise ValueError(f"[{cls}] log_diagonal applies to packed_scale_tril only, not to "
                             f"{param}")
        km, ks = _arrays.native(mean), _arrays.native(scale)
        ns = None
        if not (km and ks):
            mean, scales, ns = _read(cls, mean, {param: scale})
            scale = scales[param]
            km, ks = _arrays.native(mean), _arrays.native(scale)
        ms, ss = mean.shape, scale.shape
        if len(ms) == 0:
            _read(cls, mean, {})
        d = ms[-1]
        one = len(ms) == 1
        if param == "packed_scale_tril":
            k = _tril_size(int(d))
            want = (f"[D (D + 1) / 2] = [{k}]" if one else
                    f"[N, D (D + 1) / 2] = [N, {k}]") + f" with D = {int(d)} from mean"
            if len(ss) == 0 or ss[-1] != k:
                raise ValueError(f"[{cls}] packed_scale_tril must be {want}, found shape "
                                 f"{_text(ss)}")
            rank = 1
        else:
            want = ("[D, D]" if one else "[N, D, D]") + " with D from mean"
            if len(ss) < 2 or ss[-1] != d or ss[-2] != d:
                raise ValueError(f"[{cls}] {param} must be {want}, found shape {_text(ss)}")
            rank = 2
        batch = ms[:-1]
        if ss[:len(ss) - rank] != batch:
            batch = _broadcast(cls, param, want, ms, ss, batch, rank)
        code = CODES["packed_log_diagonal" if log_diagonal else param]
        _arrays.check_dtypes(cls, mean, scale)
        self._set(cls, (mean, scale), param, code, batch, ns,
                  km == _arrays.TORCH or ks == _arrays.TORCH)

    @property
    def scale(self):
        """The matrix (or packed factor) in the parameterization it was given in (``param``)."""
        return self._spec[2]

    @property
    def log_diagonal(self) -> bool:
        """packed_scale_tril only: whether the packed diagonal holds log L_rr."""
        return self._spec[0] == CODES["packed_log_diagonal"]

    def _describe(self) -> str:
        return self.param + (", log_diagonal" if self.log_diagonal else "")


class LowRankGaussian(Gaussian):
    """Gaussians with low rank + diagonal covariance: ``N(mean_i, W_i W_i^T + diag(d_i))``.

    Never densified: every operation costs O(D R^2) per distribution, not O(D^3). The arrays are
    kept as given (no copy); their values are checked by the operations.

    Parameters
    ----------
    mean : array (NumPy, torch, any DLPack array, or a nested sequence), float32 or float64
        ``[N, D]``, ``[D]`` for one distribution, or any batch axes ``[..., D]``.
    cov_factor : array, by keyword
        W, ``[N, D, R]`` (``[D, R]`` for one distribution), batch axes broadcasting with mean's.
    cov_diag : array, by keyword
        d, positive, ``[N, D]`` (``[D]``; a scalar is shared by every entry). Both are required,
        by keyword: a second positional argument is a TypeError that says so.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> gk.LowRankGaussian(np.zeros((5, 4)), cov_factor=np.ones((5, 4, 2)), cov_diag=1.0)
    LowRankGaussian(N=5, D=4, R=2, dtype=float64, numpy)
    """

    family = "low_rank"
    __slots__ = ()

    def __init__(self, mean, *args, cov_factor=None, cov_diag=None):
        cls = "LowRankGaussian"
        if args:
            _positional(cls, "LowRankGaussian(mean, cov_factor=..., cov_diag=...)")
        if cov_factor is None or cov_diag is None:
            missing = " and ".join(k for k, v in (("cov_factor", cov_factor),
                                                  ("cov_diag", cov_diag)) if v is None)
            raise TypeError(f"[{cls}] give both cov_factor= and cov_diag=; {missing} missing")
        mean, a, ns = _read(cls, mean, {"cov_factor": cov_factor, "cov_diag": cov_diag})
        ms = mean.shape
        d = ms[-1]
        one = len(ms) == 1
        w, dg = a["cov_factor"], a["cov_diag"]
        if len(w.shape) < 2 or w.shape[-2] != d:
            want = "[D, R]" if one else "[N, D, R]"
            raise ValueError(f"[{cls}] cov_factor must be {want} with D = {int(d)} from mean, "
                             f"found shape {_text(w.shape)}")
        if len(dg.shape) == 0:
            dg = _expand_scalar(dg, mean)
        want = "[D] like mean" if one else "[N, D] like mean"
        if dg.shape[-1] != d:
            raise ValueError(f"[{cls}] cov_diag must be {want}, found shape {_text(dg.shape)}")
        batch = _broadcast(cls, "cov_factor", "[N, D, R] with D from mean", ms, w.shape,
                           ms[:-1], 2)
        batch = _broadcast(cls, "cov_diag", want, ms, dg.shape, batch, 1)
        self._set(cls, (mean, w, dg), "cov_factor", CODES["cov_factor"], batch, ns)

    @property
    def cov_factor(self):
        """W, ``[..., D, R]``, as given."""
        return self._spec[2]

    @property
    def cov_diag(self):
        """d, ``[..., D]``, as given (a scalar broadcast to mean's shape)."""
        return self._spec[3]

    @property
    def rank(self) -> int:
        """R, the number of columns of each cov_factor."""
        return int(self._spec[2].shape[-1])

    def _describe(self) -> str:
        return f"R={self.rank}"


FAMILIES = (DiagGaussian, FullGaussian, LowRankGaussian)
_CLASSES = {cls.__name__: cls for cls in FAMILIES}


def of_code(arrays, code: int) -> Gaussian:
    """The batch of a spec's arrays (mean first) and code, made by its family's constructor."""
    form = FORMS[code]
    cls = _CLASSES[form.cls]
    # Each array by its keyword: the parameterization's name for the scale, else its own.
    named = {form.param if name == "scale" else name: a
             for name, a in zip(form.arrays[1:], arrays[1:])}
    if form.log_diagonal:
        named["log_diagonal"] = True
    return cls(arrays[0], **named)
