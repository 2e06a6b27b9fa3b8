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

from gausskl import _anyarray as _x
from gausskl import _arrays, _dense
from gausskl import _mixture_sampling as _sampling
from gausskl._batches import broadcast as _broadcast
from gausskl._batches import reshaped as _with_batch
from gausskl._distributions import Gaussian
from gausskl._divergence import divergence, pairwise
from gausskl._errors import GaussKLError, for_caller
from gausskl._ops import _as_gaussian, kl_standard_normal, pairwise_kl
from gausskl._weights import check as _check_weights

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
        if torch_ and _arrays.traced(op):
            from gausskl import _compile

            w = _compile.checked_weights(w, given == "logits")
        else:
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
        return _x.exp(self.log_weights)

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

    def log_prob(self, x):
        """log f(x) in nats for x of shape ``sample_shape + batch_shape + (D,)`` (the batch
        part broadcasting, as torch.distributions), float64, NumPy or torch (differentiable)."""
        op = "GaussianMixture.log_prob"
        batch, d = self.batch_shape, self.d
        x = _dense.as_float64(x if _arrays.is_torch(x) or not self._torch else
                              _torch_tensor(x, self))
        if x.ndim < 1 or x.shape[-1] != d:
            raise ValueError(f"[{op}] x must have D = {d} on its last axis, found shape "
                             f"{tuple(x.shape)}")
        lead = tuple(x.shape[:-1])
        sample = lead[:max(0, len(lead) - len(batch))]
        try:
            full = (*sample, *np.broadcast_shapes(lead[len(sample):], batch), d)
        except ValueError:
            raise ValueError(f"[{op}] x of shape {tuple(x.shape)} does not broadcast with the "
                             f"batch shape {batch}") from None
        if tuple(full[len(sample):-1]) != batch:
            raise ValueError(f"[{op}] x of shape {tuple(x.shape)} does not broadcast with the "
                             f"batch shape {batch}")
        m, k = math.prod(sample), math.prod(batch)
        xb = (x.expand(full) if _arrays.is_torch(x) else np.broadcast_to(x, full))
        xb = _x.swap_first(xb.reshape((m, k, d)))
        out = _sampling.Rows(self, batch, op).log_prob(xb)  # [k, m]
        return _x.swap_first(out).reshape((*sample, *batch))

    def sample(self, n: int, seed: int = 0):
        """``n`` samples, ``(n,) + batch_shape + (D,)``, float64, from the generator of
        ``seed`` (the same values on every run and thread count). For torch, reparameterized:
        gradients flow to the means and scales (not through the choice of component)."""
        op = "GaussianMixture.sample"
        if not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"[{op}] n must be a non-negative integer, found {n!r}")
        batch, d = self.batch_shape, self.d
        rows = _sampling.Rows(self, batch, op)
        return _x.swap_first(rows.sample(int(n), int(seed))).reshape((n, *batch, d))

    def __repr__(self) -> str:
        fw = "torch" if self._torch else "numpy"
        return (f"GaussianMixture(batch_shape={self.batch_shape}, C={self.n_components}, "
                f"D={self.d}, {type(self.components).__name__}, {fw})")


def _torch_tensor(x, like: GaussianMixture):
    import torch

    return torch.as_tensor(np.asarray(x), device=like.components.device)


def _log_weights(w, logits: bool):
    if _arrays.is_torch(w):
        import torch

        w = w.to(torch.float64) if w.dtype != torch.float32 else w
        return torch.log_softmax(w, -1) if logits else torch.log(w)
    w = w.astype(np.float64) if w.dtype != np.float32 else w
    if logits:
        return w - _x.lse(w, -1)[..., None]
    with np.errstate(divide="ignore"):
        return np.log(w)


def as_mixture(op: str, side: str, x) -> GaussianMixture:
    """x as a mixture: a GaussianMixture as it is, a Gaussian batch as one component each."""
    if isinstance(x, GaussianMixture):
        return x
    g = _as_gaussian(op, side, x)
    like = g.mean
    # A plain batch's one weight in its own precision: float32 sides give float32 results.
    lw = (like.new_zeros((1,), dtype=like.dtype) if g.is_torch else
          np.zeros(1, np.float32 if g.dtype == _arrays.FLOAT32 else np.float64))
    return _made(_with_batch(g, (*g.batch_shape, 1)), lw, g.is_torch)


def _made(components, log_weights, torch_: bool) -> GaussianMixture:
    """A mixture of arrays already checked (or derived from checked ones)."""
    m = object.__new__(GaussianMixture)
    m.components, m.log_weights, m._torch = components, log_weights, torch_
    return m


# -- helpers ---------------------------------------------------------------------------------
def _weighted_sum(lw, x):
    """sum_a w_a x_a over the last axis, a zero weight contributing 0 whatever x_a is."""
    w = _x.exp(lw)
    if _arrays.is_torch(x):
        import torch

        return torch.where(w > 0, w * x, torch.zeros((), dtype=x.dtype)).sum(-1)
    with np.errstate(invalid="ignore"):
        return np.where(w > 0, w * x, 0.0).sum(-1)


def _rows(g: Gaussian, idx) -> Gaussian:
    """The entries idx (an int64 array; None: all) of g's first batch axis (every array has it:
    g comes from _with_batch)."""
    if idx is None:
        return g
    return g._replace([a[_x.index(idx, _arrays.is_torch(a))] for a in g._spec[1:]])


def _result(x, *mixtures):
    """float32 when every input is float32 (components and weights), else float64."""
    f32 = all(m.components.dtype == _arrays.FLOAT32 and
              _arrays.kind(m.log_weights) == _arrays.FLOAT32 for m in mixtures)
    if not f32:
        return x
    return x.float() if _arrays.is_torch(x) else x.astype(np.float32)


# -- the component-pair blocks -----------------------------------------------------------------
class _Side:
    """One mixture batch as the methods read it: its own batch of mixtures (k of them), its
    components' rows (kc of them, [kc, C]; kc < k when components are shared), and its log
    weights and log-determinants per own mixture, [k, C]."""

    def __init__(self, op: str, m: GaussianMixture):
        self.m, self.op = m, op
        self.batch = m.batch_shape
        self.k = math.prod(self.batch)
        self.c = m.n_components
        own = tuple(m.components.batch_shape[:-1])
        self.kc = math.prod(own)
        self.g = _with_batch(m.components, (self.kc, self.c))
        # The component row of each own mixture.
        self.rows = _index(own, self.batch)
        lw = _dense.as_float64(m.log_weights)
        shape = (*self.batch, self.c)
        lw = lw.expand(shape) if _arrays.is_torch(lw) else np.broadcast_to(lw, shape)
        self.lw = lw.reshape((self.k, self.c))
        self._cache = {}

    def logdets(self):
        """[k, C]."""
        if "ld" not in self._cache:
            self._cache["ld"] = _gather(_dense.logdet(self.g, self.op), self.rows)
        return self._cache["ld"]

    def self_block(self, kind: str, zero_means: bool = False):
        """kind between the components of each own mixture, [k, C, C] (exact 0 diagonal)."""
        key = (kind, zero_means)
        if key not in self._cache:
            g = _zero_mean(self.g) if zero_means else self.g
            if self.kc == 1:
                m = _engine_pairwise(kind, _with_batch(g, (self.c,)), None)[None]
            else:  # every component row against itself, row by row over [kc, C, C]
                m = _dense.as_float64(divergence(_with_batch(g, (self.kc, self.c, 1)),
                                                 _with_batch(g, (self.kc, 1, self.c)), kind))
            if self.kc == 1 and self.k > 1:
                m = m.expand((self.k, self.c, self.c)) if _arrays.is_torch(m) else \
                    np.broadcast_to(m, (self.k, self.c, self.c))
                self._cache[key] = m
            else:
                self._cache[key] = _gather(m, self.rows)
        return self._cache[key]

    def core(self):
        """-2 B + beta within each own mixture, [k, C, C] (the module docstring)."""
        if "core" not in self._cache:
            self._cache["core"] = (-2.0 * self.self_block("bhattacharyya")
                                   + self.self_block("bhattacharyya", zero_means=True))
        return self._cache["core"]


def _engine_pairwise(kind, p, q):
    if kind == "kl":
        return _dense.as_float64(pairwise_kl(p, q))
    return _dense.as_float64(pairwise(p, q, kind))


def _index(own: tuple, batch: tuple):
    """The entry of `own` (a batch shape broadcasting to `batch`) of each entry of `batch`, as
    an int64 array; None when they are the same (no gather: decided from the shapes alone, so
    that torch.compile traces no data-dependent branch)."""
    own, batch = tuple(own), tuple(batch)
    if own == batch:
        return None
    return np.broadcast_to(np.arange(math.prod(own)).reshape(own), batch).reshape(-1)


def _compose(inner, outer):
    """The index of an index: inner[outer], either None meaning the identity."""
    if outer is None:
        return inner
    if inner is None:
        return outer
    return inner[outer]


def _gather(x, idx):
    """x[idx] along the first axis; x itself for idx None (the identity)."""
    if idx is None:
        return x
    return x[_x.index(idx, _arrays.is_torch(x))]


class _Pairs:
    """The mixtures f and h with their batches broadcast to B (n = prod(B) pairs of mixtures):
    each side's own terms ([k, ...], gathered to [n, ...] by `fi` and `hi` after reduction) and
    the cross blocks between f's and h's components, [n, C, K]."""

    def __init__(self, op: str, f: GaussianMixture, h: GaussianMixture, same: bool):
        self.op, self.same = op, same
        self.f, self.h = f, h
        self.F, self.H = _Side(op, f), _Side(op, h)
        if same:
            self.H = self.F
        self.batch = tuple(np.broadcast_shapes(f.batch_shape, h.batch_shape))
        self.n = math.prod(self.batch)
        # The own mixture of f and of h of each pair.
        self.fi = _index(f.batch_shape, self.batch)
        self.hi = _index(h.batch_shape, self.batch)
        self._cache = {}

    def to_pairs(self, x, side: str):
        """An own term of f or h, [k, ...], as [n, ...]."""
        return _gather(x, self.fi if side == "f" else self.hi)

    def cross(self, kind: str, zero_means: bool = False):
        """kind(f_a, h_b) for every pair of mixtures, [n, C, K]."""
        key = (kind, zero_means)
        if key in self._cache:
            return self._cache[key]
        F, H = self.F, self.H
        if self.same:
            out = self.to_pairs(F.self_block(kind, zero_means), "f")
        else:
            gf = _zero_mean(F.g) if zero_means else F.g
            gh = _zero_mean(H.g) if zero_means else H.g
            # The component rows of each pair, on each side (None: pair i is row i).
            rf, rh = _compose(F.rows, self.fi), _compose(H.rows, self.hi)
            if F.kc * H.kc <= 2 * self.n:
                rf = np.arange(F.kc) if rf is None else rf
                rh = np.arange(H.kc) if rh is None else rh
                # Every component row against every other is (nearly) needed: one all-pairs
                # call, [kc_f C, kc_h K], then each pair's block taken from it.
                m = _engine_pairwise(kind, _with_batch(gf, (F.kc * F.c,)),
                                     _with_batch(gh, (H.kc * H.c,)))
                m = m.reshape((F.kc, F.c, H.kc, H.c))
                t = _arrays.is_torch(m)
                out = m[_x.index(rf, t), :, _x.index(rh, t), :]
            else:  # each pair's own block, row by row over [n, C, K]
                left = _with_batch(_rows(gf, rf), (self.n, F.c, 1))
                right = _with_batch(_rows(gh, rh), (self.n, 1, H.c))
                out = _dense.as_float64(divergence(left, right, kind))
        self._cache[key] = out
        return out

    def cross_core(self):
        """-2 B + beta between f's and h's components, [n, C, K]."""
        return -2.0 * self.cross("bhattacharyya") + self.cross("bhattacharyya", zero_means=True)

    def shaped(self, x):
        """[n, ...] as batch + (...)."""
        return x.reshape((*self.batch, *x.shape[1:]))


def _zero_mean(g: Gaussian) -> Gaussian:
    m = g._spec[1]
    zero = m.detach().new_zeros(m.shape) if _arrays.is_torch(m) else np.zeros(m.shape, m.dtype)
    return g._replace([zero, *g._spec[2:]])


def _jensen_self(P: _Pairs):
    """J_a = LSE_a'(lw_a' - 2 B(f_a, f_a') + beta + (l_a - l_a') / 4) per component a of f:
    log int f_a f + H(f_a) - c, [n, C]."""
    F = P.F
    ld = F.logdets()
    x = F.lw[:, None, :] + F.core() + 0.25 * (ld[:, :, None] - ld[:, None, :])
    return P.to_pairs(_x.lse(x, -1), "f")


def _jensen_cross(P: _Pairs):
    """J_a = LSE_b(log pi_b - 2 B(f_a, g_b) + beta + (l_a - l_b) / 4): log int f_a g + H(f_a)
    - c, [n, C]."""
    lf, lh = P.to_pairs(P.F.logdets(), "f"), P.to_pairs(P.H.logdets(), "h")
    x = P.to_pairs(P.H.lw, "h")[:, None, :] + P.cross_core() + 0.25 * (lf[:, :, None]
                                                                        - lh[:, None, :])
    return _x.lse(x, -1)


def _variational_self(P: _Pairs):
    """LSE_a'(lw_a' - KL(f_a || f_a')) per component a of f, [n, C]."""
    return P.to_pairs(_x.lse(P.F.lw[:, None, :] - P.F.self_block("kl"), -1), "f")


def _variational_cross(P: _Pairs):
    """LSE_b(log pi_b - KL(f_a || g_b)) per component a of f, [n, C]."""
    return _x.lse(P.to_pairs(P.H.lw, "h")[:, None, :] - P.cross("kl"), -1)


def _one_gaussian_against_a_prior(op, f, g, method):
    """A training step's shape, f a plain Gaussian batch and g one mixture shared by all: the
    KL-based methods are then -log sum_b pi_b exp(-KL(f || g_b)) (or matched's minimum), one
    pairwise_kl call and a log-sum-exp. None when f, g are not of that shape."""
    if (isinstance(f, GaussianMixture) or not isinstance(g, GaussianMixture) or g.batch_shape
            or method not in ("variational", "upper_bound", "matched")):
        return None
    f = _as_gaussian(op, "f", f)
    if f.d != g.d:
        return None  # _run says why
    kl = _dense.as_float64(pairwise_kl(f, _with_batch(g.components, (g.n_components,))))
    lw = _dense.as_float64(g.log_weights)
    if method == "matched":
        cost = kl - lw
        out = cost.min(-1).values if _arrays.is_torch(cost) else cost.min(-1)
    else:
        out = -_x.lse(lw - kl, -1)
    if method == "upper_bound":
        out = _x.clamp_min(out, 0.0)
    return _result(out, g) if f.dtype == _arrays.FLOAT32 else out


_BLOCK_BUDGET = 1 << 30  # bytes of [n, C, K] blocks per step without a memory_budget
_BLOCKS_PER_PAIR = 8  # the [C, K] float64 blocks of one pair alive at once, at most


def _budget(op: str, memory_budget, default: int) -> int:
    """memory_budget in bytes (None or 0: `default`)."""
    if memory_budget is not None and (not isinstance(memory_budget, (int, np.integer))
                                      or memory_budget < 0):
        raise ValueError(f"[{op}] memory_budget must be a number of bytes >= 0, found "
                         f"{memory_budget!r}")
    return default if not memory_budget else int(memory_budget)


def _validate(op: str, mixtures: dict) -> None:
    """Each mixture's components checked as every operation checks a batch, by one row-wise
    call (O(C), where a pairs call within a mixture would be O(C^2)); an error is tagged [op]
    and names the mixture (f, g) where the row-wise call says p."""
    for name, m in mixtures.items():
        try:
            kl_standard_normal(m.components)
        except (ValueError, TypeError, RuntimeError) as e:
            e = for_caller(e, op, {"p": m.components})
            message = str(e).replace(f"[{op}] p.", f"[{op}] {name}.", 1)
            if isinstance(e, GaussKLError):
                raise e.reworded(message) from None
            raise type(e)(message) from None


def _run(op: str, f, g, compute, memory_budget):
    """compute(P) -> [n] over the pairs of mixtures of f and g, in slices of the broadcast
    batch's first axis whose [n, C, K] blocks stay within memory_budget (1 GiB without one):
    all pairs of N and M mixtures ([N, 1] against [1, M]) are then N / slices all-pairs calls.
    Returns the result of the broadcast batch shape, in the inputs' precision."""
    f0, g0 = f, g
    f, g = as_mixture(op, "f", f), as_mixture(op, "g", g)
    if f.d != g.d:
        raise ValueError(f"[{op}] f and g must have the same dimension, found D = {f.d} and "
                         f"D = {g.d}")
    budget = _budget(op, memory_budget, _BLOCK_BUDGET)
    same = f0 is g0
    batch = tuple(np.broadcast_shapes(f.batch_shape, g.batch_shape))
    per_pair = f.n_components * g.n_components * 8 * _BLOCKS_PER_PAIR
    if not batch or batch[0] == 1 or math.prod(batch) * per_pair <= budget:
        P = _Pairs(op, f, g, same)
        return _result(P.shaped(compute(P)), f, g)
    rows = max(1, budget // (per_pair * math.prod(batch[1:])))
    parts = []
    for i0 in range(0, batch[0], rows):
        i1 = min(batch[0], i0 + rows)
        fs = _slice_first(f, len(batch), i0, i1)
        P = _Pairs(op, fs, fs if same else _slice_first(g, len(batch), i0, i1), same)
        parts.append(P.shaped(compute(P)))
    return _result(_x.cat(parts), f, g)


def _slice_first(m: GaussianMixture, ndim: int, i0: int, i1: int) -> GaussianMixture:
    """The mixtures i0:i1 along the first of `ndim` batch axes (m itself where m is shared
    along it)."""
    own = (1,) * (ndim - len(m.batch_shape)) + tuple(m.batch_shape)
    if own[0] == 1:
        return m
    c = m.n_components
    comps = _broadcast(m.components, (*own, c))
    lw = m.log_weights
    lw = lw.expand((*own, c)) if _arrays.is_torch(lw) else np.broadcast_to(lw, (*own, c))
    return _made(comps._replace([a[i0:i1] for a in comps._spec[1:]]), lw[i0:i1], m._torch)




def _lower(P: _Pairs):
    c = 0.5 * P.f.d * (1.0 - math.log(2.0))
    lower = _weighted_sum(P.to_pairs(P.F.lw, "f"), _variational_self(P) - c - _jensen_cross(P))
    return _x.clamp_min(lower, 0.0)


def _upper(P: _Pairs):
    if P.f.n_components == 1:
        entropy_side = 0.0  # H(f) is its component's: min(c + J, 0) = min(c, 0) = 0
    else:
        c = 0.5 * P.f.d * (1.0 - math.log(2.0))
        entropy_side = _x.minimum(_weighted_sum(P.to_pairs(P.F.lw, "f"), c + _jensen_self(P)), 0.0)
    cross = _weighted_sum(P.to_pairs(P.F.lw, "f"), _variational_cross(P))
    return _x.clamp_min(entropy_side - cross, 0.0)


def mixture_kl_bounds(f, g, *, memory_budget: int | None = None):
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
    both = _run(op, f, g, lambda P: _x.stack([_lower(P), _upper(P)], -1), memory_budget)
    return both[..., 0], both[..., 1]


_METHODS = ("variational", "upper_bound", "lower_bound", "product", "matched", "unscented")


def mixture_kl(f, g, method: str = "variational", *, memory_budget: int | None = None):
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
    * ``"unscented"`` (Goldberger et al. 2003): ``sum_a w_a / (2D) sum_k log(f(x_ak) /
      g(x_ak))`` at the 2D sigma points ``x_ak = mu_a +- sqrt(D) L_a e_k`` of each component
      (L_a L_a' = Sigma_a); exact for single Gaussians.

    ``f``, ``g``: GaussianMixture or plain Gaussian batches, any families, NumPy or torch
    (gradients flow, except through matched's choice of m). All pairs of two batches of
    mixtures: broadcast them, ``[N, 1]`` against ``[1, M]``. ``memory_budget``: the bytes of
    component-pair blocks held at once (1 GiB without one); larger batches are computed in
    slices of their first axis, with the same values.
    """
    op = "mixture_kl"
    if method not in _METHODS:
        raise ValueError(f"[{op}] method must be one of {', '.join(_METHODS)}, found {method!r}")
    fast = _one_gaussian_against_a_prior(op, f, g, method)
    if fast is not None:
        return fast
    if method == "unscented":
        f, g = as_mixture(op, "f", f), as_mixture(op, "g", g)
        if f.is_torch != g.is_torch:
            f, g = (_as_torch(f), g) if g.is_torch else (f, _as_torch(g))
        _validate(op, {"f": f, "g": g})
        batch = tuple(np.broadcast_shapes(f.batch_shape, g.batch_shape))
        return _result(_sampling.unscented(f, g, batch, op).reshape(batch), f, g)
    return _run(op, f, g, lambda P: _kl_method(P, method), memory_budget)


def _kl_method(P: _Pairs, method: str):
    if method in ("upper_bound", "lower_bound"):
        out = _lower(P) if method == "lower_bound" else _upper(P)
    elif method == "variational":
        out = _weighted_sum(P.to_pairs(P.F.lw, "f"), _variational_self(P) - _variational_cross(P))
    elif method == "product":
        F, H = P.F, P.H
        # The same operations in the same order on both sides: f is g gives exactly 0.
        own = P.to_pairs(_x.lse((F.lw - 0.25 * F.logdets())[:, None, :] + F.core(), -1), "f")
        cross = _x.lse(P.to_pairs(H.lw - 0.25 * H.logdets(), "h")[:, None, :] + P.cross_core(), -1)
        out = _weighted_sum(P.to_pairs(P.F.lw, "f"), own - cross)
    else:
        cost = P.cross("kl") - P.to_pairs(P.H.lw, "h")[:, None, :]
        m = cost.argmin(-1)
        if _arrays.is_torch(cost):
            picked = cost.gather(-1, m[..., None]).squeeze(-1)
        else:
            picked = np.take_along_axis(cost, m[..., None], -1)[..., 0]
        out = _weighted_sum(P.to_pairs(P.F.lw, "f"), picked + P.to_pairs(P.F.lw, "f"))
    return out


def mixture_kl_mc(f, g, samples: int = 10_000, seed: int = 0, *,
                  memory_budget: int | None = None):
    """A Monte Carlo estimate of KL(f || g) between Gaussian mixtures and its standard error:
    ``(estimate, standard_error)``, each of the mixtures' broadcast batch shape, float64.

    Stratified by f's components with a proportional allocation: component a gets ``max(2,
    ceil(samples w_a))`` samples, the estimate is ``sum_a w_a mean(log f(x) - log g(x) | x ~
    f_a)`` (unbiased) and its variance ``sum_a w_a^2 var_a / m_a``, at most plain sampling's
    for as many samples (up to the rounding of the allocation). The samples come in blocks of
    1,024 of one component, each from the generator of ``(seed, block, component)``, so that
    results are the same on every run, for every thread count and ``memory_budget`` (bytes of
    temporaries per step, 256 MiB by default). For torch, reparameterized: gradients flow to
    means, scales and weights.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> p = gk.DiagGaussian(np.zeros(2), std=np.ones(2))
    >>> q = gk.DiagGaussian(np.ones(2), std=np.ones(2))
    >>> est, se = gk.mixture_kl_mc(p, q, samples=100_000)
    >>> bool(abs(est - gk.kl(p, q)) < 5 * se)       # KL = 1
    True
    """
    op = "mixture_kl_mc"
    if not isinstance(samples, (int, np.integer)) or samples < 2:
        raise ValueError(f"[{op}] samples must be an integer >= 2, found {samples!r}")
    budget = _budget(op, memory_budget, 256 << 20)
    f, g = as_mixture(op, "f", f), as_mixture(op, "g", g)
    if f.d != g.d:
        raise ValueError(f"[{op}] f and g must have the same dimension, found D = {f.d} and "
                         f"D = {g.d}")
    if f.is_torch != g.is_torch:
        f, g = (_as_torch(f), g) if g.is_torch else (f, _as_torch(g))
    _validate(op, {"f": f, "g": g})
    batch = tuple(np.broadcast_shapes(f.batch_shape, g.batch_shape))
    est, se = _sampling.monte_carlo(f, g, batch, int(samples), int(seed), budget, op)
    return est.reshape(batch), se.reshape(batch)


def _as_torch(m: GaussianMixture) -> GaussianMixture:
    import torch

    g = m.components
    return _made(g._replace([torch.as_tensor(np.asarray(a)) for a in g._spec[1:]]),
                 torch.as_tensor(np.asarray(m.log_weights)), True)


def reduce_mixture(f, components: int | None = None, *, method: str = "runnalls",
                   threshold: float | None = None, diagonal: bool = False):
    """f reduced by greedy moment-preserving merges to ``components`` components, or until the
    least merge cost exceeds ``threshold`` (or both: whichever comes first).

    ``method``: ``"runnalls"`` (Runnalls 2007: the pair with the least upper bound on the KL
    increase), ``"salmond"`` (Salmond 1990: the least weighted Mahalanobis distance under the
    mixture's covariance), ``"west"`` (West 1993: the least-weight component into its nearest).
    Every merge keeps the pair's weight, mean and covariance with the spread of the means, so
    the mixture's mean and covariance are preserved to rounding. Costs are updated lazily (one
    row per merge): C = 10,000 to 100 takes 2-28 s. docs/mixtures.md has the costs.

    Returns a GaussianMixture of the same batch shape with ``FullGaussian`` (``covariance``)
    components: a merge of two diagonal components has off-diagonal spread. ``diagonal=True``
    (diagonal components only) keeps ``DiagGaussian`` (``var``) components and merges the
    variances alone; then only the diagonal of the covariance is preserved. float64, NumPy
    (torch in, torch out; no gradients). A batch of mixtures needs ``components`` (each reduced
    to the same number) and no ``threshold``.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> comps = gk.DiagGaussian(np.array([[0.0], [0.1], [5.0]]), std=np.ones((3, 1)))
    >>> r = gk.reduce_mixture(gk.GaussianMixture(comps, weights=np.ones(3) / 3), 2)
    >>> r.weights.round(3), r.components.mean.round(3)      # the two near ones merged
    (array([0.667, 0.333]), array([[0.05],
           [5.  ]]))
    >>> f = gk.GaussianMixture(comps, weights=np.ones(3) / 3)
    >>> bool(np.allclose(r.covariance, f.covariance))      # the moments preserved
    True
    """
    from gausskl import _mixture_reduce

    op = "reduce_mixture"
    m = as_mixture(op, "f", f)
    _validate(op, {"f": m})
    if method not in _mixture_reduce.METHODS:
        raise ValueError(f"[{op}] method must be one of {', '.join(_mixture_reduce.METHODS)}, "
                         f"found {method!r}")
    if threshold is not None and not (isinstance(threshold, (int, float)) and
                                      math.isfinite(threshold) and threshold >= 0):
        raise ValueError(f"[{op}] threshold must be a finite number >= 0, found {threshold!r}")
    batch, c = m.batch_shape, m.n_components
    if batch and (components is None or threshold is not None):
        raise ValueError(f"[{op}] a batch of mixtures (batch_shape {batch}) is reduced to one "
                         f"number of components: give components= and no threshold=")
    if components is not None and (not isinstance(components, (int, np.integer))
                                   or not 1 <= components <= c):
        raise ValueError(f"[{op}] components must be an integer in 1..C = {c}, found "
                         f"{components!r}")
    if diagonal and m.components.family != "diag":
        raise ValueError(f"[{op}] diagonal=True needs diagonal components, found "
                         f"{type(m.components).__name__}")
    k = math.prod(batch)
    diag = bool(diagonal)
    g = _with_batch(_broadcast(m.components, (*batch, c)), (k, c))
    mu = _to_numpy(g.mean)
    S = _to_numpy(_dense.variances(g, op) if diag else _dense.covariance(g, op))
    lw = _to_numpy(m.log_weights)
    w = np.exp(np.broadcast_to(lw, (*batch, c)).reshape((k, c)))
    out = [_mixture_reduce.reduce_moments(w[r], mu[r], S[r], components=components,
                                          threshold=threshold, method=method, op=op)
           for r in range(k)]
    kk = out[0][0].shape[0]
    W = np.stack([o[0] for o in out]).reshape((*batch, kk))
    M = np.stack([o[1] for o in out]).reshape((*batch, kk, m.d))
    P = np.stack([o[2] for o in out]).reshape((*batch, kk, *out[0][2].shape[1:]))
    if m.is_torch:
        import torch

        W, M, P = (torch.as_tensor(a) for a in (W, M, P))
    from gausskl._distributions import DiagGaussian, FullGaussian

    comps = DiagGaussian(M, var=P) if diag else FullGaussian(M, covariance=P)
    return GaussianMixture(comps, weights=W / W.sum(-1, keepdims=True) if not m.is_torch
                           else W / W.sum(-1, keepdim=True))


def _to_numpy(x):
    if _arrays.is_torch(x):
        return x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


_KINDS = ("cauchy_schwarz", "l2")


def mixture_divergence(f, g, kind: str = "cauchy_schwarz", *,
                       memory_budget: int | None = None):
    """Closed-form divergences between Gaussian mixtures, of their broadcast batch shape.

    * ``"cauchy_schwarz"`` (Kampa, Hasanbelliu & Principe 2011): ``-log int f g + 1/2 log int
      f^2 + 1/2 log int g^2``, >= 0, 0 when f = g.
    * ``"l2"``: the integrated squared difference ``int (f - g)^2`` (its absolute error is
      rounding of ``int f^2 + int g^2``).

    Every overlap is a log-sum-exp of ``-2 B + beta - (l_a + l_b) / 4`` terms (the module
    docstring; the ``D/2 log(4 pi)`` constants cancel in Cauchy-Schwarz), so nothing underflows
    at large D. ``memory_budget`` as for ``gk.mixture_kl``.
    """
    op = "mixture_divergence"
    if kind not in _KINDS:
        raise ValueError(f"[{op}] kind must be one of {', '.join(_KINDS)}, found {kind!r}")
    return _run(op, f, g, lambda P: _closed_form(P, kind), memory_budget)


def _closed_form(P: _Pairs, kind: str):
    def own(S):  # log int s^2 - const per own mixture, [k]
        ld = S.logdets()
        x = S.lw[:, :, None] + S.lw[:, None, :] + S.core() - 0.25 * (ld[:, :, None]
                                                                      + ld[:, None, :])
        return _x.lse(x.reshape((S.k, -1)), -1)

    ff, hh = P.to_pairs(own(P.F), "f"), P.to_pairs(own(P.H), "h")
    if P.same:
        fh = ff
    else:
        lf, lh = P.to_pairs(P.F.lw - 0.25 * P.F.logdets(), "f"), P.to_pairs(
            P.H.lw - 0.25 * P.H.logdets(), "h")
        fh = _x.lse((lf[:, :, None] + lh[:, None, :] + P.cross_core()).reshape((P.n, -1)), -1)
    if kind == "cauchy_schwarz":
        out = _x.clamp_min(0.5 * (ff + hh) - fh, 0.0)
    else:
        const = -0.5 * P.f.d * _LOG_4PI
        # Scaled by the largest overlap so that nothing underflows before the difference.
        top = _x.maximum(_x.maximum(ff, hh), fh)
        top = top.detach() if _arrays.is_torch(top) else top
        out = (_x.exp(ff - top) + _x.exp(hh - top) - 2.0 * _x.exp(fh - top)) * _x.exp(top + const)
        out = _x.clamp_min(out, 0.0)
    return out



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
