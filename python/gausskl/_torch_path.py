"""The same algorithms in torch operations, for tensors the C++ library cannot read (CUDA, MPS)
and for gradients (every function here is differentiable by torch.autograd).

* Validation: the library's rules and messages ("[op] what, where"), checked with torch ops.
* Row-wise KL: per pair, the diagonal/diagonal case in the expm1 form (exactly 0 at p = q);
  otherwise through triangular solves, Woodbury for low rank (never densified).
* Pairwise KL, certified as the library's (tolerance, memory_budget): diagonal pairs by the
  centred GEMM form (2 KL_ij = left_i . right_j + c_j - s_i) with its rounding bound alongside,
  the entries whose bound is too wide recomputed by the direct form; other families by the direct
  form for every pair. In row blocks within the budget; never an [N, M, D] intermediate (_Pairs).
* knn: the certified blocks, candidates re-scored by the direct form, each row sorted stably
  (ties to the lower j) and cut to k.
* Batch shapes: every batch is flattened to one axis of N rows (expand and reshape, so gradients
  flow back to the arrays as given), and results take the broadcast batch shape.
* Jitter: as in the library, a covariance or precision matrix whose Cholesky fails is factored
  again with jitter on its diagonal (the others are left alone), and counted.

Arithmetic is in float64 (as in the library), except on MPS, which has no float64: there it is
float32 after centring.
"""

from __future__ import annotations

import math

import torch

from gausskl import _ext
from gausskl._batches import flat as _flat
from gausskl._errors import InputError
from gausskl._jitter import with_hint

# Rows of p per pairwise block in knn_kl: the block is [rows, M], kept under this many bytes.
KNN_BLOCK_BYTES = 64 << 20
# Without a memory budget, all-pairs blocks of rows of this many bytes: the library's
# (gausskl/limits.hpp default_block_bytes).
DEFAULT_BLOCK_BYTES = _ext.DEFAULT_BLOCK_BYTES
# The direct form's pairs are recomputed in chunks of at most this many bytes of temporaries.
DIRECT_CHUNK_BYTES = 16 << 20

# The variances allowed, and the library's words for them ("[1e-300, 1e300]").
MIN_VARIANCE = _ext.MIN_VARIANCE
MAX_VARIANCE = _ext.MAX_VARIANCE
VARIANCE_RANGE = _ext.VARIANCE_RANGE


def compute_dtype(device: torch.device) -> torch.dtype:
    return torch.float32 if device.type == "mps" else torch.float64


def fail(op: str, what: str, **data):
    """The library's InputError: "[op] what", then "; hint" if data gives one."""
    hint = data.get("hint")
    raise InputError(f"[{op}] {what}" + (f"; {hint}" if hint else ""), op=op,
                     kind="invalid_input", **data)


# The library's words for its input rules ({field}s to fill, src/util/rules.hpp).
RULES = _ext.RULES


def rule(op: str, key: str, **fields):
    """The library's InputError for the rule `key` (the range field filled in)."""
    fail(op, RULES[key].format(range=VARIANCE_RANGE, **fields))


def _scalar(t: torch.Tensor, index) -> str:
    """The value at index as the library prints one of its type."""
    v = t[tuple(index)].detach().cpu()
    return _ext.show(float(v), v.dtype in (torch.float32, torch.float16, torch.bfloat16))


def _first(mask: torch.Tensor):
    """The first index (row-major) where mask is True, or None."""
    if not bool(mask.any()):
        return None
    return [int(i) for i in torch.nonzero(mask)[0].tolist()]


def _at2(ix) -> str:
    return RULES["at2"].format(row=ix[0], column=ix[1])


def _at3(ix) -> str:
    return RULES["at3"].format(index=ix[0], row=ix[1], column=ix[2])


# Each diagonal parameterization's variance and log variance of its scale s.
_VARIANCE = {"std": lambda s: s * s, "var": lambda s: s, "logvar": torch.exp,
             "precision": lambda s: 1.0 / s}
_LOG_VARIANCE = {"std": lambda s: 2.0 * torch.log(s), "var": torch.log, "logvar": lambda s: s,
                 "precision": lambda s: -torch.log(s)}


def _implied_variance(param: str, x: torch.Tensor) -> torch.Tensor:
    return _VARIANCE[param](x.to(compute_dtype(x.device)))


def validate(op: str, side: str, g) -> None:
    """The library's input rules for one batch, in torch ops (see src/core/validate.cpp)."""
    a = g.arrays
    mean = a["mean"]
    if mean.shape[1] < 1:
        rule(op, "empty_d", side=side)
    bad = _first(~torch.isfinite(mean))
    if bad:
        rule(op, "finite", name=f"{side}.mean", value=_scalar(mean, bad), where=_at2(bad))
    _VALIDATE[g.family](op, side, g, a)


def _validate_diag(op: str, side: str, g, a: dict) -> None:
    s = a["scale"]
    name = f"{side}.scale ({g.param})"
    if g.param == "logvar":
        bad = _first(~torch.isfinite(s))
        if bad:
            rule(op, "finite", name=name, value=_scalar(s, bad), where=_at2(bad))
    else:
        bad = _first(~(torch.isfinite(s) & (s > 0)))
        if bad:
            rule(op, "positive_finite", name=name, value=_scalar(s, bad), where=_at2(bad))
    v = _implied_variance(g.param, s)
    bad = _first(~((v >= MIN_VARIANCE) & (v <= MAX_VARIANCE)))
    if bad:
        rule(op, "variance_range", name=name, value=_scalar(s, bad), where=_at2(bad))


def _validate_full(op: str, side: str, g, a: dict) -> None:
    if g.param == "packed_scale_tril":
        _validate_packed(op, side, g, a["scale"], a["mean"].shape[1])
        return
    s = a["scale"]
    name = f"{side}.scale ({g.param})"
    bad = _first(~torch.isfinite(s))
    if bad:
        rule(op, "finite", name=name, value=_scalar(s, bad), where=_at3(bad))
    if g.param == "scale_tril":
        diag = torch.diagonal(s, dim1=-2, dim2=-1)
        v = diag.to(compute_dtype(s.device)) ** 2
        bad = _first(~((diag > 0) & (v >= MIN_VARIANCE) & (v <= MAX_VARIANCE)))
        if bad:
            rule(op, "tril_diagonal", name=name, value=_scalar(diag, bad),
                 where=_at3([bad[0], bad[1], bad[1]]))
        bad = _first(torch.triu(s, diagonal=1) != 0)
        if bad:
            rule(op, "lower_triangular", name=name, value=_scalar(s, bad), where=_at3(bad))
    else:
        eps = torch.finfo(s.dtype if s.dtype == torch.float64 else torch.float32).eps
        x = s.to(compute_dtype(s.device))
        xt = x.transpose(-1, -2)
        d = torch.diagonal(x, dim1=-2, dim2=-1).abs()
        scale = torch.maximum(torch.maximum(x.abs(), xt.abs()),
                              torch.sqrt(d[..., :, None] * d[..., None, :]))
        asym = ((x - xt).abs() > math.sqrt(eps) * scale) & torch.tril(
            torch.ones_like(x, dtype=torch.bool), diagonal=-1)
        bad = _first(asym)
        if bad:
            n, r, c = bad
            rule(op, "symmetric", name=name, value=_scalar(s, bad),
                 other=_scalar(s, [n, c, r]), where=_at3(bad))


def _validate_low_rank(op: str, side: str, g, a: dict) -> None:
    w, dg = a["cov_factor"], a["cov_diag"]
    bad = _first(~torch.isfinite(w))
    if bad:
        rule(op, "finite", name=f"{side}.cov_factor", value=_scalar(w, bad), where=_at3(bad))
    # cov_diag is a variance: the rules of a diagonal "var" (src/core/validate.cpp).
    bad = _first(~(torch.isfinite(dg) & (dg > 0)))
    if bad:
        rule(op, "positive_finite", name=f"{side}.cov_diag", value=_scalar(dg, bad),
             where=_at2(bad))
    x = dg.to(compute_dtype(dg.device))
    bad = _first(~((x >= MIN_VARIANCE) & (x <= MAX_VARIANCE)))
    if bad:
        rule(op, "variance_range", name=f"{side}.cov_diag", value=_scalar(dg, bad),
             where=_at2(bad))


# Each family's own rules, after the mean's.
_VALIDATE = {"diag": _validate_diag, "full": _validate_full, "low_rank": _validate_low_rank}


def _packed_entry(c: int):
    """(r, c) of L at column c of a packed row (torch.tril_indices order)."""
    r = int((math.isqrt(8 * c + 1) - 1) // 2)
    return r, c - r * (r + 1) // 2


def _validate_packed(op: str, side: str, g, s: torch.Tensor, d: int) -> None:
    """The library's rules for packed_scale_tril (src/core/validate.cpp), in its order (the
    first distribution that breaks one; in it, finiteness before the diagonal) and its words."""
    name = f"{side}.scale (packed_scale_tril)"

    def where(i, c):
        r, cc = _packed_entry(c)
        return RULES["at_packed"].format(row=i, column=c, r=r, c=cc)

    cols = torch.tensor([r * (r + 1) // 2 + r for r in range(d)], device=s.device)
    finite = torch.isfinite(s)
    x = s.index_select(-1, cols).to(compute_dtype(s.device))
    if g.log_diagonal:
        v = torch.exp(2.0 * x)
        diag_ok = (v >= MIN_VARIANCE) & (v <= MAX_VARIANCE)
    else:
        diag_ok = (x > 0) & (x * x >= MIN_VARIANCE) & (x * x <= MAX_VARIANCE)
    bad = _first(~finite.all(-1) | ~diag_ok.all(-1))
    if not bad:
        return
    i = bad[0]
    row = _first(~finite[i])
    if row:
        rule(op, "finite", name=name, value=_scalar(s, [i, row[0]]), where=where(i, row[0]))
    c = int(cols[_first(~diag_ok[i])[0]])
    if g.log_diagonal:
        rule(op, "log_diagonal", name=name, value=_scalar(s, [i, c]), where=where(i, c))
    fail(op, RULES["tril_diagonal"].format(name=name, value=_scalar(s, [i, c]), where=where(i, c),
                                           range=VARIANCE_RANGE), side=side, index=i,
         hint=_ext.LOG_DIAGONAL_HINT, hint_option="log_diagonal")


def _cholesky(op: str, side: str, g, m: torch.Tensor, jitter) -> torch.Tensor:
    L, info = torch.linalg.cholesky_ex(m)
    failed = info != 0
    if jitter is not None and jitter.eps > 0 and bool(failed.any()):
        # All of them factored again, the failed ones with eps on the diagonal: the first
        # factors are then unused, so no gradient goes through a failed factorization.
        eye = torch.eye(m.shape[-1], dtype=m.dtype, device=m.device)
        m = m + (jitter.eps * failed.to(m.dtype))[..., None, None] * eye
        L, info = torch.linalg.cholesky_ex(m)
        jitter.add(side, int(failed.sum()))
    bad = _first(info != 0)
    if bad:
        raise with_hint(_ext.not_positive_definite_error(
            op, side, g.param, bad[0], int(info[tuple(bad)]) - 1, "not positive"))
    return L


def _symmetric_from_lower(m: torch.Tensor) -> torch.Tensor:
    """The symmetric matrix the library reads: the lower triangle, mirrored. Its gradient is
    that of (m + m^T) / 2, symmetric as torch's own for covariance matrices, so that a step of
    gradient descent keeps the matrix symmetric."""
    lower = torch.tril(m) + torch.tril(m, diagonal=-1).transpose(-1, -2)
    if not m.requires_grad:
        return lower
    sym = 0.5 * (m + m.transpose(-1, -2))
    return lower.detach() + (sym - sym.detach())


def unpack_tril(e: torch.Tensor, d: int, log_diagonal: bool) -> torch.Tensor:
    """L [..., D, D] from its packed lower triangle [..., D (D + 1) / 2] (torch.tril_indices
    order), the diagonal exponentiated with log_diagonal."""
    rows, cols = torch.tril_indices(d, d, device=e.device)
    L = e.new_zeros(*e.shape[:-1], d, d)
    L[..., rows, cols] = e
    if log_diagonal:
        diag = torch.diagonal(L, dim1=-2, dim2=-1)
        L = L - torch.diag_embed(diag) + torch.diag_embed(torch.exp(diag))
    return L


class Side:
    """One batch in the forms the formulas need, in the compute dtype, differentiable. jitter:
    the call's gausskl._jitter.Jitter (None: no jitter). Side(...) builds the family's own form
    (_side_class): how this batch, as q, solves with its covariance (quad, quad_diag,
    precision_dense); the common attributes are mean, d, logdet, a2 and F (S = diag(a2) + F F')."""

    kind = None  # how the solves are done: "diag", "tril", "precision", "low_rank"

    def __new__(cls, op: str, side: str, g, dtype: torch.dtype, jitter=None):
        return object.__new__(_side_class(g) if cls is Side else cls)

    def __init__(self, op: str, side: str, g, dtype: torch.dtype, jitter=None):
        self.family = g.family
        self.mean = g.arrays["mean"].to(dtype)
        self.d = self.mean.shape[1]
        self.a2 = None
        self.F = None

    def broadcast(self, own, batch) -> "Side":
        """The same distributions repeated over the broadcast batch (views, not copies): every
        per-distribution tensor, [N_own, ...], becomes [N, ...]."""
        own, batch = tuple(own), tuple(batch)
        if own == batch:
            return self
        n_own, n = math.prod(own), math.prod(batch)
        for name, t in list(vars(self).items()):
            if isinstance(t, torch.Tensor) and t.dim() >= 1 and t.shape[0] == n_own:
                rest = tuple(t.shape[1:])
                # Tuples, not unpacked sizes: own and rest may both be () (one distribution).
                setattr(self, name, t.reshape(own + rest).expand(batch + rest).reshape((n,) + rest))
        return self

    # -- this batch as q: tr(X' T^-1 X) per distribution, and tr(T^-1 diag(a2)) ----------------
    def quad(self, X: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def quad_diag(self, a2: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def precision_dense(self) -> torch.Tensor:
        """T^-1 per distribution, [M, D, D] (pairwise of non-diagonal pairs only)."""
        raise NotImplementedError

    def covariance_dense(self) -> torch.Tensor:
        S = self.F @ self.F.transpose(-1, -2) if self.F is not None else 0.0
        if self.a2 is not None:
            S = S + torch.diag_embed(self.a2)
        return S

    def triangular_factor(self, S: torch.Tensor):
        """(T, upper): a triangular T with T T' = S (S is covariance_dense()); upper says which
        triangle."""
        return torch.linalg.cholesky(S), False


class DiagSide(Side):
    """S = diag(v), from any of the four parameterizations."""

    kind = "diag"

    def __init__(self, op: str, side: str, g, dtype: torch.dtype, jitter=None):
        super().__init__(op, side, g, dtype, jitter)
        s = g.arrays["scale"].to(dtype)
        self.logv, self.v = _LOG_VARIANCE[g.param](s), _VARIANCE[g.param](s)
        self.a2 = self.v
        self.logdet = self.logv.sum(-1)

    def quad(self, X: torch.Tensor) -> torch.Tensor:
        return (X * X / self.v[..., None]).sum((-2, -1))

    def quad_diag(self, a2: torch.Tensor) -> torch.Tensor:
        return (a2 / self.v).sum(-1)

    def precision_dense(self) -> torch.Tensor:
        return torch.diag_embed(1.0 / self.v)


class TrilSide(Side):
    """S = L L', L given (scale_tril, packed) or the Cholesky factor of a covariance."""

    kind = "tril"

    def __init__(self, op: str, side: str, g, dtype: torch.dtype, jitter=None):
        super().__init__(op, side, g, dtype, jitter)
        s = g.arrays["scale"].to(dtype)
        if g.param == "scale_tril":
            self.L = torch.tril(s)
        elif g.param == "packed_scale_tril":
            self.L = unpack_tril(s, self.d, g.log_diagonal)
        else:
            self.L = _cholesky(op, side, g, _symmetric_from_lower(s), jitter)
        self.logdet = 2.0 * torch.log(torch.diagonal(self.L, dim1=-2, dim2=-1)).sum(-1)
        self.F = self.L

    def quad(self, X: torch.Tensor) -> torch.Tensor:
        Y = torch.linalg.solve_triangular(self.L, X, upper=False)
        return (Y * Y).sum((-2, -1))

    def quad_diag(self, a2: torch.Tensor) -> torch.Tensor:
        eye = torch.eye(self.d, dtype=self.L.dtype, device=self.L.device)
        Linv = torch.linalg.solve_triangular(self.L, eye.expand_as(self.L), upper=False)
        return (a2 * (Linv * Linv).sum(-2)).sum(-1)

    def precision_dense(self) -> torch.Tensor:
        return torch.cholesky_inverse(self.L)

    def triangular_factor(self, S: torch.Tensor):
        return self.L, False


class PrecisionSide(Side):
    """S^-1 = LP LP' (a precision matrix, factored); F = LP^-T, so S = F F'."""

    kind = "precision"

    def __init__(self, op: str, side: str, g, dtype: torch.dtype, jitter=None):
        super().__init__(op, side, g, dtype, jitter)
        s = g.arrays["scale"].to(dtype)
        eye = torch.eye(self.d, dtype=dtype, device=s.device)
        self.LP = _cholesky(op, side, g, _symmetric_from_lower(s), jitter)
        self.logdet = -2.0 * torch.log(torch.diagonal(self.LP, dim1=-2, dim2=-1)).sum(-1)
        self.F = torch.linalg.solve_triangular(
            self.LP.transpose(-1, -2), eye.expand_as(self.LP), upper=True)

    def quad(self, X: torch.Tensor) -> torch.Tensor:
        Y = self.LP.transpose(-1, -2) @ X
        return (Y * Y).sum((-2, -1))

    def quad_diag(self, a2: torch.Tensor) -> torch.Tensor:
        return (a2 * (self.LP * self.LP).sum(-1)).sum(-1)

    def precision_dense(self) -> torch.Tensor:
        return self.LP @ self.LP.transpose(-1, -2)

    def triangular_factor(self, S: torch.Tensor):
        return self.F, True  # L_P^-T


class LowRankSide(Side):
    """S = diag(Dg) + W W', solved by Woodbury with the Cholesky factor LC of I + W' Dg^-1 W
    (never densified)."""

    kind = "low_rank"

    def __init__(self, op: str, side: str, g, dtype: torch.dtype, jitter=None):
        super().__init__(op, side, g, dtype, jitter)
        self.W, self.Dg = g.arrays["cov_factor"].to(dtype), g.arrays["cov_diag"].to(dtype)
        r = self.W.shape[-1]
        eye = torch.eye(r, dtype=dtype, device=self.W.device)
        self.DinvW = self.W / self.Dg[..., None]
        C = eye + self.W.transpose(-1, -2) @ self.DinvW
        self.LC = torch.linalg.cholesky(C)  # I + W'D^-1 W is positive definite
        self.logdet = (2.0 * torch.log(torch.diagonal(self.LC, dim1=-2, dim2=-1)).sum(-1)
                       + torch.log(self.Dg).sum(-1))
        self.a2, self.F = self.Dg, self.W

    def quad(self, X: torch.Tensor) -> torch.Tensor:
        Z = torch.linalg.solve_triangular(self.LC, self.DinvW.transpose(-1, -2) @ X, upper=False)
        return (X * X / self.Dg[..., None]).sum((-2, -1)) - (Z * Z).sum((-2, -1))

    def quad_diag(self, a2: torch.Tensor) -> torch.Tensor:
        B = self.W * (torch.sqrt(a2) / self.Dg)[..., None]
        Z = torch.linalg.solve_triangular(self.LC, B.transpose(-1, -2), upper=False)
        return (a2 / self.Dg).sum(-1) - (Z * Z).sum((-2, -1))

    def precision_dense(self) -> torch.Tensor:
        Z = torch.linalg.solve_triangular(self.LC, self.DinvW.transpose(-1, -2), upper=False)
        return torch.diag_embed(1.0 / self.Dg) - Z.transpose(-1, -2) @ Z


# Each family's torch form (gausskl._distributions.FORMS names the families).
_SIDES = {"diag": DiagSide, "full": TrilSide, "low_rank": LowRankSide}


def _side_class(g) -> type:
    # A precision matrix is factored as given: inverting it first would lose its conditioning.
    return PrecisionSide if g.param == "precision_matrix" else _SIDES[g.family]


def _pair_rowwise(P: Side, Q: Side | None) -> torch.Tensor:
    """KL(p_i || q_i) per row (N = 1 broadcasts); Q None is N(0, I)."""
    if Q is None:
        if P.family == "diag":
            # r = log v - log 1: term = mu^2 + expm1(r) - r
            return 0.5 * (P.mean * P.mean + torch.expm1(P.logv) - P.logv).sum(-1)
        tr = (P.a2.sum(-1) if P.a2 is not None else 0.0) + (P.F * P.F).sum((-2, -1))
        return 0.5 * (tr + (P.mean * P.mean).sum(-1) - P.d - P.logdet)
    diff = P.mean - Q.mean
    if P.family == "diag" and Q.family == "diag":
        r = P.logv - Q.logv
        return 0.5 * (diff * diff / Q.v + torch.expm1(r) - r).sum(-1)
    tr = 0.0
    if P.a2 is not None:
        tr = tr + Q.quad_diag(P.a2)
    if P.F is not None:
        tr = tr + Q.quad(P.F)
    maha = Q.quad(diff[..., None])
    two = tr + maha - P.d + Q.logdet - P.logdet
    if P.kind == "low_rank" and Q.kind == "low_rank":
        # Near-duplicates: the terms cancel to round-off (a KL of 1e-16 from terms of ~D); such
        # rows are computed again from the difference of the two distributions.
        with torch.no_grad():
            scale = (tr.abs() + maha.abs() + P.d + Q.logdet.abs() + P.logdet.abs()).detach()
            near = torch.nonzero(two.detach() < NEAR_DUPLICATE * scale)[:, 0]
        if near.numel():
            two = two.index_put((near,), _low_rank_difference(P, Q, near).to(two.dtype))
    # KL >= 0: a negative value is round-off of near-equal terms.
    return _overflowed_to_inf(torch.clamp_min(0.5 * two, 0.0))


# A low-rank pair whose 2 KL is below this fraction of the magnitude of its terms has lost more
# than 6 of its digits to cancellation: _low_rank_difference computes it instead.
NEAR_DUPLICATE = 1e-6


def _low_rank_difference(P: Side, Q: Side, rows: torch.Tensor) -> torch.Tensor:
    """2 KL(p || q) of low-rank rows from their difference, which does not cancel: with
    S_q = D_q + W_q W_q' = L L' and Delta = S_p - S_q = (D_p - D_q) + (A E' + E A') / 2,
    E = W_p - W_q, A = W_p + W_q (each entry small when p ~ q), the eigenvalues l of
    L^-1 Delta L^-T give 2 KL = sum (l - log(1 + l)) + |L^-1 (mu_p - mu_q)|^2, with
    l - log(1 + l) by its series where l is small. Dense D x D, for the few rows that need it."""
    wp, wq, dp, dq = P.W[rows], Q.W[rows], P.Dg[rows], Q.Dg[rows]
    e, a = wp - wq, wp + wq
    delta = torch.diag_embed(dp - dq) + 0.5 * (a @ e.transpose(-1, -2) + e @ a.transpose(-1, -2))
    chol = torch.linalg.cholesky(torch.diag_embed(dq) + wq @ wq.transpose(-1, -2))
    x = torch.linalg.solve_triangular(chol, delta, upper=False)
    s = torch.linalg.solve_triangular(chol, x.transpose(-1, -2), upper=False)
    lam = torch.linalg.eigvalsh(0.5 * (s + s.transpose(-1, -2)))
    small = lam.abs() < 1e-2
    ls = torch.where(small, lam, torch.zeros_like(lam))
    # l^2/2 - l^3/3 + ... - l^9/9: the first omitted term is below 1e-16 of l^2 / 2 here.
    series = sum(((-1) ** k) * ls ** k / k for k in range(2, 10))
    direct = lam - torch.log1p(torch.where(small, torch.zeros_like(lam), lam))
    f = torch.where(small, series, direct)
    diff = (P.mean[rows] - Q.mean[rows])[..., None]
    y = torch.linalg.solve_triangular(chol, diff, upper=False)
    return f.sum(-1) + (y * y).sum((-2, -1))


def _overflowed_to_inf(kl: torch.Tensor) -> torch.Tensor:
    """Inputs are validated finite with bounded log-determinants, so a NaN can only come from a
    solve that overflowed (0 * inf, inf - inf), where the exact value exceeds the largest float:
    inf, as the library gives (cpu/stable.hpp two_kl_of_sum)."""
    return torch.where(torch.isnan(kl), torch.inf, kl)


def broadcast_batches(op: str, p, q) -> tuple:
    """The broadcast batch shape of a row-wise pair, or the library's error."""
    try:
        return torch.broadcast_shapes(p._batch, q._batch)
    except RuntimeError:
        if len(p._batch) <= 1 and len(q._batch) <= 1:
            rule(op, "rows", p=p.n, q=q.n)
        fail(op, f"p and q have batch shapes {p._batch} and {q._batch}, which do not broadcast")


def check_same_d(op: str, p, q):
    if p.d != q.d:
        rule(op, "same_d", p=p.d, q=q.d)


def rowwise_values(p, q=None):
    """KL(p || q) over the broadcast batch (q None: N(0, I)), in torch operations, without
    validation: the gradients of inputs the library has validated."""
    batch = p._batch if q is None else torch.broadcast_shapes(p._batch, q._batch)
    dtype = compute_dtype(p._spec[1].device)
    P = Side("kl", "p", _flat(p), dtype).broadcast(p._batch, batch)
    Q = None if q is None else Side("kl", "q", _flat(q), dtype).broadcast(q._batch, batch)
    return _pair_rowwise(P, Q).reshape(batch)


def run(request):
    """The operation of a gausskl._dispatch.Request in torch operations, validated by the library's
    rules in its order (options, p, q, their dimensions and batches)."""
    from gausskl import _options

    op, p, q, jitter = request.op, request.p, request.q, request.jitter
    _options.check_torch_path(op, jitter, request.tolerance, request.budget)
    out_dtype = request.out_dtype()
    if op == "kl_standard_normal":
        validate(op, "p", _flat(p))
        P = Side(op, "p", _flat(p), compute_dtype(p._spec[1].device), jitter)
        return _pair_rowwise(P, None).to(out_dtype).reshape(p._batch)
    if op == "kl":
        fp, fq = _flat(p), _flat(q)
        validate(op, "p", fp)
        validate(op, "q", fq)
        check_same_d(op, p, q)
        batch = broadcast_batches(op, p, q)
        dtype = compute_dtype(p._spec[1].device)
        P = Side(op, "p", fp, dtype, jitter).broadcast(p._batch, batch)
        Q = Side(op, "q", fq, dtype, jitter).broadcast(q._batch, batch)
        return _pair_rowwise(P, Q).to(out_dtype).reshape(batch)
    fp = _flat(p)
    fq = None if q is None else _flat(q)
    validate(op, "p", fp)
    if fq is not None:
        validate(op, "q", fq)
        check_same_d(op, p, q)
    m_batch = p._batch if q is None else q._batch
    if op == "pairwise_kl":
        out = pairwise(op, fp, fq, out_dtype, jitter, request.tolerance, request.budget)
        return out.reshape(tuple(p._batch) + tuple(m_batch))
    k, exclude_self = request.k, request.exclude_self
    if fq is not None and exclude_self:
        rule(op, "exclude_self")
    m = math.prod(m_batch)
    max_k = m - 1 if exclude_self else m
    if not (1 <= k <= max_k):
        rule(op, "k_range", k=k, bound="M - 1" if exclude_self else "M", max=max_k)
    indices, values = knn(op, fp, fq, k, exclude_self, out_dtype, jitter, request.tolerance,
                         request.budget)
    return indices.reshape(*p._batch, k), values.reshape(*p._batch, k)


def default_tolerance(input_dtype: torch.dtype, dtype: torch.dtype) -> float:
    """The library's default certified error (gausskl/limits.hpp): float64's for float64 inputs
    computed in float64, else float32's (also where the device computes in float32, MPS)."""
    if input_dtype == torch.float64 and dtype == torch.float64:
        return _ext.DEFAULT_TOLERANCE_FLOAT64
    return _ext.DEFAULT_TOLERANCE_FLOAT32


def _pair_bytes(P: Side, Q: Side) -> int:
    """Bytes a pair's direct form takes at once (its batch of solves), for the budget."""
    d = P.d
    if P.family == "diag" and Q.family == "diag":  # 8 gathered rows, 6 temporaries
        return 8 * 14 * d
    r = max((x.W.shape[-1] for x in (P, Q) if x.kind == "low_rank"), default=0)
    return 8 * 8 * (d * d + d * r + d)


def _take(S: Side, index: torch.Tensor) -> Side:
    """The distributions of S at `index` (a 1-d tensor of rows), as a Side of len(index) rows."""
    out = object.__new__(type(S))
    vars(out).update(vars(S))
    n = S.mean.shape[0]
    for name, t in vars(S).items():
        if isinstance(t, torch.Tensor) and t.dim() >= 1 and t.shape[0] == n:
            setattr(out, name, t[index])
    return out


class _Pairs:
    """All pairs KL(p_i || q_j), certified entry by entry (tolerance as the library's
    Options::tolerance, |KL - exact| / (|exact| + 1)), in row blocks within the memory budget.

    Diagonal pairs: the centred GEMM form, 2 KL_ij = left_i . right_j + c_j
    - s_i, with its rounding bound computed alongside from the absolute values of the same terms
    (a second GEMM); entries whose bound exceeds the tolerance are recomputed by the direct form
    (the expm1 form of _pair_rowwise), in chunks of pairs. Other families: the direct form for
    every pair (triangular solves, Woodbury), whose error follows the factors' conditioning rather
    than a bound the GEMM form could certify. Never an [N, M, D] intermediate; never negative;
    KL(p_i || p_i) exactly 0 without q."""

    def __init__(self, op: str, P: Side, Q: Side, self_pairs: bool, tolerance: float,
                 budget: int, input_dtype: torch.dtype):
        self.op, self.P, self.Q, self.self_pairs = op, P, Q, self_pairs
        dtype = P.mean.dtype
        self.tol = tolerance if tolerance > 0 else default_tolerance(input_dtype, dtype)
        self.diag = P.family == "diag" and Q.family == "diag"
        self.n, self.m, d = P.mean.shape[0], Q.mean.shape[0], P.d
        fixed = 0
        if self.diag:
            centre = Q.mean.detach().mean(0, keepdim=True)
            mu, nu = P.mean - centre, Q.mean - centre
            lam = 1.0 / Q.v
            self.left = torch.cat([P.v + mu * mu, mu], 1)
            self.right = torch.cat([lam, -2.0 * nu * lam], 1)
            self.c = (nu * nu * lam).sum(-1) + Q.logv.sum(-1)
            self.s = P.logv.sum(-1) + d
            with torch.no_grad():
                # |2 KL~ - 2 KL| <= gamma (|left| . |right| + sum |c's terms| + sum |s's terms|):
                # K = 2D products summed with c_j and s_i, each term within a few roundings of
                # its exact value (v, 1 / v, the squares); gamma = (2D + D + 16) u covers them.
                self.abs_left = self.left.detach().abs()
                self.abs_right = self.right.detach().abs()
                self.abs_c = (nu * nu * lam).detach().abs().sum(-1) + Q.logv.detach().abs().sum(-1)
                self.abs_s = P.logv.detach().abs().sum(-1) + d
                self.gamma = (3 * d + 16) * torch.finfo(dtype).eps / 2
            fixed = 8 * 2 * (self.n + self.m) * 2 * d
        # Per row of results: the values, their bound, the mask and the direct chunk's rows.
        self.row_bytes = 8 * 4 * max(self.m, 1)
        self.pair_bytes = _pair_bytes(P, Q)
        need = fixed + self.row_bytes + self.pair_bytes
        if budget and budget < need:
            raise _ext.memory_budget_error(
                op, budget, f"the torch path's operands take {_show_bytes(fixed)}, and each row "
                f"of results {_show_bytes(self.row_bytes)} more")
        left = (budget if budget else DEFAULT_BLOCK_BYTES) - fixed
        self.rows = max(1, min(self.n, left // self.row_bytes))
        self.pairs_per_chunk = max(1, min(left, DIRECT_CHUNK_BYTES) // self.pair_bytes)

    def direct(self, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        """KL(p_rows[k] || q_cols[k]) by the direct form, in chunks within the budget."""
        out = []
        for k0 in range(0, rows.numel(), self.pairs_per_chunk):
            i, j = rows[k0:k0 + self.pairs_per_chunk], cols[k0:k0 + self.pairs_per_chunk]
            kl = _pair_rowwise(_take(self.P, i), _take(self.Q, j))
            out.append(torch.clamp_min(kl, 0.0))
        return torch.cat(out) if out else self.P.mean.new_zeros(0)

    def block(self, i0: int, i1: int, with_error: bool = False):
        """Rows [i0, i1) of the matrix, each entry within the tolerance (with_error: and the
        certified bound of each entry, 0 where the direct form computed it)."""
        rows_n = i1 - i0
        dev = self.P.mean.device
        if self.diag:
            two = self.left[i0:i1] @ self.right.T + self.c[None, :] - self.s[i0:i1, None]
            kl = _overflowed_to_inf(torch.clamp_min(0.5 * two, 0.0))
            with torch.no_grad():
                err = 0.5 * self.gamma * (self.abs_left[i0:i1] @ self.abs_right.T
                                          + self.abs_c[None, :] + self.abs_s[i0:i1, None])
                low = torch.clamp_min(kl.detach() - err, 0.0)
                redo = ~(err <= self.tol * (low + 1))
                if self.self_pairs:
                    redo = redo & ~self._own(i0, i1)
                bad = torch.nonzero(redo)
            if bad.numel():
                exact = self.direct(bad[:, 0] + i0, bad[:, 1])
                kl = kl.index_put((bad[:, 0], bad[:, 1]), exact.to(kl.dtype))
                err = err.index_put((bad[:, 0], bad[:, 1]), torch.zeros((), dtype=err.dtype,
                                                                       device=dev))
        else:
            ii = torch.arange(i0, i1, device=dev).repeat_interleave(self.m)
            jj = torch.arange(self.m, device=dev).repeat(rows_n)
            kl = self.direct(ii, jj).reshape(rows_n, self.m)
            err = torch.zeros_like(kl, dtype=kl.dtype).detach()
        if self.self_pairs:  # KL(p_i || p_i) = 0 exactly, as in the library
            kl = torch.where(self._own(i0, i1), torch.zeros((), dtype=kl.dtype, device=dev), kl)
        return (kl, err) if with_error else kl

    def _own(self, i0: int, i1: int) -> torch.Tensor:
        """[i1 - i0, M] mask of the entries (i, i) among rows [i0, i1), without q."""
        dev = self.P.mean.device
        return (torch.arange(i0, i1, device=dev)[:, None]
                == torch.arange(self.m, device=dev)[None, :])


def _input_dtype(p, q) -> torch.dtype:
    """float32 when every array of p and q is, float64 otherwise (the library's rule)."""
    arrays = list(p.arrays.values()) + ([] if q is None else list(q.arrays.values()))
    f32 = all(a.dtype == torch.float32 for a in arrays)
    return torch.float32 if f32 else torch.float64


_show_bytes = _ext.show_bytes


def _gemm_form(P: Side, Q: Side, self_pairs: bool) -> torch.Tensor:
    """All pairs by the centred GEMM form alone (K = 2D for diagonal pairs,
    D^2 + D otherwise), uncertified: the formula the gradients differentiate, smooth and free of
    data-dependent shapes, so that torch.compile can trace it."""
    centre = Q.mean.detach().mean(0, keepdim=True)
    mu, nu = P.mean - centre, Q.mean - centre
    d = P.d
    if P.family == "diag" and Q.family == "diag":
        lam = 1.0 / Q.v
        left = torch.cat([P.v + mu * mu, mu], 1)
        right = torch.cat([lam, -2.0 * nu * lam], 1)
        c = (nu * nu * lam).sum(-1) + Q.logv.sum(-1)
        s = P.logv.sum(-1) + d
    else:
        G = P.covariance_dense() + mu[:, :, None] * mu[:, None, :]
        Pm = Q.precision_dense()
        Pnu = (Pm @ nu[..., None])[..., 0]
        left = torch.cat([G.reshape(G.shape[0], -1), mu], 1)
        right = torch.cat([Pm.reshape(Pm.shape[0], -1), -2.0 * Pnu], 1)
        c = (nu * Pnu).sum(-1) + Q.logdet
        s = P.logdet + d
    out = _overflowed_to_inf(torch.clamp_min(0.5 * (left @ right.T + c[None, :] - s[:, None]),
                                             0.0))
    if self_pairs:
        out = out * (1 - torch.eye(out.shape[0], dtype=out.dtype, device=out.device))
    return out


def pairwise(op: str, p, q, out_dtype: torch.dtype, jitter, tolerance: float = 0.0,
             budget: int = 0, certified: bool = True) -> torch.Tensor:
    """All pairs of flat, validated batches (q None: q = p), certified (_Pairs); certified
    False: the GEMM form alone (_gemm_form), for the backward's traced formula."""
    dtype = compute_dtype(p.arrays["mean"].device)
    P = Side(op, "p", p, dtype, jitter)
    Q = P if q is None else Side(op, "q", q, dtype, jitter)
    if not certified:
        return _gemm_form(P, Q, q is None).to(out_dtype)
    pairs = _Pairs(op, P, Q, q is None, tolerance, budget, _input_dtype(p, q))
    blocks = [pairs.block(i0, min(p.n, i0 + pairs.rows)) for i0 in range(0, p.n, pairs.rows)]
    out = torch.cat(blocks, 0) if blocks else P.mean.new_zeros(0, Q.mean.shape[0])
    return out.to(out_dtype)


def knn(op: str, p, q, k: int, exclude_self: bool, out_dtype: torch.dtype, jitter,
        tolerance: float = 0.0, budget: int = 0):
    """The k nearest of flat, validated batches (q None: q = p): per row block, the certified
    matrix, then every candidate that may be among the k nearest (its lower bound at most the
    k-th smallest upper bound) re-scored by the direct form, sorted stably (ties to the lower
    j) and cut to k."""
    dtype = compute_dtype(p.arrays["mean"].device)
    P = Side(op, "p", p, dtype, jitter)
    Q = P if q is None else Side(op, "q", q, dtype, jitter)
    pairs = _Pairs(op, P, Q, q is None, tolerance, budget, _input_dtype(p, q))
    rows = max(1, min(pairs.rows, KNN_BLOCK_BYTES // max(1, 8 * pairs.m)))
    indices, values = [], []
    for i0 in range(0, p.n, rows):
        i1 = min(p.n, i0 + rows)
        blk, err = pairs.block(i0, i1, with_error=True)
        if q is None:
            own = pairs._own(i0, i1)
            fill = torch.tensor(math.inf if exclude_self else 0.0, dtype=blk.dtype,
                                device=blk.device)
            blk = torch.where(own, fill, blk)
            err = torch.where(own, torch.zeros((), dtype=err.dtype, device=err.device), err)
        with torch.no_grad():
            hi = torch.topk(blk.detach() + err, k, dim=1, largest=False).values[:, -1]
            cand = torch.nonzero((err > 0) & (blk.detach() - err <= hi[:, None]))
        if cand.numel():
            exact = pairs.direct(cand[:, 0] + i0, cand[:, 1]).to(blk.dtype)
            blk = blk.index_put((cand[:, 0], cand[:, 1]), exact)
        v, ix = torch.sort(blk, dim=1, stable=True)
        indices.append(ix[:, :k])
        values.append(v[:, :k])
    return torch.cat(indices, 0), torch.cat(values, 0).to(out_dtype)
