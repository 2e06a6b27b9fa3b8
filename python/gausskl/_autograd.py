"""Gradients for torch tensors with requires_grad, the values computed by the C++ library.

* Row-wise KL (and KL to N(0, I)) of diagonal tensors of one batch shape (a training step's VAE
  term): the extension's forward keeps each row's gradients, made in the same pass as the values
  (gausskl::kl_with_gradients), and the backward scales them by the upstream gradient (kept).
* Other row-wise KL of diagonal batches, and of full batches given by scale_tril or
  packed_scale_tril: the library's gradients (gausskl/gradients.hpp), one pass each way.
  Other families and mixed pairs: the backward differentiates the same formulas written in
  torch operations (gausskl._torch_path) at the saved inputs.
* All-pairs KL of diagonal batches: the library's gradients (no [N, M, D]).
* knn_kl: the values, as the library chose and re-scored them, differentiable through the
  row-wise KL of the chosen pairs.
* Everything else with gradients runs in torch operations forward and backward (the torch
  path): all-pairs KL of other families, and calls with a jitter on matrices the library would
  factor (a backward factoring again could jitter other matrices than the forward did).

A training step calls these thousands of times, so the common case works on the batches' specs
(the tuples the extension reads) and touches nothing else. Gradients come back in each
tensor's shape: the library's, made over the broadcast batch, are summed down to the shape of an
array that was broadcast.
"""

from __future__ import annotations

import torch

from gausskl import _arrays
from gausskl import _ext
from gausskl import _torch_path
from gausskl._batches import contiguous, flat
from gausskl._distributions import FORMS, of_code
from gausskl._jitter import Jitter

# Codes the library differentiates, by the gradients it has (diagonal; full given by a triangular
# factor); codes whose matrix the library factors (jitter applies).
_LIBRARY_FAMILY = {f.code: f.gradients for f in FORMS if f.gradients}
_DIAG = frozenset(c for c, g in _LIBRARY_FAMILY.items() if g == "diag")
_FACTORED = frozenset(f.code for f in FORMS if f.factored)


def library_rowwise(p, q) -> bool:
    """Whether the library computes the row-wise gradients of this pair (q None: N(0, I))."""
    return _library_codes(p._spec[0], None if q is None else q._spec[0])


def _library_codes(p_code, q_code) -> bool:
    fp = _LIBRARY_FAMILY.get(p_code)
    return fp is not None and (q_code is None or _LIBRARY_FAMILY.get(q_code) == fp)


def _tensors(specs):
    """(spec index, array index) of every tensor among the specs' arrays, and the tensors."""
    slots, tensors = [], []
    for si, spec in enumerate(specs):
        for k in range(1, len(spec)):
            if (_NATIVE.get(spec[k].__class__) or _arrays.native(spec[k])) == _TORCH:
                slots.append((si, k))
                tensors.append(spec[k])
    return tuple(slots), tensors


_NATIVE, _TORCH = _arrays._NATIVE, _arrays.TORCH  # native()'s table, read first


def _respec(specs, slots, tensors):
    """The specs with the tensors at their slots."""
    out = [list(s) for s in specs]
    for (si, k), t in zip(slots, tensors):
        out[si][k] = t
    return [tuple(s) for s in out]


def _needs(specs, slots, flags):
    """The extension's needs tuple: one flag per array of the specs, in spec order."""
    needs = [[False] * (len(s) - 1) for s in specs]
    for (si, k), flag in zip(slots, flags):
        needs[si][k - 1] = bool(flag)
    return tuple(x for side in needs for x in side)


def _picked(grads, specs, slots, flags, tensors):
    """The extension's gradients (spec order, None where not wanted) for the tensors, each
    summed down to its tensor's shape."""
    offsets, at = [], 0
    for s in specs:
        offsets.append(at)
        at += len(s) - 1
    out = []
    for (si, k), flag, t in zip(slots, flags, tensors):
        g = grads[offsets[si] + k - 1] if flag else None
        if g is not None:
            if g.shape != t.shape:
                g = g.sum_to_size(t.shape)
            if g.dtype != t.dtype:
                g = g.to(t.dtype)
        out.append(g)
    return out


def _gaussians(specs):
    """The batches of specs (the slow paths')."""
    return [of_code(s[1:], s[0]) for s in specs]


def leaves_and_batches(specs, slots, tensors, flags, create_graph):
    """For a backward that differentiates torch operations (call under torch.enable_grad()): the
    leaves to differentiate (the tensors themselves with create_graph, else detached copies that
    require grad where flagged) and the batches of specs over them (NumPy arrays among the inputs
    become constant tensors)."""
    leaves = (list(tensors) if create_graph else
              [t.detach().requires_grad_(bool(f)) for t, f in zip(tensors, flags)])
    device = tensors[0].device
    specs = [tuple(a if _arrays.is_torch(a) or i == 0 else torch.as_tensor(a, device=device)
                   for i, a in enumerate(s)) for s in _respec(specs, slots, leaves)]
    return leaves, _gaussians(specs)


def per_tensor(got, tensors, flags):
    """The gradients (an iterator over the flagged tensors' ones) for every tensor: None where not
    flagged, zeros where a flagged tensor's is None (unused), each in its tensor's dtype."""
    result = []
    for t, f in zip(tensors, flags):
        g = next(got) if f else None
        if f and g is None:
            g = torch.zeros_like(t)
        result.append(None if g is None else g.to(t.dtype))
    return result


def _torch_grads(fn, specs, slots, tensors, flags, grad, create_graph=False):
    """Gradients of sum(grad * fn(*batches)) for the flagged tensors, by torch.autograd through
    fn written in torch operations (NumPy arrays among the inputs become constant tensors).
    create_graph: the gradients are themselves differentiable (fn is applied to the tensors)."""
    with torch.enable_grad():
        leaves, batches = leaves_and_batches(specs, slots, tensors, flags, create_graph)
        out = fn(*batches)
        wanted = [t for t, f in zip(leaves, flags) if f]
        got = iter(torch.autograd.grad(out, wanted, grad.to(out.dtype), allow_unused=True,
                                       create_graph=create_graph))
    return per_tensor(got, tensors, flags)


def _rowwise_values_of(*gs):
    return _torch_path.rowwise_values(gs[0], gs[1] if len(gs) > 1 else None)


def _pairwise_values_of(*gs):
    p = flat(gs[0])
    q = flat(gs[1]) if len(gs) > 1 else None
    out = _torch_path.pairwise("pairwise_kl", p, q, p._spec[1].dtype, Jitter("pairwise_kl", 0.0))
    return out.reshape(tuple(gs[0]._batch) + tuple(gs[-1]._batch))


def _library_rowwise_grads(specs, slots, tensors, flags, grad, threads):
    """The library's gradients of sum(grad * kl) (N(0, I) with one spec) for the flagged tensors,
    each of its tensor's shape."""
    q = specs[1] if len(specs) > 1 else None
    grads = _ext.kl_backward(specs[0], q, grad, _needs(specs, slots, flags), threads)
    return _picked(grads, specs, slots, flags, tensors)


class _Rowwise(torch.autograd.Function):
    """KL(p || q) row-wise (one spec: KL(p || N(0, I))); values from values(), the library's."""

    @staticmethod
    def forward(ctx, values, specs, slots, threads, *tensors):
        ctx.specs, ctx.slots, ctx.threads = specs, slots, threads
        ctx.save_for_backward(*tensors)
        return values()

    @staticmethod
    def backward(ctx, grad):
        tensors = ctx.saved_tensors
        flags = ctx.needs_input_grad[4:]
        specs = _respec(ctx.specs, ctx.slots, tensors)
        q = specs[1] if len(specs) > 1 else None
        if torch.is_grad_enabled():  # create_graph: differentiable gradients, in torch operations
            return (None, None, None, None,
                    *_torch_grads(_rowwise_values_of, specs, ctx.slots, tensors, flags, grad,
                                  create_graph=True))
        if _library_codes(specs[0][0], None if q is None else q[0]):
            return (None, None, None, None,
                    *_library_rowwise_grads(specs, ctx.slots, tensors, flags, grad, ctx.threads))
        return (None, None, None, None,
                *_torch_grads(_rowwise_values_of, specs, ctx.slots, tensors, flags, grad))


def _pair_specs(codes, tensors):
    """The specs and slots of row-wise KL of (codes[0], *tensors[:2]) against
    (codes[1], *tensors[2:]) (N(0, I) without them)."""
    specs = [(codes[0], *tensors[:2])] + ([(codes[1], *tensors[2:])] if len(tensors) > 2 else [])
    return specs, tuple((i // 2, 1 + i % 2) for i in range(len(tensors)))


def _rowwise_differentiable(codes, tensors, flags, grad):
    """create_graph: the gradients of row-wise KL of _pair_specs(codes, tensors), in torch
    operations."""
    specs, slots = _pair_specs(codes, tensors)
    return tuple(_torch_grads(_rowwise_values_of, specs, slots, tensors, flags, grad,
                              create_graph=True))


class _Kept(torch.autograd.Function):
    """Row-wise KL of diagonal tensors whose forward kept each pair's gradients (an _ext.Kept,
    made with the values in one pass): the first backward scales them by the upstream gradient in
    place and hands them over (sums them for an array of one row paired with every row)."""

    @staticmethod
    def forward(ctx, kept, *tensors):
        # The inputs are read only by a backward that differentiates them again: the Kept holds
        # them with their version counters, checked as torch checks saved tensors (cheaper than
        # save_for_backward in a training step, bench/README.md).
        ctx.kept = kept
        return kept.take_values()

    @staticmethod
    def backward(ctx, grad):
        grads = _ext.kept_backward(ctx.kept, grad)
        if grads is not None:
            return grads
        # create_graph (differentiable gradients, in torch operations), or a second backward
        # (retain_graph): the kept gradients went to the first, so the inputs are differentiated
        # again.
        kept = ctx.kept
        tensors, flags = _unchanged(ctx), ctx.needs_input_grad[1:]
        if torch.is_grad_enabled():
            return (None, *_rowwise_differentiable(kept.codes, tensors, flags, grad))
        specs, slots = _pair_specs(kept.codes, tensors)
        return (None, *_library_rowwise_grads(specs, slots, tensors, flags, grad, kept.threads))


def _unchanged(ctx):
    """A kept call's inputs, for a backward that differentiates them again; RuntimeError where
    one was modified in place since the call, as torch's saved tensors give."""
    tensors = ctx.kept.inputs
    op = "kl" if len(tensors) == 4 else "kl_standard_normal"
    for t, version in zip(tensors, ctx.kept.versions):
        if t._version != version:
            raise RuntimeError(
                f"[{op}] an input of shape {list(t.shape)} was modified by an in-place operation "
                f"after the call (it is at version {t._version}, expected {version}): a backward "
                "that differentiates the inputs again (create_graph, or a second backward) reads "
                "them as they were")
    return tensors


class _PairwiseDiag(torch.autograd.Function):
    """KL(p_i || q_j) of diagonal batches (one spec: q = p), values from the library."""

    @staticmethod
    def forward(ctx, values, specs, slots, threads, *tensors):
        ctx.specs, ctx.slots, ctx.threads = specs, slots, threads
        ctx.save_for_backward(*tensors)
        return values()

    @staticmethod
    def backward(ctx, grad):
        tensors = ctx.saved_tensors
        flags = ctx.needs_input_grad[4:]
        specs = _respec(ctx.specs, ctx.slots, tensors)
        if torch.is_grad_enabled():  # create_graph: differentiable gradients, in torch operations
            return (None, None, None, None,
                    *_torch_grads(_pairwise_values_of, specs, ctx.slots, tensors, flags, grad,
                                  create_graph=True))
        needs = _needs(specs, ctx.slots, flags)
        q = specs[1] if len(specs) > 1 else None
        grads = _ext.pairwise_kl_backward(specs[0], q, grad, needs, ctx.threads)
        if grads.__class__ is int:  # a batch no one stride describes: made contiguous first
            made = [contiguous(g)._spec for g in _gaussians(specs)]
            grads = _ext.pairwise_kl_backward(made[0], made[1] if q else None, grad, needs,
                                              ctx.threads)
        return (None, None, None, None, *_picked(grads, specs, ctx.slots, flags, tensors))


# Function.apply's Python wrapper costs a training step (bench/README.md); with no functorch
# transform active it ends in this C apply, after unwrapping dead functorch wrappers, which the
# step functions below do for their few tensors.
_C_APPLY = getattr(getattr(torch._C, "_FunctionBase", None), "__dict__", {}).get("apply")
_UNWRAP = getattr(getattr(torch._C, "_functorch", None), "unwrap_if_dead", None)
_TRANSFORMS = getattr(torch._C, "_are_functorch_transforms_active", None)
_FAST_APPLY = _C_APPLY is not None and _UNWRAP is not None and _TRANSFORMS is not None

# The training step's Functions, one per (codes, threads, budget, broadcast): made on first use.
_STEPS: dict = {}


def _step(key):
    """The training step's case, kept as short as it can be: every array a tensor, the pair the
    library differentiates, no jitter. key: (p's code, threads, budget, broadcast) or (p's code,
    q's code, threads, budget, broadcast); broadcast: the arrays' shapes differ, and gradients
    are summed down to them. A Function made once for these codes and options, so that its
    forward and backward take the tensors alone (each other argument of a Function costs on
    every call) and call the extension with nothing between; returned with its C apply."""
    step = _STEPS.get(key)
    if step is not None:
        return step
    *codes, threads, budget, broadcast = key
    pc = codes[0]
    if len(codes) == 1:
        def values(m, s):
            return _ext.kl_standard_normal((pc, m, s), threads, 0.0, budget, False, True)

        def library_grads(t, grad, flags):
            return _ext.kl_backward((pc, t[0], t[1]), None, grad, flags, threads)
    else:
        qc = codes[1]

        def values(m, s, n, r):
            return _ext.kl((pc, m, s), (qc, n, r), threads, 0.0, budget, False, True)

        def library_grads(t, grad, flags):
            return _ext.kl_backward((pc, t[0], t[1]), (qc, t[2], t[3]), grad, flags, threads)

    class Step(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *tensors):
            ctx.save_for_backward(*tensors)
            return values(*tensors)

        @staticmethod
        def backward(ctx, grad):
            tensors = ctx.saved_tensors
            if torch.is_grad_enabled():  # create_graph: in torch operations
                return _rowwise_differentiable(codes, tensors, ctx.needs_input_grad, grad)
            grads = library_grads(tensors, grad, ctx.needs_input_grad)
            if broadcast:
                return tuple(g if g is None or g.shape == t.shape else g.sum_to_size(t.shape)
                             for g, t in zip(grads, tensors))
            return tuple(grads)

    step = (Step, _C_APPLY.__get__(None, Step) if _FAST_APPLY else None)
    if len(_STEPS) < 256:  # a few combinations in practice; a budget varied per call is not kept
        _STEPS[key] = step
    return step


def _apply(step, *tensors):
    """A step Function's apply: its C apply when no functorch transform is active (what
    Function.apply ends in, after unwrapping dead functorch wrappers, as done here)."""
    function, c_apply = step
    if c_apply is None or _TRANSFORMS():
        return function.apply(*tensors)
    return c_apply(*map(_UNWRAP, tensors))


_KEPT_APPLY = _C_APPLY.__get__(None, _Kept) if _FAST_APPLY else None


def rowwise(op: str, p, q, threads: int, budget: int):
    """kl (q a batch) or kl_standard_normal (q None) with gradients, no jitter: the training
    step's path."""
    pa = p._spec
    if q is None:
        if (len(pa) == 3 and _arrays.native(pa[1]) == _arrays.native(pa[2]) == _arrays.TORCH
                and pa[0] in _LIBRARY_FAMILY):
            m, s = pa[1], pa[2]
            step = _STEPS.get((pa[0], threads, budget, m.shape != s.shape))
            if step is None:
                step = _step((pa[0], threads, budget, m.shape != s.shape))
            if step[1] is None or _TRANSFORMS():
                return step[0].apply(m, s)
            return step[1](_UNWRAP(m), _UNWRAP(s))
    else:
        qa = q._spec
        if (len(pa) == 3 and len(qa) == 3 and _library_codes(pa[0], qa[0])
                and _arrays.native(pa[1]) == _arrays.native(pa[2]) == _arrays.native(qa[1])
                == _arrays.native(qa[2]) == _arrays.TORCH):
            broadcast = not pa[1].shape == pa[2].shape == qa[1].shape == qa[2].shape
            return _apply(_step((pa[0], qa[0], threads, budget, broadcast)), pa[1], pa[2],
                          qa[1], qa[2])
    specs = (p._spec,) if q is None else (p._spec, q._spec)
    slots, tensors = _tensors(specs)
    if q is None:
        def values():
            return _ext.kl_standard_normal(p._spec, threads, 0.0, budget, False, True)
    else:
        def values():
            return _ext.kl(p._spec, q._spec, threads, 0.0, budget, False, True)
    return _Rowwise.apply(values, specs, slots, threads, *tensors)


def run(request):
    """The KL call of a gausskl._dispatch.Request whose tensors require grad."""
    op, p, q = request.op, request.p, request.q
    jittered = request.jitter.eps > 0 and any(g._spec[0] in _FACTORED for g in request.gaussians)
    diag_pairs = p._spec[0] in _DIAG and (q is None or q._spec[0] in _DIAG)
    if jittered or (op == "pairwise_kl" and not diag_pairs):
        request.unify()
        return _torch_path.run(request)
    specs = (p._spec,) if q is None else (p._spec, q._spec)
    slots, tensors = _tensors(specs)
    threads = request.threads

    def values():
        return request.values(request.library(for_grad=True))

    if op in ("kl", "kl_standard_normal"):
        return _Rowwise.apply(values, specs, slots, threads, *tensors)
    if op == "pairwise_kl":
        return _PairwiseDiag.apply(values, specs, slots, threads, *tensors)
    # knn_kl: the chosen pairs' values, differentiable through their row-wise KL.
    request.unify()
    indices, chosen = values()
    p = flat(request.p)
    q = p if request.q is None else flat(request.q)
    k = indices.shape[-1]
    rows = torch.arange(p.n, device=indices.device).repeat_interleave(k)
    cols = indices.reshape(-1)
    pairs = (p._replace([a[rows] for a in p._spec[1:]])._spec,
             q._replace([a[cols] for a in q._spec[1:]])._spec)
    slots, tensors = _tensors(pairs)
    flat_values = chosen.reshape(-1)
    values_of_pairs = _Rowwise.apply(lambda: flat_values.clone(), pairs, slots, threads, *tensors)
    return indices, values_of_pairs.reshape(chosen.shape)
