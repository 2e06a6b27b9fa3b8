"""torch.compile(fullgraph=True) and torch.func.vmap of every kind and op (gk.divergence,
gk.pairwise, gk.knn; the torch custom operators of gausskl._compile), with gradients: the eager
call's values and gradients, a loop's under vmap, and the operators' gradients against
torch.autograd.gradcheck's finite differences.

One compiled function per family computes every kind and op, each case on its own copies of
the inputs, so that one compile and one backward pass serve every case (a compile takes seconds;
the kind is a constant the graph is specialized on)."""

import numpy as np
import pytest

import gausskl as gk
from conftest import needs_torch

pytestmark = needs_torch

torch = pytest.importorskip("torch")

KINDS = [("kl", None), ("jeffreys", None), ("bhattacharyya", None), ("hellinger", None),
         ("wasserstein2", None), ("renyi", 0.5), ("renyi", 2.0)]
# pairwise of p with itself (the mirrored symmetric matrix, its zero diagonal); knn against q
OPS = ("divergence", "pairwise", "knn")
FAMILIES = ("diag", "full", "low_rank")
N, M, D, K, V = 3, 4, 2, 2, 2  # p rows, q rows, dimension, neighbours, vmapped batches


def _kind_id(kind):
    name, alpha = kind
    return name if alpha is None else f"{name}{alpha:g}"


def arrays(family, n, lead=(), seed=0, wide=False):
    """Float64 arrays of n Gaussians (with leading axes `lead`); wide: variances in [3, 4] (q of
    renyi of order 2, whose mixed covariance 2 S_q - S_p must be positive definite), else in
    [0.5, 1.2]."""
    rng = np.random.default_rng(seed)
    shape = (*lead, n, D)
    lo, hi = (3.0, 4.0) if wide else (0.5, 1.2)
    mean = rng.normal(size=shape)
    if family == "diag":
        out = [mean, np.sqrt(rng.uniform(lo, hi, size=shape))]
    elif family == "full":  # packed rows of L, log of its diagonal: every entry free
        packed = 0.1 * rng.normal(size=(*shape[:-1], D * (D + 1) // 2))
        diagonal = [i * (i + 3) // 2 for i in range(D)]
        packed[..., diagonal] = 0.5 * np.log(rng.uniform(lo, hi, size=shape))
        out = [mean, packed]
    else:
        factor = 0.2 * rng.normal(size=(*shape, 1))
        out = [mean, factor, rng.uniform(lo, hi, size=shape)]
    return [torch.tensor(a) for a in out]


def batch(family, xs):
    if family == "diag":
        return gk.DiagGaussian(xs[0], std=xs[1])
    if family == "full":
        return gk.FullGaussian(xs[0], packed_scale_tril=xs[1], log_diagonal=True)
    return gk.LowRankGaussian(xs[0], cov_factor=xs[1], cov_diag=xs[2])


def call(op, kind, family, p_arrays, q_arrays):
    """One op of one kind (knn: its values; its indices are checked by the vmap test)."""
    name, alpha = kind
    p = batch(family, p_arrays)
    if op == "divergence":
        return gk.divergence(p, batch(family, q_arrays), name, alpha)
    if op == "pairwise":
        return gk.pairwise(p, kind=name, alpha=alpha)
    return gk.knn(p, batch(family, q_arrays), K, kind=name, alpha=alpha)[1]


def call_indices(op, kind, family, p_arrays, q_arrays):
    name, alpha = kind
    return gk.knn(batch(family, p_arrays), batch(family, q_arrays), K, kind=name,
                  alpha=alpha)[0]


def same(kind, op, family, a, b) -> bool:
    """Bit-identical, except KL's all pairs of other families than diagonal: eager with gradients
    they are the torch path's values and gradients (gk.pairwise_kl's contract), the operator's
    the library's values and another torch form's gradients; they agree to rounding."""
    if kind[0] == "kl" and op == "pairwise" and family != "diag":
        return torch.allclose(a, b, rtol=1e-13, atol=1e-15)
    return torch.equal(a, b)


# renyi of order 2 is finite only where q dominates p: not among p's own pairs
CASES = [(k, op) for k in KINDS for op in OPS if not (k == ("renyi", 2.0) and op == "pairwise")]
IDS = [f"{_kind_id(k)}-{op}" for k, op in CASES]


def inputs(family, op, lead=()):
    """(p, q) arrays: q has M rows for knn, N for divergence, none for pairwise (q = p)."""
    p = arrays(family, N, lead, seed=1)
    if op == "pairwise":
        return p, []
    return p, arrays(family, M if op == "knn" else N, lead, seed=2, wide=True)


def everything(family, *flat):
    """Every case's output, in CASES order, each from its own (p, q) in flat."""
    outs, at, n = [], 0, 3 if family == "low_rank" else 2
    for kind, op in CASES:
        xs = flat[at:at + (n if op == "pairwise" else 2 * n)]
        at += len(xs)
        outs.append(call(op, kind, family, xs[:n], xs[n:]))
    return outs


def outputs_and_grads(family, fn):
    """fn's outputs and, per case, the gradients of its (ramp-weighted) output sum."""
    leaves, sizes = [], []
    for _, op in CASES:
        p, q = inputs(family, op)
        leaves += [x.requires_grad_() for x in p + q]
        sizes.append(len(p) + len(q))
    outs = fn(family, *leaves)
    loss = sum((torch.linspace(0.5, 1.5, o.numel(), dtype=o.dtype).reshape(o.shape) * o).sum()
               for o in outs)
    loss.backward()
    grads, at = [], 0
    for n in sizes:
        grads.append([torch.zeros_like(x) if x.grad is None else x.grad
                      for x in leaves[at:at + n]])
        at += n
    return [o.detach() for o in outs], grads


@pytest.mark.parametrize("family", FAMILIES)
def test_compile_forward_and_backward(family):
    """Every kind and op under torch.compile(fullgraph=True): values bit-identical (the operator
    runs the eager call), gradients bit-identical (its backward operator differentiates the
    formula an eager backward differentiates)."""
    torch._dynamo.reset()
    eager_out, eager_grads = outputs_and_grads(family, everything)
    f = torch.compile(everything, fullgraph=True, dynamic=False)
    comp_out, comp_grads = outputs_and_grads(family, f)
    torch._dynamo.reset()
    bad = [f"{i}: {'values' if not same(*c, family, a, b) else 'gradients'}"
           for i, c, a, b, ga, gb in zip(IDS, CASES, comp_out, eager_out, comp_grads, eager_grads)
           if not (same(*c, family, a, b)
                   and all(same(*c, family, x, y) for x, y in zip(ga, gb)))]
    assert not bad, bad


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind,op", CASES, ids=IDS)
def test_vmap_is_the_loop(family, kind, op):
    """vmap over a leading axis of V batches: the loop's values (and knn's indices), and
    torch.autograd's gradients through the vmapped call those of the loop."""
    p, q = inputs(family, op, lead=(V,))
    n = len(p)
    results = []
    for vmapped in (True, False):
        leaves = [x.detach().clone().requires_grad_() for x in p + q]
        if vmapped:
            out = torch.func.vmap(lambda *xs: call(op, kind, family, xs[:n], xs[n:]))(*leaves)
        else:
            out = torch.stack([call(op, kind, family, [x[v] for x in leaves[:n]],
                                    [x[v] for x in leaves[n:]]) for v in range(V)])
        w = torch.linspace(0.5, 1.5, out.numel(), dtype=out.dtype).reshape(out.shape)
        results.append((out.detach(), torch.autograd.grad((w * out).sum(), leaves)))
    (v1, g1), (v2, g2) = results
    assert same(kind, op, family, v1, v2)
    for a, b in zip(g1, g2):
        assert same(kind, op, family, a, b)
    if op == "knn":
        got = torch.func.vmap(lambda *xs: call_indices(op, kind, family, xs[:n], xs[n:]))(
            *p, *q)
        want = torch.stack([call_indices(op, kind, family, [x[v] for x in p],
                                         [x[v] for x in q]) for v in range(V)])
        assert got.dtype == torch.int64 and torch.equal(got, want)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind,op", CASES, ids=IDS)
def test_operator_gradients_against_finite_differences(family, kind, op):
    """The gradients compile and vmap use (the operators' registered backward; KL's own
    operators through the eager call), float64, against gradcheck's finite differences."""
    from gausskl import _compile

    p, q = inputs(family, op)
    n = len(p)
    name, alpha = kind
    a = 0.0 if alpha is None else alpha
    if name == "kl":
        def fn(*xs):
            return call(op, kind, family, xs[:n], xs[n:])
    else:
        def fn(*xs):
            pg = batch(family, xs[:n])
            qg = batch(family, xs[n:]) if xs[n:] else None
            if op == "divergence":
                return _compile.divergence(name, a, pg, qg, 0.0, 0, 0)
            if op == "pairwise":
                return _compile.pairwise(name, a, pg, None, 0.0, 0.0, 0, 0)
            return _compile.knn(name, a, pg, qg, K, False, 0.0, 0.0, 0, 0)[1]
    leaves = [x.requires_grad_() for x in p + q]
    assert torch.autograd.gradcheck(fn, leaves, eps=1e-6, atol=1e-6, rtol=1e-5, fast_mode=True)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind,op", CASES, ids=IDS)
def test_vmap_of_grad(family, kind, op):
    """torch.func.vmap(torch.func.grad(loss)): each batch's gradients those of an eager
    backward pass over it."""
    p, q = inputs(family, op, lead=(V,))
    n = len(p)

    def loss(*xs):
        out = call(op, kind, family, xs[:n], xs[n:])
        return (torch.linspace(0.5, 1.5, out.numel(), dtype=out.dtype).reshape(out.shape)
                * out).sum()

    got = torch.func.vmap(torch.func.grad(loss, argnums=tuple(range(len(p + q)))))(*p, *q)
    for v in range(V):
        leaves = [x[v].clone().requires_grad_() for x in p + q]
        want = torch.autograd.grad(loss(*leaves), leaves)
        for a, b in zip(got, want):
            assert same(kind, op, family, a[v], b)
