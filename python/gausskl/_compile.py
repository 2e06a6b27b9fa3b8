"""The operations as torch custom operators, for torch.compile.

Under ``torch.compile`` (``torch.compiler.is_compiling()``), gausskl.kl, kl_standard_normal,
pairwise_kl and knn_kl call the operators registered here (namespace ``gausskl``), each with a
fake implementation (shapes and dtypes, for tracing) and registered autograd, so that a loss
calling them compiles with ``fullgraph=True``. Each operator runs the same code as an eager call
(the C++ library; torch operations for CUDA and MPS tensors). In eager mode the operations call
the library directly instead: dispatching through a registered operator costs more than a small
call's whole work (bench/README.md).

Under ``torch.func.vmap`` the operations call these operators too: each has a vmap rule that
runs the operator once per vmapped index (the library's calls are batched already; vmap adds an
axis it cannot be told about in one call without changing what the batch axes pair with).

Differences from eager calls: the arrays must be torch tensors, and a JitterWarning is not
raised (the jitter applies as in eager mode).
"""

from __future__ import annotations

import torch

from gausskl import _arrays
from gausskl import _ext
from gausskl._distributions import CODES

_FLOAT64 = torch.float64


# -- batches as operator arguments: (tensors, code) ---------------------------------------------

def _ranks(code: int) -> tuple:
    if code == CODES["cov_factor"]:
        return (1, 2, 1)
    if CODES["scale_tril"] <= code <= CODES["precision_matrix"]:
        return (1, 2)
    return (1, 1)


def _batch(arrays, code: int) -> tuple:
    shapes = [tuple(a.shape[:a.dim() - r]) for a, r in zip(arrays, _ranks(code))]
    return tuple(torch.broadcast_shapes(*shapes))


def _out_dtype(*groups) -> torch.dtype:
    kind = _arrays.common_kind(a for g in groups for a in g)
    return torch.float64 if kind == "float64" else torch.float32


def _gaussian(arrays, code: int):
    """A gausskl batch over operator arguments (the family from the code)."""
    from gausskl._distributions import DiagGaussian, FullGaussian, LowRankGaussian

    names = {v: k for k, v in CODES.items()}
    name = names[code]
    if code <= CODES["precision"]:
        return DiagGaussian(arrays[0], **{name: arrays[1]})
    if code == CODES["cov_factor"]:
        return LowRankGaussian(arrays[0], cov_factor=arrays[1], cov_diag=arrays[2])
    if code == CODES["packed_log_diagonal"]:
        return FullGaussian(arrays[0], packed_scale_tril=arrays[1], log_diagonal=True)
    return FullGaussian(arrays[0], **{name: arrays[1]})


def _needs(flags, count: int) -> list:
    """needs_input_grad of a Tensor[] argument (a list of flags, or one flag) as one flag per
    tensor."""
    if isinstance(flags, (list, tuple)):
        return [bool(f) for f in flags]
    return [bool(flags)] * count


def _eager(op: str, p, q, **options):
    """The eager operation on operator arguments (warnings of the jitter dropped)."""
    import warnings

    from gausskl import _dispatch as _ops

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            fn = getattr(_ops, op)
            if op == "kl_standard_normal":
                return fn(p, **options)
            return fn(p, q, **options)


# -- vmap: one call of the operator per index of the vmapped axis -------------------------------

def _at(arg, dim, v):
    """Index v of the vmapped axis `dim` of an operator argument (a tensor or a list of them)."""
    if dim is None:
        return arg
    if isinstance(arg, (list, tuple)):
        return [a if d is None else a.select(d, v) for a, d in zip(arg, dim)]
    return arg.select(dim, v)


def _stacked(outs):
    """The per-index results stacked along a new axis 0, and their out_dims."""
    first = outs[0]
    if isinstance(first, torch.Tensor):
        return torch.stack(outs), 0
    stacked = [torch.stack(x) for x in zip(*outs)]
    if isinstance(first, tuple):
        return tuple(stacked), tuple(0 for _ in stacked)
    return stacked, [0] * len(stacked)


def _vmap_by_index(op):
    def rule(info, in_dims, *args):
        return _stacked([op(*[_at(a, d, v) for a, d in zip(args, in_dims)])
                         for v in range(info.batch_size)])

    torch.library.register_vmap(op, rule)


# -- kl and kl_standard_normal -------------------------------------------------------------------

@torch.library.custom_op("gausskl::kl", mutates_args=())
def _kl_op(p: list[torch.Tensor], p_code: int, q: list[torch.Tensor], q_code: int, threads: int,
           jitter: float, memory_budget: int) -> torch.Tensor:
    pg = _gaussian(p, p_code)
    options = dict(threads=threads, jitter=jitter, memory_budget=memory_budget)
    if not q:
        return _eager("kl_standard_normal", pg, None, **options).clone()
    return _eager("kl", pg, _gaussian(q, q_code), **options).clone()


@_kl_op.register_fake
def _(p, p_code, q, q_code, threads, jitter, memory_budget):
    batch = _batch(p, p_code)
    if q:
        batch = torch.broadcast_shapes(batch, _batch(q, q_code))
    return p[0].new_empty(batch, dtype=_out_dtype(p, q))


@torch.library.custom_op("gausskl::kl_backward", mutates_args=())
def _kl_backward_op(p: list[torch.Tensor], p_code: int, q: list[torch.Tensor], q_code: int,
                    grad: torch.Tensor, needs: list[bool], threads: int) -> list[torch.Tensor]:
    from gausskl import _autograd

    specs = [(p_code, *p)] + ([(q_code, *q)] if q else [])
    arrays = [*p, *q]
    slots = [(0, k) for k in range(1, len(p) + 1)] + [(1, k) for k in range(1, len(q) + 1)]
    grads = _ext.kl_backward(specs[0], specs[1] if q else None, grad.contiguous(), tuple(needs),
                             threads)
    grads = _autograd._picked(grads, specs, slots, needs, arrays)
    return [g if g is not None else a.new_empty(0) for g, a in zip(grads, arrays)]


@_kl_backward_op.register_fake
def _(p, p_code, q, q_code, grad, needs, threads):
    return [torch.empty_like(a) if n else a.new_empty(0) for a, n in zip([*p, *q], needs)]


def _kl_setup(ctx, inputs, output):
    p, p_code, q, q_code, threads = inputs[:5]
    ctx.p_code, ctx.q_code, ctx.threads = p_code, q_code, threads
    ctx.n_p = len(p)
    ctx.save_for_backward(*p, *q)


def _rowwise_grads(p, p_code, q, q_code, grad, needs, threads):
    """Gradients (a list, spec order) of sum(grad * kl(p, q)) (q empty: N(0, I)): the library's
    operator where it differentiates the pair, else torch's vjp of the same formula in torch
    operations, traced into the backward graph."""
    from gausskl import _autograd, _torch_path

    pg = _gaussian(p, p_code)
    qg = _gaussian(q, q_code) if q else None
    if _autograd.library_rowwise(pg, qg):
        return _kl_backward_op(p, p_code, q, q_code, grad, needs, threads)

    def values(*xs):
        a = _gaussian(list(xs[:len(p)]), p_code)
        b = _gaussian(list(xs[len(p):]), q_code) if q else None
        return _torch_path.rowwise_values(a, b)

    _, vjp = torch.func.vjp(values, *p, *q)
    return list(vjp(grad.to(_out_dtype(p, q))))


def _kl_backward(ctx, grad):
    arrays = ctx.saved_tensors
    p, q = list(arrays[:ctx.n_p]), list(arrays[ctx.n_p:])
    needs = _needs(ctx.needs_input_grad[0], len(p)) + _needs(ctx.needs_input_grad[2], len(q))
    grads = _rowwise_grads(p, ctx.p_code, q, ctx.q_code, grad, needs, ctx.threads)
    gp = [g if n else None for g, n in zip(grads[:len(p)], needs)]
    gq = [g if n else None for g, n in zip(grads[len(p):], needs[len(p):])]
    return gp, None, gq, None, None, None, None


_kl_op.register_autograd(_kl_backward, setup_context=_kl_setup)
_vmap_by_index(_kl_op)
_vmap_by_index(_kl_backward_op)


def kl(p, q, jitter, memory_budget, threads):
    return _kl_op(list(p._spec[1:]), p._spec[0], list(q._spec[1:]), q._spec[0], threads, jitter,
                  memory_budget)


def kl_standard_normal(p, jitter, memory_budget, threads):
    return _kl_op(list(p._spec[1:]), p._spec[0], [], 0, threads, jitter, memory_budget)


# -- pairwise_kl ---------------------------------------------------------------------------------

@torch.library.custom_op("gausskl::pairwise_kl", mutates_args=())
def _pairwise_op(p: list[torch.Tensor], p_code: int, q: list[torch.Tensor], q_code: int,
                 threads: int, jitter: float, tolerance: float,
                 memory_budget: int) -> torch.Tensor:
    qg = _gaussian(q, q_code) if q else None
    return _eager("pairwise_kl", _gaussian(p, p_code), qg, threads=threads, jitter=jitter,
                  tolerance=tolerance, memory_budget=memory_budget).clone()


@_pairwise_op.register_fake
def _(p, p_code, q, q_code, threads, jitter, tolerance, memory_budget):
    pb = _batch(p, p_code)
    qb = _batch(q, q_code) if q else pb
    return p[0].new_empty((*pb, *qb), dtype=_out_dtype(p, q))


@torch.library.custom_op("gausskl::pairwise_kl_backward", mutates_args=())
def _pairwise_backward_op(p: list[torch.Tensor], p_code: int, q: list[torch.Tensor],
                          q_code: int, grad: torch.Tensor, needs: list[bool],
                          threads: int) -> list[torch.Tensor]:
    from gausskl import _autograd

    arrays = [*p, *q]
    gs = [_gaussian(p, p_code)] + ([_gaussian(q, q_code)] if q else [])
    slots = [(0, k) for k in range(1, len(p) + 1)] + [(1, k) for k in range(1, len(q) + 1)]
    specs = [g._spec for g in gs]
    grads = _ext.pairwise_kl_backward(specs[0], specs[1] if q else None, grad.contiguous(),
                                      tuple(needs), threads)
    if grads.__class__ is int:  # a batch no one stride describes: made contiguous first
        from gausskl._batches import contiguous as _contiguous

        flat = [_contiguous(g)._spec for g in gs]
        grads = _ext.pairwise_kl_backward(flat[0], flat[1] if q else None, grad.contiguous(),
                                          tuple(needs), threads)
    grads = _autograd._picked(grads, specs, slots, needs, arrays)
    return [g if g is not None else a.new_empty(0) for g, a in zip(grads, arrays)]


@_pairwise_backward_op.register_fake
def _(p, p_code, q, q_code, grad, needs, threads):
    return [torch.empty_like(a) if n else a.new_empty(0) for a, n in zip([*p, *q], needs)]


def _pairwise_setup(ctx, inputs, output):
    p, p_code, q, q_code, threads, jitter = inputs[:6]
    ctx.p_code, ctx.q_code, ctx.threads, ctx.jitter = p_code, q_code, threads, jitter
    ctx.n_p = len(p)
    ctx.save_for_backward(*p, *q)


def _pairwise_backward(ctx, grad):
    from gausskl import _torch_path
    from gausskl._jitter import Jitter

    arrays = ctx.saved_tensors
    p, q = list(arrays[:ctx.n_p]), list(arrays[ctx.n_p:])
    needs = _needs(ctx.needs_input_grad[0], len(p)) + _needs(ctx.needs_input_grad[2], len(q))
    codes = [ctx.p_code] + ([ctx.q_code] if q else [])
    if all(c <= CODES["precision"] for c in codes) and p[0].device.type == "cpu":
        grads = _pairwise_backward_op(p, ctx.p_code, q, ctx.q_code, grad, needs, ctx.threads)
    else:
        # Other families (and devices): torch's vjp of the torch path's formula, traced.
        def values(*xs):
            a = _gaussian(list(xs[:len(p)]), ctx.p_code)
            b = _gaussian(list(xs[len(p):]), ctx.q_code) if q else None
            fa, fb = _torch_path._flat(a), (None if b is None else _torch_path._flat(b))
            out = _torch_path.pairwise("pairwise_kl", fa, fb, grad.dtype,
                                       Jitter("pairwise_kl", ctx.jitter), certified=False)
            return out.reshape(tuple(a._batch) + tuple(a._batch if b is None else b._batch))

        _, vjp = torch.func.vjp(values, *p, *q)
        grads = list(vjp(grad))
    gp = [g if n else None for g, n in zip(grads[:len(p)], needs)]
    gq = [g if n else None for g, n in zip(grads[len(p):], needs[len(p):])]
    return gp, None, gq, None, None, None, None, None


_pairwise_op.register_autograd(_pairwise_backward, setup_context=_pairwise_setup)
_vmap_by_index(_pairwise_op)
_vmap_by_index(_pairwise_backward_op)


def pairwise_kl(p, q, jitter, tolerance, memory_budget, threads):
    qa, qc = ([], 0) if q is None else (list(q._spec[1:]), q._spec[0])
    return _pairwise_op(list(p._spec[1:]), p._spec[0], qa, qc, threads, jitter, tolerance,
                        memory_budget)


# -- knn_kl --------------------------------------------------------------------------------------

@torch.library.custom_op("gausskl::knn_kl", mutates_args=())
def _knn_op(p: list[torch.Tensor], p_code: int, q: list[torch.Tensor], q_code: int, k: int,
            exclude_self: bool, threads: int, jitter: float, tolerance: float,
            memory_budget: int) -> tuple[torch.Tensor, torch.Tensor]:
    import warnings

    from gausskl import _dispatch as _ops

    qg = _gaussian(q, q_code) if q else None
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        idx, val = _ops.knn_kl(_gaussian(p, p_code), qg, k=k, exclude_self=exclude_self,
                               threads=threads, jitter=jitter, tolerance=tolerance,
                               memory_budget=memory_budget)
    return idx.clone(), val.clone()


@_knn_op.register_fake
def _(p, p_code, q, q_code, k, exclude_self, threads, jitter, tolerance, memory_budget):
    shape = (*_batch(p, p_code), k)
    return (p[0].new_empty(shape, dtype=torch.int64),
            p[0].new_empty(shape, dtype=_out_dtype(p, q)))


def _knn_setup(ctx, inputs, output):
    p, p_code, q, q_code = inputs[:4]
    ctx.p_code, ctx.q_code, ctx.threads = p_code, q_code, inputs[6]
    ctx.n_p = len(p)
    ctx.save_for_backward(*p, *q, output[0])


def _knn_backward(ctx, grad_indices, grad_values):
    *arrays, indices = ctx.saved_tensors
    p, q = list(arrays[:ctx.n_p]), list(arrays[ctx.n_p:])
    pg = _gaussian(p, ctx.p_code)
    qg = _gaussian(q, ctx.q_code) if q else pg
    # The chosen pairs' row-wise KL, differentiated at (p_i, q_j) and summed back by index.
    from gausskl._torch_path import _flat

    fp, fq = _flat(pg), _flat(qg)
    kk = indices.shape[-1]
    rows = torch.arange(fp.n, device=indices.device).repeat_interleave(kk)
    cols = indices.reshape(-1)
    pp = [a[rows] for a in fp._spec[1:]]
    qq = [a[cols] for a in fq._spec[1:]]
    needs = [True] * (len(pp) + len(qq))
    grads = _rowwise_grads(pp, fp._spec[0], qq, fq._spec[0], grad_values.reshape(-1), needs,
                           ctx.threads)
    gp_rows, gq_rows = grads[:len(pp)], grads[len(pp):]
    gp = [torch.zeros_like(a).index_add_(0, rows, g) for a, g in zip(fp._spec[1:], gp_rows)]
    gq = [torch.zeros_like(a).index_add_(0, cols, g) for a, g in zip(fq._spec[1:], gq_rows)]
    if not q:
        gp = [a + b for a, b in zip(gp, gq)]
        gq = []
    gp = [g.reshape(*pg._batch, *a.shape[a.dim() - r:]).sum_to_size(a.shape)
          for g, a, r in zip(gp, p, _ranks(ctx.p_code))]
    gq = [g.reshape(*qg._batch, *a.shape[a.dim() - r:]).sum_to_size(a.shape)
          for g, a, r in zip(gq, q, _ranks(ctx.q_code))]
    return gp, None, gq, None, None, None, None, None, None, None


_knn_op.register_autograd(_knn_backward, setup_context=_knn_setup)
_vmap_by_index(_knn_op)


def knn_kl(request):
    p, q = request.p, request.q
    qa, qc = ([], 0) if q is None else (list(q._spec[1:]), q._spec[0])
    return _knn_op(list(p._spec[1:]), p._spec[0], qa, qc, request.k, request.exclude_self,
                   request.threads, request.jitter.eps, request.tolerance, request.budget)
