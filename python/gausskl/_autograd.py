"""Gradients for torch tensors with requires_grad, when the forward runs in the C++ library.

* Row-wise KL (every family pair, and KL to N(0, I)): the forward is the library's; the backward
  differentiates the same formulas written in torch ops (gausskl._torch_path) at the saved
  inputs, so every parameterization of every family gets exact gradients.
* Pairwise KL of diagonal Gaussians: the backward is GEMMs (DESIGN section 2), with the means
  centred first; nothing of size [N, M, D] is formed. With G = dL/dKL [N, M], lam = 1/w:
      dL/dmu = mu * (G lam) - G (nu lam)
      dL/dv  = 1/2 [ (G lam) - rowsum(G) / v ]
      dL/dnu = lam * (nu * colsum(G) - G' mu)
      dL/dw  = 1/2 [ colsum(G) lam - lam^2 (G'(v + mu^2) - 2 nu (G' mu) + nu^2 colsum(G)) ]
  then chained to the parameterization given (std, var, logvar, precision).
* No jitter here: a backward factoring again could jitter other matrices than the library's
  forward did, so calls with jitter > 0 and matrices to factor take their gradients through
  gausskl._torch_path, forward included (see gausskl._ops._Call).
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from gausskl import _torch_path


def _tensors_of(gs):
    """The torch tensors among the batches' arrays, and where each came from."""
    slots, tensors = [], []
    for gi, g in enumerate(gs):
        for name, a in g.arrays.items():
            if isinstance(a, torch.Tensor):
                slots.append((gi, name))
                tensors.append(a)
    return slots, tensors


def _rebuild(gs, slots, tensors):
    arrays = [dict(g.arrays) for g in gs]
    for (gi, name), t in zip(slots, tensors):
        arrays[gi][name] = t
    return [g._replace(a) for g, a in zip(gs, arrays)]


class _RowwiseKL(torch.autograd.Function):
    @staticmethod
    def forward(ctx, forward, gs, slots, *tensors):
        ctx.gs, ctx.slots = gs, slots
        ctx.save_for_backward(*tensors)
        return forward()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        saved = ctx.saved_tensors
        need = ctx.needs_input_grad[3:]
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_(n) for t, n in zip(saved, need)]
            gs = _rebuild(ctx.gs, ctx.slots, leaves)
            p, q = gs[0], (gs[1] if len(gs) > 1 else None)
            dtype = _torch_path.compute_dtype(p.arrays["mean"].device)
            P = _torch_path.Side("kl", "p", p, dtype)
            Q = _torch_path.Side("kl", "q", q, dtype) if q is not None else None
            out = _torch_path._pair_rowwise(P, Q)
            wanted = [t for t, n in zip(leaves, need) if n]
            grads = iter(torch.autograd.grad(out, wanted, grad.to(out.dtype), allow_unused=True))
        result = []
        for t, n in zip(saved, need):
            g = next(grads) if n else None
            if n and g is None:
                g = torch.zeros_like(t)
            result.append(g.to(t.dtype) if g is not None else None)
        return (None, None, None, *result)


def rowwise(forward, gs):
    """forward() computes the values (C++); gradients flow to every tensor of the batches gs
    (gs = [p, q] or [p] for KL to N(0, I))."""
    slots, tensors = _tensors_of(gs)
    return _RowwiseKL.apply(forward, gs, slots, *tensors)


def _variance_and_chain(param, s):
    """v(s) and dv/ds for a diagonal parameterization."""
    if param == "std":
        return s * s, 2.0 * s
    if param == "var":
        return s, torch.ones_like(s)
    if param == "logvar":
        v = torch.exp(s)
        return v, v
    v = 1.0 / s
    return v, -v * v


class _PairwiseDiagKL(torch.autograd.Function):
    @staticmethod
    def forward(ctx, forward, params, mu, sp, nu, sq):
        ctx.params = params
        ctx.save_for_backward(mu, sp, nu, sq)
        return forward()

    @staticmethod
    @once_differentiable
    def backward(ctx, G):
        mu0, sp0, nu0, sq0 = ctx.saved_tensors
        dtype = _torch_path.compute_dtype(mu0.device)
        mu, sp, nu, sq, G = (t.detach().to(dtype) for t in (mu0, sp0, nu0, sq0, G))
        v, dv = _variance_and_chain(ctx.params[0], sp)
        w, dw = _variance_and_chain(ctx.params[1], sq)
        lam = 1.0 / w
        centre = nu.mean(0, keepdim=True)
        mu, nu = mu - centre, nu - centre
        rows, cols = G.sum(1), G.sum(0)
        GL = G @ lam
        g_mu = mu * GL - G @ (nu * lam)
        g_v = 0.5 * (GL - rows[:, None] / v)
        Gt_mu = G.T @ mu
        Gt_a = G.T @ (v + mu * mu)
        g_nu = lam * (nu * cols[:, None] - Gt_mu)
        g_w = 0.5 * (cols[:, None] * lam
                     - lam * lam * (Gt_a - 2.0 * nu * Gt_mu + nu * nu * cols[:, None]))
        need = ctx.needs_input_grad[2:]
        grads = [g_mu, g_v * dv, g_nu, g_w * dw]
        return (None, None, *[g.to(t.dtype) if n else None
                              for g, t, n in zip(grads, (mu0, sp0, nu0, sq0), need)])


def pairwise_diag(forward, p, q):
    """forward() computes the [N, M] values (C++); q None means q = p."""
    q_ = p if q is None else q
    return _PairwiseDiagKL.apply(forward, (p.param, q_.param), p.arrays["mean"], p.arrays["scale"],
                                 q_.arrays["mean"], q_.arrays["scale"])
