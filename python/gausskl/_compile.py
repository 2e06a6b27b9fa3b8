"""The operations as torch custom operators, for torch.compile and torch.func.vmap.

Under ``torch.compile`` (``torch.compiler.is_compiling()``), gausskl.kl, kl_standard_normal,
pairwise_kl, knn_kl and gk.divergence, pairwise, knn of every kind (the kind and renyi's alpha
operator arguments) call the operators registered here (namespace ``gausskl``), each with a
fake implementation (shapes and dtypes, for tracing) and registered autograd, so that a loss
calling them compiles with ``fullgraph=True``. Each operator runs the same code as an eager
call (the C++ library; torch operations for CUDA and MPS tensors); the other kinds' backward
operators differentiate the formulas of gausskl._formulas as an eager backward does. In eager
mode the operations call the library directly instead: dispatching through a registered
operator costs more than a small call's whole work (bench/README.md).

Under ``torch.func.vmap`` the operations call these operators too: each has a vmap rule that
runs the operator once per vmapped index (the library's calls are batched already; vmap adds an
axis it cannot be told about in one call without changing what the batch axes pair with).
Under torch.func.grad inside (or around) vmap they run within _UnderGrad, an autograd.Function
torch.func composes with.

Differences from eager calls: the arrays must be torch tensors, and a JitterWarning is not
raised (the jitter applies as in eager mode).
"""

from __future__ import annotations

import torch

from gausskl import _arrays
from gausskl import _ext
from gausskl._distributions import FORMS, of_code


# -- batches as operator arguments: (tensors, code) ---------------------------------------------

def _ranks(code: int) -> tuple:
    return FORMS[code].event_ranks


def _batch(arrays, code: int) -> tuple:
    shapes = [tuple(a.shape[:a.dim() - r]) for a, r in zip(arrays, _ranks(code))]
    return tuple(torch.broadcast_shapes(*shapes))


def _out_dtype(*groups) -> torch.dtype:
    kind = _arrays.common_kind(a for g in groups for a in g)
    return torch.float64 if kind == "float64" else torch.float32


def _gaussian(arrays, code: int):
    """A gausskl batch over operator arguments (the family from the code)."""
    return of_code(arrays, code)


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


# -- backward operators that differentiate torch operations ----------------------------------

def _with_autograd():
    """Autograd within an operator's implementation, which runs below it (its dispatch key
    excluded): the backward operators differentiate torch operations."""
    exclude = torch._C._dispatch_tls_local_exclude_set().remove(
        torch._C.DispatchKey.AutogradFunctionality)
    return torch._C._ForceDispatchKeyGuard(torch._C._dispatch_tls_local_include_set(), exclude)


def _vjp(fn, p, p_code, q, q_code, grad, needs):
    """Gradients (spec order; an empty tensor where not needed) of sum(grad * fn(p, q)), fn
    called on batches over detached leaves."""
    with _with_autograd(), torch.enable_grad():
        leaves = [a.detach().requires_grad_(bool(n)) for a, n in zip([*p, *q], needs)]
        out = fn(_gaussian(leaves[:len(p)], p_code),
                 _gaussian(leaves[len(p):], q_code) if q else None)
        wanted = [x for x, n in zip(leaves, needs) if n]
        got = iter(torch.autograd.grad(out, wanted, grad.to(out.dtype), allow_unused=True)
                   if wanted else ())
    grads = []
    for a, n in zip([*p, *q], needs):
        g = next(got) if n else None
        grads.append(a.new_empty(0) if g is None and not n else
                     (a.new_zeros(a.shape) if g is None else g.to(a.dtype).contiguous()))
    return grads


def _kind_backward_fake(p, p_code, q, q_code, *rest):
    """The backward operators' gradients: contiguous, of each input's shape (empty where not
    needed)."""
    needs = rest[-1]
    return [a.new_empty(a.shape) if n else a.new_empty(0) for a, n in zip([*p, *q], needs)]


# -- torch.func.grad inside torch.func.vmap --------------------------------------------------------
# A custom operator's registered autograd does not compose with torch.func.grad; an
# autograd.Function with setup_context does, and its vmap rule (generated) runs the operators'
# own per index. The operators run under no_grad inside it (their gradients are its backward).

def _grad_transform() -> bool:
    """Whether torch.func.grad (jvp, ...) is among the active transforms (not under compile)."""
    if torch.compiler.is_compiling() or not torch._C._are_functorch_transforms_active():
        return False
    functorch = torch._C._functorch
    return any(i.key() != functorch.TransformType.Vmap
               for i in functorch.get_interpreter_stack())


class _Call:
    """An operator call over flat tensors (p's arrays, then q's) and its gradients' function."""

    def __init__(self, forward, backward):
        self.forward, self.backward = forward, backward


class _UnderGrad(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(call, *tensors):
        with torch.no_grad():
            return call.forward(list(tensors))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.call = inputs[0]
        extra = []
        if isinstance(output, tuple):  # knn: (indices, values); the indices are saved
            ctx.mark_non_differentiable(output[0])
            extra = [output[0]]
        ctx.save_for_backward(*inputs[1:], *extra)

    @staticmethod
    def backward(ctx, *grads):
        needs = [bool(n) for n in ctx.needs_input_grad[1:]]
        with torch.no_grad():
            got = ctx.call.backward(list(ctx.saved_tensors), grads[-1], needs)
        return (None, *[g if n else None for g, n in zip(got, needs)])


def _traced(pa, qa, forward, backward):
    """forward(p arrays, q arrays): the operator; under torch.func.grad (in vmap) through
    _UnderGrad, backward(p arrays, q arrays, saved outputs, grad, needs) its gradients."""
    if not _grad_transform():
        return forward(pa, qa)
    n, m = len(pa), len(qa)
    call = _Call(lambda t: forward(t[:n], t[n:n + m]),
                 lambda t, grad, needs: backward(t[:n], t[n:n + m], t[n + m:], grad, needs))
    return _UnderGrad.apply(call, *pa, *qa)


def _arguments(p, q):
    qa, qc = ([], 0) if q is None else (list(q._spec[1:]), q._spec[0])
    return list(p._spec[1:]), p._spec[0], qa, qc


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
    if FORMS[p_code].family == FORMS[q_code].family == "low_rank":  # near-duplicate rows:
        # a data-dependent branch
        return _kl_formula_backward_op(p, p_code, q, q_code, grad, needs)

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


@torch.library.custom_op("gausskl::kl_formula_backward", mutates_args=())
def _kl_formula_backward_op(p: list[torch.Tensor], p_code: int, q: list[torch.Tensor],
                            q_code: int, grad: torch.Tensor,
                            needs: list[bool]) -> list[torch.Tensor]:
    """_rowwise_grads' torch vjp, eagerly: for formulas whose control flow reads values."""
    from gausskl import _torch_path

    return _vjp(_torch_path.rowwise_values, p, p_code, q, q_code, grad, needs)


_kl_formula_backward_op.register_fake(lambda p, p_code, q, q_code, grad, needs:
                                       _kind_backward_fake(p, p_code, q, q_code, needs))


_vmap_by_index(_kl_formula_backward_op)
_kl_op.register_autograd(_kl_backward, setup_context=_kl_setup)
_vmap_by_index(_kl_op)
_vmap_by_index(_kl_backward_op)


def kl(p, q, jitter, memory_budget, threads):
    pa, pc, qa, qc = _arguments(p, q)
    return _traced(pa, qa, lambda a, b: _kl_op(a, pc, b, qc, threads, jitter, memory_budget),
                   lambda a, b, _, g, needs: _rowwise_grads(a, pc, b, qc, g, needs, threads))


def kl_standard_normal(p, jitter, memory_budget, threads):
    pa, pc, _, _ = _arguments(p, None)
    return _traced(pa, [], lambda a, b: _kl_op(a, pc, [], 0, threads, jitter, memory_budget),
                   lambda a, b, _, g, needs: _rowwise_grads(a, pc, [], 0, g, needs, threads))


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


def _pairwise_grads(p, p_code, q, q_code, grad, needs, threads, jitter):
    """Gradients (spec order) of sum(grad * pairwise_kl(p, q)) (q empty: q = p)."""
    from gausskl import _torch_path
    from gausskl._jitter import Jitter

    codes = [p_code] + ([q_code] if q else [])
    if all(FORMS[c].family == "diag" for c in codes) and p[0].device.type == "cpu":
        return _pairwise_backward_op(p, p_code, q, q_code, grad, needs, threads)

    # Other families (and devices): torch's vjp of the torch path's formula, traced.
    def values(*xs):
        a = _gaussian(list(xs[:len(p)]), p_code)
        b = _gaussian(list(xs[len(p):]), q_code) if q else None
        fa, fb = _torch_path._flat(a), (None if b is None else _torch_path._flat(b))
        out = _torch_path.pairwise("pairwise_kl", fa, fb, grad.dtype,
                                   Jitter("pairwise_kl", jitter), certified=False)
        return out.reshape(tuple(a._batch) + tuple(a._batch if b is None else b._batch))

    _, vjp = torch.func.vjp(values, *p, *q)
    return list(vjp(grad))


def _pairwise_backward(ctx, grad):
    arrays = ctx.saved_tensors
    p, q = list(arrays[:ctx.n_p]), list(arrays[ctx.n_p:])
    needs = _needs(ctx.needs_input_grad[0], len(p)) + _needs(ctx.needs_input_grad[2], len(q))
    grads = _pairwise_grads(p, ctx.p_code, q, ctx.q_code, grad, needs, ctx.threads, ctx.jitter)
    gp = [g if n else None for g, n in zip(grads[:len(p)], needs)]
    gq = [g if n else None for g, n in zip(grads[len(p):], needs[len(p):])]
    return gp, None, gq, None, None, None, None, None


_pairwise_op.register_autograd(_pairwise_backward, setup_context=_pairwise_setup)
_vmap_by_index(_pairwise_op)
_vmap_by_index(_pairwise_backward_op)


def pairwise_kl(p, q, jitter, tolerance, memory_budget, threads):
    pa, pc, qa, qc = _arguments(p, q)
    return _traced(pa, qa, lambda a, b: _pairwise_op(a, pc, b, qc, threads, jitter, tolerance,
                                                     memory_budget),
                   lambda a, b, _, g, needs: _pairwise_grads(a, pc, b, qc, g, needs, threads,
                                                             jitter))


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


def _knn_grads(p, p_code, q, q_code, indices, grad_values, threads):
    """Gradients (spec order) of sum(grad_values * knn_kl(p, q) values) (q empty: q = p)."""
    pg = _gaussian(p, p_code)
    qg = _gaussian(q, q_code) if q else pg
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
                           threads)
    gp_rows, gq_rows = grads[:len(pp)], grads[len(pp):]
    gp = [torch.zeros_like(a).index_add_(0, rows, g) for a, g in zip(fp._spec[1:], gp_rows)]
    gq = [torch.zeros_like(a).index_add_(0, cols, g) for a, g in zip(fq._spec[1:], gq_rows)]
    if not q:
        gp = [a + b for a, b in zip(gp, gq)]
        gq = []
    gp = [g.reshape(*pg._batch, *a.shape[a.dim() - r:]).sum_to_size(a.shape)
          for g, a, r in zip(gp, p, _ranks(p_code))]
    gq = [g.reshape(*qg._batch, *a.shape[a.dim() - r:]).sum_to_size(a.shape)
          for g, a, r in zip(gq, q, _ranks(q_code))]
    return gp + gq


def _knn_backward(ctx, grad_indices, grad_values):
    *arrays, indices = ctx.saved_tensors
    p, q = list(arrays[:ctx.n_p]), list(arrays[ctx.n_p:])
    grads = _knn_grads(p, ctx.p_code, q, ctx.q_code, indices, grad_values, ctx.threads)
    return grads[:len(p)], None, grads[len(p):], None, None, None, None, None, None, None


_knn_op.register_autograd(_knn_backward, setup_context=_knn_setup)
_vmap_by_index(_knn_op)


def knn_kl(request):
    r = request
    pa, pc, qa, qc = _arguments(r.p, r.q)
    return _traced(pa, qa, lambda a, b: _knn_op(a, pc, b, qc, r.k, r.exclude_self, r.threads,
                                                r.jitter.eps, r.tolerance, r.budget),
                   lambda a, b, saved, g, needs: _knn_grads(a, pc, b, qc, saved[0], g,
                                                            r.threads))


# -- divergence, pairwise and knn of the other kinds: the kind (and renyi's alpha) a parameter ---
# Forward, the eager call (the library's values); backward, an operator of its own that
# differentiates the kind's formula (gausskl._formulas) in eager torch operations, as an eager
# call's backward does, so neither pass is traced into: the formulas' checks read values.

def _alpha(kind: str, alpha: float):
    from gausskl._formulas import KINDS

    return alpha if KINDS[kind].takes_alpha else None


def _kind_eager(op: str, p, p_code, q, q_code, kind, alpha, **options):
    """gk.divergence, gk.pairwise or gk.knn on operator arguments, checked as the public function
    checked them (warnings of the jitter dropped), without gradients."""
    import warnings

    from gausskl import _dispatch

    pg = _gaussian(p, p_code)
    qg = _gaussian(q, q_code) if q else None
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        return _dispatch.eager(op, pg, qg, kind=kind, alpha=alpha, **options)


def _jittered(jitter: float, p, p_code, q, q_code) -> bool:
    """Whether an eager call takes the torch path forward and backward: a jitter on matrices the
    library would factor (as gk.kl)."""
    from gausskl import _divergence_torch as dt

    return bool(jitter) and any(dt.factored(_gaussian(a, c)) for a, c in ((p, p_code),
                                                                           (q, q_code)) if a)


def _save_pair(ctx, p, p_code, q, q_code, kind, alpha, *extra):
    ctx.p_code, ctx.q_code, ctx.kind, ctx.alpha, ctx.n_p = p_code, q_code, kind, alpha, len(p)
    ctx.save_for_backward(*p, *q, *extra)


def _saved_pair(ctx, extra=0):
    arrays = ctx.saved_tensors
    saved = arrays[len(arrays) - extra:] if extra else ()
    arrays = arrays[:len(arrays) - extra]
    p, q = list(arrays[:ctx.n_p]), list(arrays[ctx.n_p:])
    needs = _needs(ctx.needs_input_grad[0], len(p)) + _needs(ctx.needs_input_grad[2], len(q))
    return p, q, needs, saved


def _input_grads(grads, needs, n_p, n_inputs):
    """The gradients of an operator's inputs (p, p_code, q, q_code, ...) from the backward
    operator's, spec order."""
    gp = [g if n else None for g, n in zip(grads[:n_p], needs)]
    gq = [g if n else None for g, n in zip(grads[n_p:], needs[n_p:])]
    return (gp, None, gq) + (None,) * (n_inputs - 3)


@torch.library.custom_op("gausskl::divergence", mutates_args=())
def _divergence_op(p: list[torch.Tensor], p_code: int, q: list[torch.Tensor], q_code: int,
                   kind: str, alpha: float, threads: int, jitter: float,
                   memory_budget: int) -> torch.Tensor:
    return _kind_eager("divergence", p, p_code, q, q_code, kind, alpha, threads=threads,
                       jitter=jitter, memory_budget=memory_budget).clone()


@_divergence_op.register_fake
def _(p, p_code, q, q_code, kind, alpha, threads, jitter, memory_budget):
    batch = torch.broadcast_shapes(_batch(p, p_code), _batch(q, q_code))
    return p[0].new_empty(batch, dtype=_out_dtype(p, q))


@torch.library.custom_op("gausskl::divergence_backward", mutates_args=())
def _divergence_backward_op(p: list[torch.Tensor], p_code: int, q: list[torch.Tensor],
                            q_code: int, kind: str, alpha: float, jitter: float,
                            grad: torch.Tensor, needs: list[bool]) -> list[torch.Tensor]:
    from gausskl import _divergence_torch as dt
    from gausskl._jitter import Jitter

    a = _alpha(kind, alpha) or 0.0
    if _jittered(jitter, p, p_code, q, q_code):
        def fn(pg, qg):
            return dt.rowwise("divergence", kind, a, pg, qg, Jitter("divergence", jitter))
    else:
        def fn(pg, qg):
            return dt.formula(kind, a, pg, qg)
    return _vjp(fn, p, p_code, q, q_code, grad, needs)


_divergence_backward_op.register_fake(_kind_backward_fake)


def _divergence_setup(ctx, inputs, output):
    p, p_code, q, q_code, kind, alpha, _, jitter = inputs[:8]
    _save_pair(ctx, p, p_code, q, q_code, kind, alpha)
    ctx.jitter = jitter


def _divergence_backward(ctx, grad):
    p, q, needs, _ = _saved_pair(ctx)
    grads = _divergence_backward_op(p, ctx.p_code, q, ctx.q_code, ctx.kind, ctx.alpha,
                                    ctx.jitter, grad, needs)
    return _input_grads(grads, needs, len(p), 9)


_divergence_op.register_autograd(_divergence_backward, setup_context=_divergence_setup)
_vmap_by_index(_divergence_op)
_vmap_by_index(_divergence_backward_op)


@torch.library.custom_op("gausskl::pairwise", mutates_args=())
def _pairwise_kind_op(p: list[torch.Tensor], p_code: int, q: list[torch.Tensor], q_code: int,
                      kind: str, alpha: float, threads: int, jitter: float, tolerance: float,
                      memory_budget: int) -> torch.Tensor:
    return _kind_eager("pairwise", p, p_code, q, q_code, kind, alpha, threads=threads,
                       jitter=jitter, tolerance=tolerance, memory_budget=memory_budget).clone()


@_pairwise_kind_op.register_fake
def _(p, p_code, q, q_code, kind, alpha, threads, jitter, tolerance, memory_budget):
    pb = _batch(p, p_code)
    qb = _batch(q, q_code) if q else pb
    return p[0].new_empty((*pb, *qb), dtype=_out_dtype(p, q))


@torch.library.custom_op("gausskl::pairs_backward", mutates_args=())
def _pairs_backward_op(p: list[torch.Tensor], p_code: int, q: list[torch.Tensor], q_code: int,
                       kind: str, alpha: float, jitter: float, memory_budget: int,
                       indices: torch.Tensor | None, grad: torch.Tensor,
                       needs: list[bool]) -> list[torch.Tensor]:
    """Gradients of sum(grad * values) of gk.pairwise (indices None) or of gk.knn's values
    (indices: the chosen columns of each row), as an eager call's backward makes them."""
    from gausskl import _autograd
    from gausskl import _divergence_torch as dt
    from gausskl._jitter import Jitter

    a = _alpha(kind, alpha) or 0.0
    rows = cols = None
    if indices is not None:
        k = indices.shape[-1]
        rows = torch.arange(indices.numel() // k, device=indices.device).repeat_interleave(k)
        cols = indices.reshape(-1)
    if _jittered(jitter, p, p_code, q, q_code):  # the torch path's values, differentiated
        def fn(pg, qg):
            if indices is None:
                return dt.pairwise("pairwise", kind, a, pg, qg, Jitter("pairwise", jitter),
                                   memory_budget, grad.dtype)
            # the chosen pairs, as dt.knn computes them again with gradients
            pairs = dt.Pairs("knn", kind, a, pg, qg, Jitter("knn", jitter), memory_budget)
            v = pairs.values(rows, cols)
            return (v.masked_fill(rows == cols, 0.0) if pairs.self_pairs else v).reshape(
                indices.shape)
        return _vjp(fn, p, p_code, q, q_code, grad, needs)
    specs = ((p_code, *p),) + (((q_code, *q),) if q else ())
    slots, tensors = _autograd._tensors(specs)
    info = ("knn" if indices is not None else "pairwise", kind, a, specs, slots, memory_budget,
            rows, cols)
    with _with_autograd(), torch.no_grad():  # no_grad: no graph of the gradients
        grads = dt._pairs_grads(info, tensors, needs, grad.contiguous())
    return [t.new_empty(0) if g is None else g.contiguous() for g, t in zip(grads, tensors)]


_pairs_backward_op.register_fake(_kind_backward_fake)


def _pairwise_kind_setup(ctx, inputs, output):
    p, p_code, q, q_code, kind, alpha, _, jitter, _, budget = inputs
    _save_pair(ctx, p, p_code, q, q_code, kind, alpha)
    ctx.jitter, ctx.budget = jitter, budget


def _pairwise_kind_backward(ctx, grad):
    p, q, needs, _ = _saved_pair(ctx)
    grads = _pairs_backward_op(p, ctx.p_code, q, ctx.q_code, ctx.kind, ctx.alpha, ctx.jitter,
                               ctx.budget, None, grad, needs)
    return _input_grads(grads, needs, len(p), 10)


_pairwise_kind_op.register_autograd(_pairwise_kind_backward, setup_context=_pairwise_kind_setup)
_vmap_by_index(_pairwise_kind_op)
_vmap_by_index(_pairs_backward_op)


@torch.library.custom_op("gausskl::knn", mutates_args=())
def _knn_kind_op(p: list[torch.Tensor], p_code: int, q: list[torch.Tensor], q_code: int,
                 k: int, exclude_self: bool, kind: str, alpha: float, threads: int,
                 jitter: float, tolerance: float,
                 memory_budget: int) -> tuple[torch.Tensor, torch.Tensor]:
    idx, val = _kind_eager("knn", p, p_code, q, q_code, kind, alpha, k=k,
                           exclude_self=exclude_self, threads=threads, jitter=jitter,
                           tolerance=tolerance, memory_budget=memory_budget)
    return idx.clone(), val.clone()


@_knn_kind_op.register_fake
def _(p, p_code, q, q_code, k, exclude_self, kind, alpha, threads, jitter, tolerance,
      memory_budget):
    shape = (*_batch(p, p_code), k)
    return (p[0].new_empty(shape, dtype=torch.int64),
            p[0].new_empty(shape, dtype=_out_dtype(p, q)))


def _knn_kind_setup(ctx, inputs, output):
    p, p_code, q, q_code, _, _, kind, alpha, _, jitter, _, budget = inputs
    _save_pair(ctx, p, p_code, q, q_code, kind, alpha, output[0])
    ctx.jitter, ctx.budget = jitter, budget


def _knn_kind_backward(ctx, grad_indices, grad_values):
    p, q, needs, (indices,) = _saved_pair(ctx, extra=1)
    grads = _pairs_backward_op(p, ctx.p_code, q, ctx.q_code, ctx.kind, ctx.alpha, ctx.jitter,
                               ctx.budget, indices, grad_values, needs)
    return _input_grads(grads, needs, len(p), 12)


_knn_kind_op.register_autograd(_knn_kind_backward, setup_context=_knn_kind_setup)
_vmap_by_index(_knn_kind_op)


def divergence(kind, alpha, p, q, jitter, memory_budget, threads):
    pa, pc, qa, qc = _arguments(p, q)
    return _traced(pa, qa, lambda a, b: _divergence_op(a, pc, b, qc, kind, alpha, threads, jitter,
                                                       memory_budget),
                   lambda a, b, _, g, needs: _divergence_backward_op(a, pc, b, qc, kind, alpha,
                                                                     jitter, g, needs))


def pairwise(kind, alpha, p, q, jitter, tolerance, memory_budget, threads):
    pa, pc, qa, qc = _arguments(p, q)
    return _traced(pa, qa, lambda a, b: _pairwise_kind_op(a, pc, b, qc, kind, alpha, threads,
                                                          jitter, tolerance, memory_budget),
                   lambda a, b, _, g, needs: _pairs_backward_op(a, pc, b, qc, kind, alpha, jitter,
                                                                memory_budget, None, g, needs))


def knn(kind, alpha, p, q, k, exclude_self, jitter, tolerance, memory_budget, threads):
    pa, pc, qa, qc = _arguments(p, q)
    return _traced(pa, qa, lambda a, b: _knn_kind_op(a, pc, b, qc, k, exclude_self, kind, alpha,
                                                     threads, jitter, tolerance, memory_budget),
                   lambda a, b, saved, g, needs: _pairs_backward_op(
                       a, pc, b, qc, kind, alpha, jitter, memory_budget, saved[0], g, needs))


# -- Gaussian mixtures' weights: checked when the step runs, not when it is traced ---------------

@torch.library.custom_op("gausskl::checked_weights", mutates_args=())
def _checked_weights_op(w: torch.Tensor, logits: bool) -> torch.Tensor:
    from gausskl._weights import check

    check("GaussianMixture", "logits" if logits else "weights", w, int(w.shape[-1]))
    return w.clone()


@_checked_weights_op.register_fake
def _(w, logits):
    return torch.empty_like(w)


_checked_weights_op.register_autograd(lambda ctx, g: (g, None))


def checked_weights(w: torch.Tensor, logits: bool) -> torch.Tensor:
    """w itself, its values checked as GaussianMixture checks them, when the compiled step
    runs (a data-dependent check would break the graph)."""
    return _checked_weights_op(w, logits)
