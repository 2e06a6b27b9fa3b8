"""Gradients for torch tensors with requires_grad, the values computed by the C++ library.

* Row-wise KL (and KL to N(0, I)) of diagonal batches, and of full batches given by scale_tril
  or packed_scale_tril: the library's gradients (gausskl/gradients.hpp), one pass each way.
  Other families and mixed pairs: the backward differentiates the same formulas written in
  torch operations (gausskl._torch_path) at the saved inputs.
* All-pairs KL of diagonal batches: the library's gradients (no [N, M, D]).
* knn_kl: the values, as the library chose and re-scored them, differentiable through the
  row-wise KL of the chosen pairs.
* Everything else with gradients runs in torch operations forward and backward (the torch
  path): all-pairs KL of other families, and calls with a jitter on matrices the library would
  factor (a backward factoring again could jitter other matrices than the forward did).

Gradients come back in each tensor's shape: the library's, made over the broadcast batch, are
summed down to the shape of an array that was broadcast.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from gausskl import _arrays
from gausskl._distributions import CODES

# Codes the library differentiates, by family (diagonal; full given by a triangular factor).
_LIBRARY_FAMILY = {CODES["std"]: "diag", CODES["var"]: "diag", CODES["logvar"]: "diag",
                   CODES["precision"]: "diag", CODES["scale_tril"]: "tril",
                   CODES["packed_scale_tril"]: "tril", CODES["packed_log_diagonal"]: "tril"}
_DIAG = frozenset(c for c, f in _LIBRARY_FAMILY.items() if f == "diag")
_FACTORED = frozenset((CODES["covariance"], CODES["precision_matrix"]))


def library_rowwise(p, q) -> bool:
    """Whether the library computes the row-wise gradients of this pair (q None: N(0, I))."""
    fp = _LIBRARY_FAMILY.get(p._spec[0])
    return fp is not None and (q is None or _LIBRARY_FAMILY.get(q._spec[0]) == fp)


def _slots(gs):
    """(side, array) of every tensor among the batches' arrays, and the tensors."""
    slots, tensors = [], []
    for gi, g in enumerate(gs):
        for k, a in enumerate(g._spec[1:]):
            if _arrays.is_torch(a):
                slots.append((gi, k))
                tensors.append(a)
    return slots, tensors


def _rebuild(gs, slots, tensors):
    arrays = [list(g._spec[1:]) for g in gs]
    for (gi, k), t in zip(slots, tensors):
        arrays[gi][k] = t
    return [g._replace(a) for g, a in zip(gs, arrays)]


def _needs(gs, slots, flags):
    """The extension's needs tuple: one flag per array of the batches, in spec order."""
    needs = [[False] * (len(g._spec) - 1) for g in gs]
    for (gi, k), flag in zip(slots, flags):
        needs[gi][k] = bool(flag)
    return tuple(x for side in needs for x in side)


def _summed(grads, gs, slots, flags):
    """The extension's gradients (spec order, None where not wanted) for the tensors, each
    summed down to its tensor's shape."""
    offsets, at = [], 0
    for g in gs:
        offsets.append(at)
        at += len(g._spec) - 1
    out = []
    for (gi, k), flag in zip(slots, flags):
        g = grads[offsets[gi] + k] if flag else None
        if g is not None:
            a = gs[gi]._spec[1 + k]
            if g.shape != a.shape:
                g = g.sum_to_size(a.shape)
            if g.dtype != a.dtype:
                g = g.to(a.dtype)
        out.append(g)
    return out


def _torch_grads(fn, gs, slots, tensors, flags, grad):
    """Gradients of sum(grad * fn(*batches)) for the flagged tensors, by torch.autograd through
    fn written in torch operations."""
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_(bool(f)) for t, f in zip(tensors, flags)]
        rebuilt = _rebuild(gs, slots, leaves)
        out = fn(*rebuilt)
        wanted = [t for t, f in zip(leaves, flags) if f]
        got = iter(torch.autograd.grad(out, wanted, grad.to(out.dtype), allow_unused=True))
    result = []
    for t, f in zip(tensors, flags):
        g = next(got) if f else None
        if f and g is None:
            g = torch.zeros_like(t)
        result.append(None if g is None else g.to(t.dtype))
    return result


class _Rowwise(torch.autograd.Function):
    """KL(p || q) row-wise (q None: N(0, I)); values from values(), the library's."""

    @staticmethod
    def forward(ctx, values, gs, slots, threads, *tensors):
        ctx.gs, ctx.slots, ctx.threads = gs, slots, threads
        ctx.save_for_backward(*tensors)
        return values()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        from gausskl import _ext, _torch_path

        tensors = ctx.saved_tensors
        flags = ctx.needs_input_grad[4:]
        gs = _rebuild(ctx.gs, ctx.slots, tensors)
        p, q = gs[0], (gs[1] if len(gs) > 1 else None)
        if library_rowwise(p, q):
            grads = _ext.kl_backward(p._spec, None if q is None else q._spec, grad,
                                     _needs(gs, ctx.slots, flags), ctx.threads)
            return (None, None, None, None, *_summed(grads, gs, ctx.slots, flags))
        return (None, None, None, None,
                *_torch_grads(_torch_path.rowwise_values, gs, ctx.slots, tensors, flags, grad))


class _PairwiseDiag(torch.autograd.Function):
    """KL(p_i || q_j) of diagonal batches (q None: q = p), values from the library."""

    @staticmethod
    def forward(ctx, values, gs, slots, threads, *tensors):
        ctx.gs, ctx.slots, ctx.threads = gs, slots, threads
        ctx.save_for_backward(*tensors)
        return values()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        from gausskl import _ext

        tensors = ctx.saved_tensors
        flags = ctx.needs_input_grad[4:]
        gs = _rebuild(ctx.gs, ctx.slots, tensors)
        self_pairs = len(gs) == 1
        specs = [g._spec for g in gs]
        needs = _needs(gs, ctx.slots, flags)
        grads = _ext.pairwise_kl_backward(specs[0], None if self_pairs else specs[1], grad, needs,
                                          ctx.threads)
        if grads.__class__ is int:  # a batch no one stride describes: made contiguous first
            from gausskl._ops import _contiguous

            flat = [_contiguous(g) for g in gs]
            grads = _ext.pairwise_kl_backward(flat[0]._spec,
                                              None if self_pairs else flat[1]._spec, grad, needs,
                                              ctx.threads)
        return (None, None, None, None, *_summed(grads, gs, ctx.slots, flags))


def _flat(g):
    """g with its batch as one axis of N rows (torch operations: views where they can be)."""
    ranks = g._event_ranks()
    n = g.n
    arrays = []
    for a, r in zip(g._spec[1:], ranks):
        event = tuple(a.shape[a.ndim - r:])
        arrays.append(a.expand(*g._batch, *event).reshape(n, *event))
    return g._replace(arrays)


def run(request):
    """The call of a gausskl._ops._Request whose tensors require grad."""
    from gausskl import _torch_path

    request.unify()
    op, gs = request.op, request.gaussians
    jittered = request.jitter.eps > 0 and any(g._spec[0] in _FACTORED for g in gs)
    diag_pairs = all(g._spec[0] in _DIAG for g in gs)
    if jittered or (op == "pairwise_kl" and not diag_pairs):
        return _torch_path.run(request)
    slots, tensors = _slots(gs)
    threads = request.threads
    if op in ("kl", "kl_standard_normal"):
        return _Rowwise.apply(lambda: request.values(request.library(for_grad=True)), gs, slots,
                              threads, *tensors)
    if op == "pairwise_kl":
        return _PairwiseDiag.apply(lambda: request.values(request.library(for_grad=True)), gs,
                                   slots, threads, *tensors)
    # knn_kl: the chosen pairs' values, differentiable through their row-wise KL.
    indices, values = request.values(request.library(for_grad=True))
    p = _flat(request.p)
    q = p if request.q is None else _flat(request.q)
    k = indices.shape[-1]
    rows = torch.arange(p.n, device=indices.device).repeat_interleave(k)
    cols = indices.reshape(-1)
    pairs = [p._replace([a[rows] for a in p._spec[1:]]),
             q._replace([a[cols] for a in q._spec[1:]])]
    slots, tensors = _slots(pairs)
    flat_values = values.reshape(-1)
    chosen = _Rowwise.apply(lambda: flat_values.clone(), pairs, slots, threads, *tensors)
    return indices, chosen.reshape(values.shape)
