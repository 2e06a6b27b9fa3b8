"""Gaussian mixtures on the engine: every method is a weighted log-sum-exp over the all-pairs
matrices between components that gausskl already computes exactly (KL, Bhattacharyya) and the
components' log-determinants. docs/mixtures.md gives the formulas and their sources.

The log-overlap log int f_a f_b = log N(mu_a; mu_b, Sigma_a + Sigma_b) is never the log of a
product that can underflow. With B the Bhattacharyya distance, beta that of the same pair with
the means set to 0 (its log-determinant part, 1/2 log det((Sigma_a + Sigma_b) / 2) - (l_a +
l_b) / 4, exact by the engine) and l = log det Sigma:

    log int f_a f_b = -2 B(f_a, f_b) + beta(f_a, f_b) - D/2 log(4 pi) - (l_a + l_b) / 4

(-2 B + beta = -d' (Sigma_a + Sigma_b)^-1 d / 2 - beta, d = mu_a - mu_b, both terms <= 0). The
bounds combine the same terms so that no constant of size D cancels: with c = D (1 - log 2) / 2
and H the entropy, log int f_a h_b + H(f_a) = c - 2 B + beta + (l_a - l_b) / 4.
"""

from __future__ import annotations

import math

import numpy as np

from gausskl import _arrays, _dense
from gausskl._distributions import Gaussian
from gausskl._divergence import divergence, pairwise
from gausskl._ops import _as_gaussian, pairwise_kl

_LOG_4PI = math.log(4.0 * math.pi)


class GaussianMixture:
    """A batch of Gaussian mixtures ``f = sum_a w_a f_a``.

    Parameters
    ----------
    components : DiagGaussian, FullGaussian, LowRankGaussian (any parameterization) or a
        torch.distributions Gaussian. Its last batch axis indexes the C components; the leading
        batch axes are the batch of mixtures.
    weights, logits : array ``[..., C]``, exactly one of them (by keyword for ``logits``)
        ``weights`` finite, non-negative and summing to 1 over the last axis (within 1e-6 for
        float32, ``16 C eps`` for float64); ``logits`` any finite values (weights =
        softmax). They broadcast with the components' leading batch axes; NumPy or torch
        (gradients flow through ``logits`` and ``weights``).

    A plain Gaussian batch is accepted wherever a mixture is: one component of weight 1.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> comps = gk.DiagGaussian(np.array([[-1.0], [1.0]]), std=np.ones((2, 1)))
    >>> f = gk.GaussianMixture(comps, weights=np.array([0.5, 0.5]))
    >>> f
    GaussianMixture(batch_shape=(), C=2, D=1, DiagGaussian, numpy)
    >>> f.mean, f.covariance       # 1 + the spread of the means
    (array([0.]), array([[2.]]))
    """

    __slots__ = ("components", "log_weights", "_torch")

    def __init__(self, components, weights=None, *, logits=None):
        op = "GaussianMixture"
        g = _as_gaussian(op, "components", components)
        if len(g.batch_shape) == 0:
            raise ValueError(f"[{op}] components must have a batch axis indexing the components "
                             f"(its last), found batch_shape ()")
        if (weights is None) == (logits is None):
            raise TypeError(f"[{op}] give exactly one of weights= and logits=")
        c = g.batch_shape[-1]
        given = "weights" if logits is None else "logits"
        w = weights if logits is None else logits
        torch_ = _arrays.is_torch(w)
        if not torch_:
            w = np.asarray(w)
            if not np.issubdtype(w.dtype, np.floating) and not np.issubdtype(w.dtype, np.integer):
                raise ValueError(f"[{op}] {given} must be real numbers, found dtype {w.dtype}")
        if w.ndim == 0 or w.shape[-1] != c:
            raise ValueError(f"[{op}] {given} must have the C = {c} components on its last axis "
                             f"(the components' last batch axis), found shape {tuple(w.shape)}")
        try:
            np.broadcast_shapes(tuple(w.shape[:-1]), tuple(g.batch_shape[:-1]))
        except ValueError:
            raise ValueError(f"[{op}] {given} of shape {tuple(w.shape)} does not broadcast with "
                             f"the components' batch shape {tuple(g.batch_shape)}") from None
        _check_weights(op, given, w, c)
        lw = _log_weights(w, given == "logits")
        self.components, self.log_weights = g, lw
        self._torch = torch_ or g.is_torch

    # -- what it is -------------------------------------------------------------------------
    @property
    def batch_shape(self) -> tuple:
        """The batch of mixtures: the broadcast of the components' leading batch axes and the
        weights' leading axes."""
        return tuple(np.broadcast_shapes(tuple(self.components.batch_shape[:-1]),
                                         tuple(self.log_weights.shape[:-1])))

    @property
    def n_components(self) -> int:
        return int(self.components.batch_shape[-1])

    @property
    def d(self) -> int:
        return self.components.d

    @property
    def is_torch(self) -> bool:
        return self._torch

    @property
    def weights(self):
        """The weights, ``batch_shape + (C,)`` broadcastable."""
        return _exp(self.log_weights)

    @property
    def mean(self):
        """The mixture's mean, ``batch_shape + (D,)``, float64."""
        w = self.weights[..., None]
        return (w * _dense.as_float64(self.components.mean)).sum(-2)

    @property
    def covariance(self):
        """The moment-matched covariance ``sum_a w_a (Sigma_a + (mu_a - mu)(mu_a - mu)^T)``,
        ``batch_shape + (D, D)``, float64 (the spread term from the differences of the means,
        exact for means far from 0)."""
        mu = _dense.as_float64(self.components.mean)
        dev = mu - self.mean[..., None, :]
        S = _dense.covariance(self.components, "GaussianMixture")
        w = self.weights[..., None, None]
        return (w * (S + dev[..., :, None] * dev[..., None, :])).sum(-3)

    def __repr__(self) -> str:
        fw = "torch" if self._torch else "numpy"
        return (f"GaussianMixture(batch_shape={self.batch_shape}, C={self.n_components}, "
                f"D={self.d}, {type(self.components).__name__}, {fw})")


def _check_weights(op: str, given: str, w, c: int) -> None:
    x = w.detach() if _arrays.is_torch(w) else w
    x = np.asarray(x.cpu().double()) if _arrays.is_torch(x) else x.astype(np.float64)
    bad = ~np.isfinite(x)
    if bad.any():
        at = np.unravel_index(int(np.argmax(bad)), x.shape)
        raise ValueError(f"[{op}] {given} must be finite, found {x[at]} at index {[int(i) for i in at]}")
    if given == "logits":
        return
    neg = x < 0
    if neg.any():
        at = np.unravel_index(int(np.argmax(neg)), x.shape)
        raise ValueError(f"[{op}] weights must be non-negative, found {x[at]} at index "
                         f"{[int(i) for i in at]}")
    tol = 1e-6 if _arrays.kind(w) == _arrays.FLOAT32 else 16 * c * np.finfo(np.float64).eps
    off = np.abs(x.sum(-1) - 1.0)
    if (off > tol).any():
        at = np.unravel_index(int(np.argmax(off > tol)), off.shape)
        raise ValueError(f"[{op}] weights must sum to 1 over the components (within {tol:.3g}), "
                         f"found {x.sum(-1)[at]!r} for mixture {[int(i) for i in at]}")


def _log_weights(w, logits: bool):
    if _arrays.is_torch(w):
        import torch

        w = w.to(torch.float64) if w.dtype != torch.float32 else w
        return torch.log_softmax(w, -1) if logits else torch.log(w)
    w = w.astype(np.float64) if w.dtype != np.float32 else w
    if logits:
        return w - _lse(w, -1)[..., None]
    with np.errstate(divide="ignore"):
        return np.log(w)


def as_mixture(op: str, side: str, x) -> GaussianMixture:
    """x as a mixture: a GaussianMixture as it is, a Gaussian batch as one component each."""
    if isinstance(x, GaussianMixture):
        return x
    g = _as_gaussian(op, side, x)
    m = object.__new__(GaussianMixture)
    m.components = _with_batch(g, (*g.batch_shape, 1))
    like = g.mean
    m.log_weights = (like.new_zeros((1,), dtype=like.dtype) if g.is_torch else np.zeros(1))
    m._torch = g.is_torch
    return m


# -- array helpers: NumPy or torch, by what they are given -----------------------------------
def _exp(x):
    return x.exp() if _arrays.is_torch(x) else np.exp(x)


def _lse(x, axis):
    """log sum exp over `axis`; -inf where every entry is -inf."""
    if _arrays.is_torch(x):
        import torch

        return torch.logsumexp(x, dim=axis)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return (np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m).squeeze(axis)


def _weighted_sum(lw, x):
    """sum_a w_a x_a over the last axis, a zero weight contributing 0 whatever x_a is."""
    w = _exp(lw)
    if _arrays.is_torch(x):
        import torch

        return torch.where(w > 0, w * x, torch.zeros((), dtype=x.dtype)).sum(-1)
    with np.errstate(invalid="ignore"):
        return np.where(w > 0, w * x, 0.0).sum(-1)


def _with_batch(g: Gaussian, batch: tuple) -> Gaussian:
    """g with its batch broadcast to g.batch_shape and reshaped to `batch` (same size)."""
    arrays = []
    for a, r in zip(g._spec[1:], g._event_ranks()):
        event = tuple(a.shape[a.ndim - r:])
        full = (*g.batch_shape, *event)
        if _arrays.is_torch(a):
            arrays.append(a.expand(full).reshape((*batch, *event)))
        else:
            arrays.append(np.broadcast_to(a, full).reshape((*batch, *event)))
    return g._replace(arrays)


def _take(g: Gaussian, i: int) -> Gaussian:
    """The i-th entry of g's first batch axis."""
    return g._replace([a[i] for a in g._spec[1:]])


def _result(x, *mixtures):
    """float32 when every input is float32 (components and weights), else float64."""
    f32 = all(m.components.dtype == _arrays.FLOAT32 and
              _arrays.kind(m.log_weights) == _arrays.FLOAT32 for m in mixtures)
    if not f32:
        return x
    return x.float() if _arrays.is_torch(x) else x.astype(np.float32)


# -- the component-pair blocks -----------------------------------------------------------------
class _Pairs:
    """The mixtures f and h (batches broadcast to B) as rows of components: f's [n, C] and h's
    [n, K] with n = prod(B), and what the methods need of them, as [n, C, K] blocks."""

    def __init__(self, op: str, f: GaussianMixture, h: GaussianMixture, same: bool):
        self.op, self.same = op, same
        self.batch = tuple(np.broadcast_shapes(f.batch_shape, h.batch_shape))
        self.n = math.prod(self.batch)
        self.f, self.h = f, h
        self.lw_f = self._rows_w(f)
        self.lw_h = self._rows_w(h)
        # Each mixture of the broadcast batch: the index of its f and its h in their own rows.
        self.fi, self.gf = self._index(f)
        self.hi, self.gh = self._index(h)
        self._ld = {}

    def _rows_w(self, m):
        lw = _dense.as_float64(m.log_weights)
        shape = (*self.batch, m.n_components)
        lw = lw.expand(shape) if _arrays.is_torch(lw) else np.broadcast_to(lw, shape)
        return lw.reshape((self.n, m.n_components))

    def _index(self, m):
        own = m.components.batch_shape[:-1]
        k = math.prod(own)
        idx = np.broadcast_to(np.arange(k).reshape(own), self.batch).reshape(-1)
        return idx, _with_batch(m.components, (k, m.n_components))

    def _gather(self, x, idx):
        return x[torch_index(idx)] if _arrays.is_torch(x) else x[idx]

    def logdets(self, which: str):
        """l = log det Sigma of f's or h's components, [n, C] or [n, K]."""
        if which not in self._ld:
            g, idx = (self.gf, self.fi) if which == "f" else (self.gh, self.hi)
            self._ld[which] = self._gather(_dense.logdet(g, self.op), idx)
        return self._ld[which]

    def core(self, a: str, b: str):
        """-2 B + beta between the components of a's and b's mixtures, [n, C, K]: the
        log-overlap without its terms of one side."""
        key = ("core", a, b)
        if key not in self._ld:
            self._ld[key] = (-2.0 * self.block("bhattacharyya", a, b)
                             + self.block("bhattacharyya", a, b, zero_means=True))
        return self._ld[key]

    def block(self, kind: str, a: str, b: str, zero_means: bool = False):
        """kind (kl or bhattacharyya) between the components of a's and b's mixtures, [n, C, K]
        (a, b: "f" or "h")."""
        ga, ia = (self.gf, self.fi) if a == "f" else (self.gh, self.hi)
        gb, ib = (self.gf, self.fi) if b == "f" else (self.gh, self.hi)
        if zero_means:
            ga, gb = _zero_mean(ga), (_zero_mean(gb) if gb is not ga else None)
            gb = ga if gb is None else gb
        self_pairs = a == b or self.same
        ka, kb = ga.batch_shape[0], gb.batch_shape[0]

        def one(ga_i, gb_j):
            # q = p gives an exact 0 diagonal (and bit-symmetric symmetric kinds).
            q = None if self_pairs and ga_i is gb_j else gb_j
            if kind == "kl":
                return _dense.as_float64(pairwise_kl(ga_i, q))
            return _dense.as_float64(pairwise(ga_i, q, kind))

        if ka == 1 or kb == 1:
            # One call over every component: one side is a single (shared) mixture.
            left = _with_batch(ga, (ka * ga.batch_shape[1],))
            right = _with_batch(gb, (kb * gb.batch_shape[1],))
            m = one(left, right if not (self_pairs and ka == kb) else left)
            m = m.reshape((ka, ga.batch_shape[1], kb, gb.batch_shape[1]))
            m = m.permute(0, 2, 1, 3) if _arrays.is_torch(m) else m.transpose(0, 2, 1, 3)
            return m[torch_index(ia) if _arrays.is_torch(m) else ia,
                     torch_index(ib) if _arrays.is_torch(m) else ib]
        blocks = []
        for i, j in zip(ia, ib):
            gi = _take(ga, int(i))
            gj = gi if self_pairs and int(i) == int(j) else _take(gb, int(j))
            blocks.append(one(gi, gj))
        if _arrays.is_torch(blocks[0]):
            import torch

            return torch.stack(blocks)
        return np.stack(blocks)

    def shaped(self, x):
        return x.reshape(self.batch)


def _zero_mean(g: Gaussian) -> Gaussian:
    m = g._spec[1]
    zero = m.detach().new_zeros(m.shape) if _arrays.is_torch(m) else np.zeros(m.shape, m.dtype)
    return g._replace([zero, *g._spec[2:]])


def torch_index(idx):
    import torch

    return torch.as_tensor(np.array(idx, dtype=np.int64))


def _jensen(P: _Pairs, a: str, b: str):
    """J_i = LSE_j(lw_j - 2 B(a_i, b_j) + beta(a_i, b_j) + (l_i - l_j) / 4) per component i of a: log int a_i h +
    H(a_i) - c, [n, C]."""
    la, lb = P.logdets(a), P.logdets(b)
    lw_b = P.lw_f if b == "f" else P.lw_h
    x = lw_b[:, None, :] + P.core(a, b) + 0.25 * (la[:, :, None] - lb[:, None, :])
    return _lse(x, -1)


def _variational_term(P: _Pairs, a: str, b: str):
    """LSE_j(lw_j - KL(a_i || b_j)) per component i of a, [n, C]."""
    lw_b = P.lw_f if b == "f" else P.lw_h
    return _lse(lw_b[:, None, :] - P.block("kl", a, b), -1)


def _pairs(op, f, g):
    f0, g0 = f, g
    f, g = as_mixture(op, "f", f), as_mixture(op, "g", g)
    if f.d != g.d:
        raise ValueError(f"[{op}] f and g must have the same dimension, found D = {f.d} and "
                         f"D = {g.d}")
    return f, g, _Pairs(op, f, g, same=f0 is g0)


def _clamp_min(x, lo):
    return x.clamp_min(lo) if _arrays.is_torch(x) else np.maximum(x, lo)


def _minimum(x, y):
    if _arrays.is_torch(x):
        import torch

        return torch.minimum(x, torch.as_tensor(y, dtype=x.dtype))
    return np.minimum(x, y)


def _bounds(P: _Pairs):
    c = 0.5 * P.f.d * (1.0 - math.log(2.0))
    lower = _weighted_sum(P.lw_f, _variational_term(P, "f", "f") - c - _jensen(P, "f", "h"))
    entropy_side = _minimum(_weighted_sum(P.lw_f, c + _jensen(P, "f", "f")), 0.0)
    upper = entropy_side - _weighted_sum(P.lw_f, _variational_term(P, "f", "h"))
    return _clamp_min(lower, 0.0), _clamp_min(upper, 0.0)


def mixture_kl_bounds(f, g):
    """Guaranteed bounds on KL(f || g) between Gaussian mixtures: ``(lower, upper)`` with
    ``lower <= KL(f || g) <= upper`` for every input, in nats, of the mixtures' broadcast batch
    shape.

    Durrieu, Thiran & Kelly (2012) bound ``int f log g`` above by Jensen's inequality
    (``sum_a w_a log int f_a g``) and below by the variational bound (``sum_a w_a log sum_b
    pi_b exp(-KL(f_a || g_b)) - sum_a w_a H(f_a)``), and ``int f log f`` the same way. The upper
    bound also uses ``H(f) >= sum_a w_a H(f_a)``, so that for a single Gaussian f it is the
    tighter ``-log sum_b pi_b exp(-KL(f || g_b))``. Both are clamped at 0 (KL >= 0).

    ``f``, ``g``: GaussianMixture or plain Gaussian batches (one component), any families, NumPy
    or torch (gradients flow to every array). docs/mixtures.md has the derivation.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> f = gk.DiagGaussian(np.zeros(2), std=np.ones(2))
    >>> g = gk.GaussianMixture(gk.DiagGaussian(np.array([[0.0, 0.0], [3.0, 0.0]]),
    ...                                        std=np.ones((2, 2))), weights=np.array([0.5, 0.5]))
    >>> lo, hi = gk.mixture_kl_bounds(f, g)
    >>> bool(0 <= lo <= hi <= np.log(2))     # KL(f || g) <= log 2: f is half of g
    True
    """
    op = "mixture_kl_bounds"
    f, g, P = _pairs(op, f, g)
    lo, hi = _bounds(P)
    return _result(P.shaped(lo), f, g), _result(P.shaped(hi), f, g)


_METHODS = ("variational", "upper_bound", "lower_bound", "product", "matched")


def mixture_kl(f, g, method: str = "variational"):
    """KL(f || g) between Gaussian mixtures, approximated or bounded, in nats, of the mixtures'
    broadcast batch shape.

    ``method``:

    * ``"variational"`` (Hershey & Olsen 2007): ``sum_a w_a log(sum_a' w_a' exp(-KL(f_a ||
      f_a')) / sum_b pi_b exp(-KL(f_a || g_b)))``; equals ``gk.kl`` for single Gaussians and
      is 0 for ``f is g``.
    * ``"upper_bound"``, ``"lower_bound"``: one of ``gk.mixture_kl_bounds``.
    * ``"product"`` (Hershey & Olsen 2007): the same ratio with the overlaps ``int f_a f_a'``,
      ``int f_a g_b`` in place of ``exp(-KL)``.
    * ``"matched"`` (Goldberger et al. 2003): each f_a matched to the g_b minimizing ``KL(f_a
      || g_b) - log pi_b``, ``sum_a w_a (KL(f_a || g_m(a)) + log(w_a / pi_m(a)))``.

    ``f``, ``g``: GaussianMixture or plain Gaussian batches, any families, NumPy or torch
    (gradients flow, except through matched's choice of m).
    """
    op = "mixture_kl"
    if method not in _METHODS:
        raise ValueError(f"[{op}] method must be one of {', '.join(_METHODS)}, found {method!r}")
    f, g, P = _pairs(op, f, g)
    if method in ("upper_bound", "lower_bound"):
        lo, hi = _bounds(P)
        out = lo if method == "lower_bound" else hi
    elif method == "variational":
        out = _weighted_sum(P.lw_f, _variational_term(P, "f", "f") - _variational_term(P, "f", "h"))
    elif method == "product":
        def overlap(b):
            lw_b = P.lw_f if b == "f" else P.lw_h
            return _lse(lw_b[:, None, :] + P.core("f", b) - 0.25 * P.logdets(b)[:, None, :], -1)
        out = _weighted_sum(P.lw_f, overlap("f") - overlap("h"))
    else:
        cost = P.block("kl", "f", "h") - P.lw_h[:, None, :]
        m = cost.argmin(-1)
        if _arrays.is_torch(cost):
            picked = cost.gather(-1, m[..., None]).squeeze(-1)
        else:
            picked = np.take_along_axis(cost, m[..., None], -1)[..., 0]
        out = _weighted_sum(P.lw_f, picked + P.lw_f)
    return _result(P.shaped(out), f, g)


_KINDS = ("cauchy_schwarz", "l2")


def mixture_divergence(f, g, kind: str = "cauchy_schwarz"):
    """Closed-form divergences between Gaussian mixtures, of their broadcast batch shape.

    * ``"cauchy_schwarz"`` (Kampa, Hasanbelliu & Principe 2011): ``-log int f g + 1/2 log int
      f^2 + 1/2 log int g^2``, >= 0, 0 when f = g.
    * ``"l2"``: the integrated squared difference ``int (f - g)^2`` (its absolute error is
      rounding of ``int f^2 + int g^2``).

    Every overlap is a log-sum-exp of ``-2 B + beta - (l_a + l_b) / 4`` terms (module docstring) (the ``D/2 log(4 pi)``
    constants cancel in Cauchy-Schwarz), so nothing underflows at large D.
    """
    op = "mixture_divergence"
    if kind not in _KINDS:
        raise ValueError(f"[{op}] kind must be one of {', '.join(_KINDS)}, found {kind!r}")
    f, g, P = _pairs(op, f, g)

    def log_overlap(a, b):
        lw_a = P.lw_f if a == "f" else P.lw_h
        lw_b = P.lw_f if b == "f" else P.lw_h
        x = (lw_a[:, :, None] + lw_b[:, None, :] + P.core(a, b) - 0.25 * (P.logdets(a)[:, :, None] + P.logdets(b)[:, None, :]))
        return _lse(x.reshape((P.n, -1)), -1)

    ff, hh = log_overlap("f", "f"), log_overlap("h", "h")
    fh = ff if P.same else log_overlap("f", "h")
    if kind == "cauchy_schwarz":
        out = _clamp_min(0.5 * (ff + hh) - fh, 0.0)
    else:
        const = -0.5 * f.d * _LOG_4PI
        # Scaled by the largest overlap so that nothing underflows before the difference.
        top = _maximum(_maximum(ff, hh), fh)
        top = top.detach() if _arrays.is_torch(top) else top
        out = (_exp(ff - top) + _exp(hh - top) - 2.0 * _exp(fh - top)) * _exp(top + const)
        out = _clamp_min(out, 0.0)
    return _result(P.shaped(out), f, g)


def _maximum(x, y):
    if _arrays.is_torch(x):
        import torch

        return torch.maximum(x, y)
    return np.maximum(x, y)


def log_overlap(p, q):
    """``log int p_i q_i = log N(mu_p; mu_q, Sigma_p + Sigma_q)`` row by row (the probability
    product kernel; the "expected likelihood" of Gaussian embeddings), as ``gk.divergence``
    broadcasts, any families, exact at any D (``-2 B + beta - D/2 log(4 pi) - (l_p + l_q) / 4``
    with B the Bhattacharyya distance, beta that of the pair with its means set to 0, and l =
    log det Sigma), with gradients.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> p = gk.DiagGaussian(np.zeros(1), std=np.ones(1))
    >>> bool(np.isclose(gk.log_overlap(p, p), np.log(1 / np.sqrt(4 * np.pi))))  # N(0; 0, 2)
    True
    """
    op = "log_overlap"
    p, q = _as_gaussian(op, "p", p), _as_gaussian(op, "q", q)
    b = _dense.as_float64(divergence(p, q, "bhattacharyya"))
    beta = _dense.as_float64(divergence(_zero_mean(p), _zero_mean(q), "bhattacharyya"))
    lp, lq = _dense.logdet(p, op), _dense.logdet(q, op)
    out = -2.0 * b + beta - 0.5 * p.d * _LOG_4PI - 0.25 * (lp + lq)
    return _gaussian_result(out, p, q)


def pairwise_log_overlap(p, q=None):
    """``out[i, j] = log int p_i q_j`` for every pair (``p.batch_shape + q.batch_shape``);
    without ``q``, ``q = p``. As ``gk.log_overlap``, by the all-pairs Bhattacharyya matrix."""
    op = "pairwise_log_overlap"
    p = _as_gaussian(op, "p", p)
    q = None if q is None else _as_gaussian(op, "q", q)
    b = _dense.as_float64(pairwise(p, q, "bhattacharyya"))
    beta = _dense.as_float64(pairwise(_zero_mean(p), None if q is None else _zero_mean(q),
                                      "bhattacharyya"))
    lp = _dense.logdet(p, op)
    lq = lp if q is None else _dense.logdet(q, op)
    nd = (None,) * len(lq.shape)
    out = -2.0 * b + beta - 0.5 * p.d * _LOG_4PI - 0.25 * (lp[(...,) + nd] + lq)
    return _gaussian_result(out, p, q if q is not None else p)


def _gaussian_result(x, p, q):
    if p.dtype == _arrays.FLOAT32 and q.dtype == _arrays.FLOAT32:
        return x.float() if _arrays.is_torch(x) else x.astype(np.float32)
    return x
