"""The divergences of gk.divergence in torch operations, every kind and family pair: the formulas
the gradients differentiate (the library's values forward), and the torch path (devices the
library does not run on; CPU tensors with torch_path=True).

* Each distribution is prepared once (_Prep): two diagonal sides keep (mean, sigma, log sigma)
  from their parameter; otherwise every side is dense, (mean, covariance S, a square factor L
  with L L' = S, ln det S), its factor and log-determinant from gausskl._torch_path.Side (the
  jitter, the errors and the symmetric gradients of covariance matrices are KL's).
* Per pair (pair, on prepared rows gathered for the pairs): the kind's diagonal or dense form
  from gausskl._formulas.KINDS.
* Row-wise (rowwise), all pairs (pairwise) and knn in chunks of pairs within the memory budget;
  PairsBackward recomputes the formula chunk by chunk for the gradients of the library's
  all-pairs values, so that the backward holds one chunk's graph at a time.
"""

from __future__ import annotations

import math

import torch

from gausskl import _ext
from gausskl._distributions import FORMS
from gausskl._formulas import KINDS, SYMMETRIC, RenyiFailure
from gausskl._torch_path import (DEFAULT_BLOCK_BYTES, DIRECT_CHUNK_BYTES, KNN_BLOCK_BYTES, Side,
                                 _flat, broadcast_batches, check_same_d, compute_dtype, fail,
                                 rule, validate)



def sigma_terms(g):
    """(mean, sigma, log sigma) of a DiagGaussian of tensors, each from its parameter."""
    x = g.scale
    if g.param == "std":
        return g.mean, x, torch.log(x)
    if g.param == "var":
        return g.mean, torch.sqrt(x), 0.5 * torch.log(x)
    if g.param == "logvar":
        return g.mean, torch.exp(0.5 * x), 0.5 * x
    return g.mean, torch.rsqrt(x), -0.5 * torch.log(x)


def diag_pair(kind, alpha, m1, s1, l1, m2, s2, l2):
    """D(p || q) of diagonal sides (broadcasting): the kind's diagonal form."""
    return KINDS[kind].diag(alpha, m1, s1, l1, m2, s2, l2)


class _Prep:
    """Per-distribution tensors of one batch, each [N, ...]: diag (mean, sigma, logsigma) or
    dense (mean, S, L, logdet; `upper` says whether L is upper triangular)."""

    def tensors(self):
        return {k: v for k, v in vars(self).items() if isinstance(v, torch.Tensor)}

    def take(self, index: torch.Tensor) -> "_Prep":
        out = object.__new__(_Prep)
        vars(out).update(vars(self))
        for k, v in self.tensors().items():
            setattr(out, k, v.index_select(0, index))
        return out

    def with_tensors(self, tensors: dict) -> "_Prep":
        out = object.__new__(_Prep)
        vars(out).update(vars(self))
        vars(out).update(tensors)
        return out

    def nbytes(self) -> int:
        return sum(v.numel() * v.element_size() for v in self.tensors().values())


def prepare(op: str, side: str, g, dtype, jitter, dense: bool) -> _Prep:
    """The prepared batch of a flat (one axis of rows), validated Gaussian."""
    out = _Prep()
    out.full = g.family == "full"
    if g.family == "diag":
        m, s, ls = sigma_terms(g._replace([a.to(dtype) for a in g._spec[1:]]))
        out.mean = m
        if not dense:
            out.dense, out.sigma, out.logsigma = False, s, ls
            return out
        out.dense, out.upper = True, False
        out.S, out.L = torch.diag_embed(s * s), torch.diag_embed(s)
        out.logdet = 2.0 * ls.sum(-1)
        return out
    S = Side(op, side, g, dtype, jitter)
    out.dense, out.mean, out.logdet = True, S.mean, S.logdet
    out.S = S.covariance_dense()
    out.L, out.upper = S.triangular_factor(out.S)
    return out


def pair(kind: str, alpha: float, P: _Prep, Q: _Prep, check: bool = False):
    """D(p_k || q_k) for the prepared rows (equal counts): (values, a RenyiFailure or None;
    checked only with check, for renyi of order > 1)."""
    k = KINDS[kind]
    if not P.dense:
        if check and k.diag_failure is not None:
            failure = k.diag_failure(alpha, P, Q)
            if failure is not None:
                return None, failure
        return k.diag(alpha, P.mean, P.sigma, P.logsigma, Q.mean, Q.sigma, Q.logsigma), None
    return k.dense(alpha, P, Q, check)


def _renyi_error(op: str, where: str, f: RenyiFailure):
    fail(op, _ext.renyi_infinite_text(where, f.pivot, _ext.show(f.value, False)))


def _is_dense(p, q) -> bool:
    return p.family != "diag" or (q is not None and q.family != "diag")


def _dtype_of(g):
    return compute_dtype(g._spec[1].device)


def _row_index(g, batch) -> torch.Tensor | None:
    """Rows of g's flat batch for each row of the broadcast batch (None: the same rows)."""
    if tuple(g._batch) == tuple(batch):
        return None
    n = math.prod(g._batch)
    dev = g._spec[1].device
    return torch.arange(n, device=dev).reshape(tuple(g._batch)).expand(tuple(batch)).reshape(-1)


def rowwise(op: str, kind: str, alpha: float, p, q, jitter, check: bool = True):
    """D(p || q) over the broadcast batch in torch operations (float64; float32 on MPS).
    check: validate as the library does (the torch path); otherwise the inputs are the
    library's, validated, and this is the formula the gradients differentiate."""
    fp, fq = _flat(p), _flat(q)
    if check:
        validate(op, "p", fp)
        validate(op, "q", fq)
        check_same_d(op, p, q)
    batch = broadcast_batches(op, p, q)
    dense, dtype = _is_dense(p, q), _dtype_of(p)
    P = prepare(op, "p", fp, dtype, jitter, dense)
    Q = prepare(op, "q", fq, dtype, jitter, dense)
    ip, iq = _row_index(p, batch), _row_index(q, batch)
    if ip is not None:
        P = P.take(ip)
    if iq is not None:
        Q = Q.take(iq)
    value, failure = pair(kind, alpha, P, Q, check)
    if failure is not None:
        _renyi_error(op, f"row {failure.index}", failure)
    return value.reshape(batch)


def formula(kind: str, alpha: float, p, q):
    """The row-wise formula whose gradient is the gradient of the library's values (inputs the
    library validated): two diagonal sides by the diagonal form directly, else as rowwise."""
    if p.family == "diag" and q.family == "diag":
        return diag_pair(kind, alpha, *sigma_terms(p), *sigma_terms(q))
    return rowwise("divergence", kind, alpha, p, q, None, check=False)


def factored(g) -> bool:
    """Whether a side is factored from a matrix (where a jitter can apply)."""
    return FORMS[g._spec[0]].factored


# -- all pairs ------------------------------------------------------------------------------------


def _pair_bytes(P: _Prep) -> int:
    """Bytes of temporaries a pair's formula takes (a generous count), for the chunk size."""
    dim = P.mean.shape[-1]
    return 8 * 16 * dim if not P.dense else 8 * (12 * dim * dim + 8 * dim)


class Pairs:
    """The prepared sides of an all-pairs call (Q is P without q) and its chunk of pairs."""

    def __init__(self, op, kind, alpha, p, q, jitter, budget, check=True):
        fp = _flat(p)
        fq = None if q is None else _flat(q)
        if check:
            validate(op, "p", fp)
            if fq is not None:
                validate(op, "q", fq)
                check_same_d(op, p, q)
        self.op, self.kind, self.alpha = op, kind, alpha
        dense, dtype = _is_dense(p, q), _dtype_of(p)
        self.P = prepare(op, "p", fp, dtype, jitter, dense)
        self.Q = self.P if fq is None else prepare(op, "q", fq, dtype, jitter, dense)
        self.self_pairs = fq is None
        self.n, self.m = self.P.mean.shape[0], self.Q.mean.shape[0]
        fixed = self.P.nbytes() + (0 if self.self_pairs else self.Q.nbytes())
        per_pair = _pair_bytes(self.P)
        if check and budget and budget < fixed + per_pair + 8 * self.m:
            raise _ext.memory_budget_error(
                op, budget, f"the torch path's prepared distributions take "
                f"{_ext.show_bytes(fixed)}, and each pair {_ext.show_bytes(per_pair)} more")
        left = max(budget - fixed, per_pair) if budget else DIRECT_CHUNK_BYTES
        self.chunk = max(1, min(left, DIRECT_CHUNK_BYTES) // per_pair)
        self.block_bytes = left if budget else DEFAULT_BLOCK_BYTES

    def values(self, rows: torch.Tensor, cols: torch.Tensor, P=None, Q=None, check=True):
        """D(p_rows[k] || q_cols[k]) in chunks; a failing renyi pair is the library's error."""
        P = self.P if P is None else P
        Q = self.Q if Q is None else Q
        out = []
        for k0 in range(0, rows.numel(), self.chunk):
            i, j = rows[k0:k0 + self.chunk], cols[k0:k0 + self.chunk]
            v, failure = pair(self.kind, self.alpha, P.take(i), Q.take(j), check)
            if failure is not None:
                a, b = int(i[failure.index]), int(j[failure.index])
                _renyi_error(self.op, f"p row {a} and q row {b}", failure)
            out.append(v)
        return torch.cat(out) if out else P.mean.new_zeros(0)

    def matrix_rows(self, i0: int, i1: int, upper: bool = False) -> torch.Tensor:
        """Rows [i0, i1) of the [N, M] matrix; with q = p the diagonal exactly 0, and with
        upper only the entries right of it (the rest 0)."""
        dev = self.P.mean.device
        ii = torch.arange(i0, i1, device=dev).repeat_interleave(self.m)
        jj = torch.arange(self.m, device=dev).repeat(i1 - i0)
        if not self.self_pairs:
            return self.values(ii, jj).reshape(i1 - i0, self.m)
        keep = torch.nonzero(jj > ii if upper else jj != ii)[:, 0]
        out = self.P.mean.new_zeros(ii.numel())
        out = out.index_put((keep,), self.values(ii[keep], jj[keep]))
        return out.reshape(i1 - i0, self.m)

    def block_rows(self, extra_per_row: int = 0) -> int:
        per_row = 8 * max(self.m, 1) * 3 + extra_per_row
        return max(1, min(self.n, self.block_bytes // per_row))


def pairwise(op, kind, alpha, p, q, jitter, budget, out_dtype):
    """All pairs in torch operations, validated (the torch path)."""
    pairs = Pairs(op, kind, alpha, p, q, jitter, budget)
    rows = pairs.block_rows()
    # q = p, a symmetric kind: each pair once, mirrored (a bit-symmetric matrix).
    mirror = pairs.self_pairs and kind in SYMMETRIC
    blocks = [pairs.matrix_rows(i0, min(pairs.n, i0 + rows), upper=mirror)
              for i0 in range(0, pairs.n, rows)]
    out = torch.cat(blocks) if blocks else pairs.P.mean.new_zeros(0, pairs.m)
    if mirror:
        out = out + out.transpose(0, 1)
    m_batch = p._batch if q is None else q._batch
    return out.to(out_dtype).reshape(tuple(p._batch) + tuple(m_batch))


def knn(op, kind, alpha, p, q, k, exclude_self, jitter, budget, out_dtype):
    """The k smallest of each row in torch operations, validated (the torch path): blocks of
    rows of the matrix, sorted stably (ties to the lower j), cut to k; with gradients, the
    chosen pairs' values computed again with their graph (only those carry one)."""
    if q is not None and exclude_self:
        rule(op, "exclude_self")
    m_batch = p._batch if q is None else q._batch
    m = math.prod(m_batch)
    max_k = m - 1 if exclude_self else m
    if not (1 <= k <= max_k):
        rule(op, "k_range", k=k, bound="M - 1" if exclude_self else "M", max=max_k)
    pairs = Pairs(op, kind, alpha, p, q, jitter, budget)
    grad = torch.is_grad_enabled() and any(
        t.requires_grad for g in ([p] if q is None else [p, q]) for t in g._spec[1:]
        if isinstance(t, torch.Tensor))
    rows = max(1, min(pairs.block_rows(), KNN_BLOCK_BYTES // max(1, 8 * pairs.m)))
    indices, values = [], []
    with torch.no_grad():
        for i0 in range(0, pairs.n, rows):
            i1 = min(pairs.n, i0 + rows)
            blk = pairs.matrix_rows(i0, i1)
            if exclude_self:
                own = (torch.arange(i0, i1, device=blk.device)[:, None]
                       == torch.arange(pairs.m, device=blk.device)[None, :])
                blk = blk.masked_fill(own, math.inf)
            v, ix = torch.sort(blk, dim=1, stable=True)
            indices.append(ix[:, :k])
            values.append(v[:, :k])
    ix = torch.cat(indices)
    v = torch.cat(values)
    if grad:
        r, c = torch.arange(pairs.n, device=ix.device).repeat_interleave(k), ix.reshape(-1)
        v = pairs.values(r, c)
        if pairs.self_pairs:  # a distribution with itself: exactly 0, as the selection had it
            v = v.masked_fill(r == c, 0.0)
        v = v.reshape(pairs.n, k)
    return ix.reshape(*p._batch, k), v.to(out_dtype).reshape(*p._batch, k)


# -- gradients of the library's all-pairs values --------------------------------------------------
class PairsBackward(torch.autograd.Function):
    """The library's values of pairs (all pairs: rows None; knn: the chosen (rows, cols))
    forward; backward, the formula's gradient, recomputed chunk by chunk: the prepared
    distributions once with their graph, each chunk's pairs differentiated into the prepared
    tensors, then one pass from those to the inputs."""

    @staticmethod
    def forward(ctx, values, info, *tensors):
        ctx.info = info
        ctx.save_for_backward(*tensors)
        return values()

    @staticmethod
    def backward(ctx, grad):
        tensors = ctx.saved_tensors
        flags = ctx.needs_input_grad[2:]
        got = _pairs_grads(ctx.info, tensors, flags, grad.contiguous())
        return (None, None, *got)


def _pairs_grads(info, tensors, flags, grad):
    from gausskl._autograd import leaves_and_batches, per_tensor

    op, kind, alpha, specs, slots, budget, rows, cols = info
    create_graph = torch.is_grad_enabled()
    with torch.enable_grad():
        leaves, gs = leaves_and_batches(specs, slots, tensors, flags, create_graph)
        pairs = Pairs(op, kind, alpha, gs[0], gs[1] if len(gs) > 1 else None, None, budget,
                      check=False)
        g = grad.reshape(-1)
        wanted = [t for t, f in zip(leaves, flags) if f]
        if create_graph or rows is not None:
            if rows is None:  # create_graph: every pair's graph is kept anyway
                rows, cols = _all_pairs(pairs, 0, pairs.n * pairs.m)
            rows, cols, g = _off_diagonal(pairs, rows, cols, g.to(pairs.P.mean.dtype))
        if create_graph:
            out = pairs.values(rows, cols, check=False)
            got = torch.autograd.grad(out, wanted, g, allow_unused=True, create_graph=True)
        else:
            got = _chunked(pairs, rows, cols, g, wanted)
    return per_tensor(iter(got), tensors, flags)


def _all_pairs(pairs: Pairs, k0: int, k1: int):
    """(rows, cols) of the pairs k0 <= k < k1 in row-major order of the N x M results."""
    k = torch.arange(k0, k1, device=pairs.P.mean.device)
    return k // pairs.m, k % pairs.m


def _off_diagonal(pairs: Pairs, rows, cols, g):
    """The pairs and upstream gradients without q = p's diagonal, whose gradient is 0."""
    if not pairs.self_pairs:
        return rows, cols, g
    keep = torch.nonzero(rows != cols)[:, 0]
    return rows[keep], cols[keep], g[keep]


def _chunked(pairs: Pairs, rows, cols, g, wanted):
    """Gradients for `wanted` of sum(g * D(p_rows || q_cols)), the formula differentiated one
    chunk of pairs at a time into the prepared tensors, then through the preparation once.
    rows None: every pair of the N x M results, g their [N M] upstream gradients (in any dtype),
    whose indices are made chunk by chunk (never N M of them at once)."""
    prepared = [pairs.P] if pairs.self_pairs else [pairs.P, pairs.Q]
    graphs = [{k: v for k, v in x.tensors().items() if v.requires_grad} for x in prepared]
    detached = [x.with_tensors({k: v.detach().requires_grad_() for k, v in gr.items()})
                for x, gr in zip(prepared, graphs)]
    P = detached[0]
    Q = detached[-1]
    leaves = [v for x, gr in zip(detached, graphs) for k, v in x.tensors().items() if k in gr]
    acc = [torch.zeros_like(v) for v in leaves]
    total = pairs.n * pairs.m if rows is None else rows.numel()
    for k0 in range(0, total, pairs.chunk):
        k1 = min(total, k0 + pairs.chunk)
        if rows is None:
            i, j = _all_pairs(pairs, k0, k1)
            i, j, gk = _off_diagonal(pairs, i, j, g[k0:k1].to(pairs.P.mean.dtype))
        else:
            i, j, gk = rows[k0:k1], cols[k0:k1], g[k0:k1]
        v, _ = pair(pairs.kind, pairs.alpha, P.take(i), Q.take(j))
        if not leaves:
            break
        got = torch.autograd.grad(v, leaves, gk, allow_unused=True)
        for a, x in zip(acc, got):
            if x is not None:
                a += x
    outs = [v for gr in graphs for v in gr.values()]
    if not outs:
        return [None] * len(wanted)
    return torch.autograd.grad(outs, wanted, acc, allow_unused=True)
