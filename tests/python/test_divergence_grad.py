"""Gradients of gk.divergence, gk.pairwise and gk.knn for every kind other than kl and every
family pair, and the torch path of those kinds (gausskl._divergence_torch).

* torch.autograd.gradcheck in float64 (finite differences of the values against the backward),
  row-wise, every kind x the 9 family pairs x two parameterization pairs each, on the library
  path (the library's values forward, the torch formula's gradient backward) and on the torch
  path (both from the formula).
* all pairs and knn: gradients equal to those of gk.divergence on the same pairs (the row-wise
  formula), q given and q = p, with a memory budget that makes the backward work in chunks.
* the torch path's values against the library's (random, offset, near-duplicate 1e-4 and 1e-8
  data, every kind x family pair, row-wise, all pairs, knn), as |got - exact| / (|exact| + 1).
* Renyi of order > 1 whose mixed covariance is not positive definite: the torch path's error
  names the row (p row and q row) as the library's does.
"""

import math
import re

import numpy as np
import pytest

import gausskl as gk
from conftest import needs_torch

torch = pytest.importorskip("torch")
pytestmark = needs_torch

KINDS = [("jeffreys", None), ("bhattacharyya", None), ("hellinger", None),
         ("wasserstein2", None), ("renyi", 0.5), ("renyi", 1.5)]
FAMILIES = ["diag", "full", "low_rank"]
# Two parameterizations of each family, paired in turn over the family pairs.
PARAMS = {"diag": [("std",), ("logvar",), ("var",), ("precision",)],
          "full": [("scale_tril",), ("covariance",), ("precision_matrix",), ("packed", True),
                   ("packed", False)],
          "low_rank": [("cov_factor",)]}


def _dense(rng, family, n, d, scale, r=2):
    """(mean, L) of a random batch, L L' its covariance (times scale), in float64 numpy."""
    mean = rng.normal(size=(n, d))
    if family == "diag":
        return mean, np.sqrt(scale * rng.uniform(0.5, 2.0, (n, d)))
    if family == "full":
        a = rng.normal(size=(n, d, d)) / math.sqrt(d)
        return mean, np.linalg.cholesky(scale * (a @ a.transpose(0, 2, 1) + 0.5 * np.eye(d)))
    w = math.sqrt(scale) * rng.normal(size=(n, d, r)) / math.sqrt(r)
    return mean, (w, scale * rng.uniform(0.5, 2.0, (n, d)))


def _raw(family, param, mean, L):
    """The tensors a parameterization takes (float64, leaves) from (mean, L)."""
    t = lambda x: torch.tensor(x, dtype=torch.float64)  # noqa: E731
    if family == "diag":
        v = L * L
        x = {"std": L, "var": v, "logvar": np.log(v), "precision": 1 / v}[param[0]]
        return [t(mean), t(x)]
    if family == "low_rank":
        return [t(mean), t(L[0]), t(L[1])]
    if param[0] == "scale_tril":
        return [t(mean), t(L)]
    S = L @ L.transpose(0, 2, 1)
    if param[0] == "covariance":
        return [t(mean), t(0.5 * (S + S.transpose(0, 2, 1)))]
    if param[0] == "precision_matrix":
        P = np.linalg.inv(S)
        return [t(mean), t(0.5 * (P + P.transpose(0, 2, 1)))]
    d = L.shape[-1]
    rows, cols = np.tril_indices(d)
    e = L[:, rows, cols].copy()
    if param[1]:  # log diagonal
        diag = [k for k, (a, b) in enumerate(zip(rows, cols)) if a == b]
        e[:, diag] = np.log(e[:, diag])
    return [t(mean), t(e)]


def _build(family, param, x):
    """The Gaussian of the raw tensors x (the matrices made symmetric / lower triangular here,
    so that finite differences of any entry move a valid parameter)."""
    if family == "diag":
        return gk.DiagGaussian(x[0], **{param[0]: x[1]})
    if family == "low_rank":
        return gk.LowRankGaussian(x[0], cov_factor=x[1], cov_diag=x[2])
    if param[0] == "scale_tril":
        return gk.FullGaussian(x[0], scale_tril=torch.tril(x[1]))
    if param[0] in ("covariance", "precision_matrix"):
        return gk.FullGaussian(x[0], **{param[0]: 0.5 * (x[1] + x[1].transpose(-1, -2))})
    return gk.FullGaussian(x[0], packed_scale_tril=x[1], log_diagonal=param[1])


def _cases():
    out = []
    for i, fp in enumerate(FAMILIES):
        for j, fq in enumerate(FAMILIES):
            for c in range(2):
                pp = PARAMS[fp][(c + j) % len(PARAMS[fp])]
                pq = PARAMS[fq][(c + i + 1) % len(PARAMS[fq])]
                out.append((fp, pp, fq, pq))
    return out


CASES = _cases()


def _case_id(case):
    fp, pp, fq, pq = case
    return f"{fp}-{'_'.join(map(str, pp))}/{fq}-{'_'.join(map(str, pq))}"


def _inputs(rng, fp, pp, fq, pq, n=2, d=3, renyi_above_one=False):
    # For renyi of order > 1, q wider than p so that 1.5 S_q - 0.5 S_p is positive definite.
    sp, sq = (0.1, 1.0) if renyi_above_one else (1.0, 1.0)
    xp = _raw(fp, pp, *_dense(rng, fp, n, d, sp))
    xq = _raw(fq, pq, *_dense(rng, fq, n, d, sq))
    return xp, xq


@pytest.mark.parametrize("torch_path", [False, True])
@pytest.mark.parametrize("kind,alpha", KINDS)
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_rowwise_gradcheck(rng, case, kind, alpha, torch_path):
    fp, pp, fq, pq = case
    xp, xq = _inputs(rng, fp, pp, fq, pq, renyi_above_one=alpha == 1.5)
    k = len(xp)

    def f(*x):
        return gk.divergence(_build(fp, pp, x[:k]), _build(fq, pq, x[k:]), kind, alpha,
                             torch_path=torch_path)

    leaves = [x.requires_grad_() for x in xp + xq]
    value = f(*leaves)
    exact = gk.divergence(_build(fp, pp, [x.detach() for x in xp]),
                          _build(fq, pq, [x.detach() for x in xq]), kind, alpha)
    if torch_path:
        assert float(((value.detach() - exact).abs() / (exact.abs() + 1)).max()) < 1e-13
    else:
        assert torch.equal(value.detach(), exact)  # the library's values
    assert torch.autograd.gradcheck(f, leaves, eps=1e-6, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("kind,alpha", KINDS[:5])
@pytest.mark.parametrize("param", ["covariance", "precision_matrix"])
def test_matrix_gradients_are_symmetric(rng, kind, alpha, param):
    """As gk.kl's (gausskl._torch_path._symmetric_from_lower): the gradient of (C + C') / 2, so
    that a step of gradient descent keeps the matrix symmetric."""
    m, C = _raw("full", (param,), *_dense(rng, "full", 3, 4, 1.0))
    q = gk.DiagGaussian(torch.zeros(3, 4, dtype=torch.float64),
                        std=torch.ones(3, 4, dtype=torch.float64))
    C.requires_grad_()
    gk.divergence(gk.FullGaussian(m, **{param: C}), q, kind, alpha).sum().backward()
    assert torch.equal(C.grad, C.grad.transpose(-1, -2))
    kl_grad = torch.autograd.grad(gk.kl(gk.FullGaussian(m, **{param: C}), q).sum(), C)[0]
    assert torch.equal(kl_grad, kl_grad.transpose(-1, -2))


def _grads(out, leaves, w):
    return torch.autograd.grad((out * w).sum(), leaves)


@pytest.mark.parametrize("torch_path", [False, True])
@pytest.mark.parametrize("self_pairs", [False, True])
@pytest.mark.parametrize("kind,alpha", KINDS[:5])
@pytest.mark.parametrize("case", CASES[::2], ids=_case_id)
def test_pairs_gradients_are_the_rowwise_ones(rng, monkeypatch, case, kind, alpha, self_pairs,
                                              torch_path):
    from gausskl import _divergence_torch

    # The backward in chunks of a few pairs (of 1 for dense sides); a budget too where the
    # library's tiled kinds (two diagonal sides) do not need more than it for their panels.
    monkeypatch.setattr(_divergence_torch, "DIRECT_CHUNK_BYTES", 2000)
    fp, pp, fq, pq = case
    if self_pairs:
        fq, pq = fp, pp
    n, m, d, k = 5, 4, 3, 2
    xp = _raw(fp, pp, *_dense(rng, fp, n, d, 1.0))
    xq = xp if self_pairs else _raw(fq, pq, *_dense(rng, fq, m, d, 1.0))
    m = n if self_pairs else m
    leaves = [x.requires_grad_() for x in (xp if self_pairs else xp + xq)]
    P, Q = _build(fp, pp, xp), None if self_pairs else _build(fq, pq, xq)
    budget = 0 if fp == fq == "diag" else 40000
    out = gk.pairwise(P, Q, kind, alpha, memory_budget=budget, torch_path=torch_path)
    want_values = gk.pairwise(_build(fp, pp, [x.detach() for x in xp]),
                              None if self_pairs else _build(fq, pq, [x.detach() for x in xq]),
                              kind, alpha)
    if torch_path:
        assert float(((out.detach() - want_values).abs() / (want_values.abs() + 1)).max()) < 1e-13
    else:
        assert torch.equal(out.detach(), want_values)
    w = torch.tensor(rng.normal(size=(n, m)))
    if self_pairs:
        w.fill_diagonal_(0.0)  # (the zero diagonal's gradient is 0; the row-wise one too)
    ii = torch.arange(n).repeat_interleave(m)
    jj = torch.arange(m).repeat(n)
    rows = gk.divergence(_build(fp, pp, [x[ii] for x in xp]), _build(fq, pq, [x[jj] for x in xq]),
                         kind, alpha)
    want = _grads(rows, leaves, w.reshape(-1))
    got = _grads(out, leaves, w)
    for g, h in zip(got, want):
        torch.testing.assert_close(g, h, rtol=1e-10, atol=1e-12)

    P, Q = _build(fp, pp, xp), None if self_pairs else _build(fq, pq, xq)
    idx, vals = gk.knn(P, Q, k=k, kind=kind, alpha=alpha, exclude_self=self_pairs,
                       memory_budget=budget, torch_path=torch_path)
    wk = torch.tensor(rng.normal(size=(n, k)))
    ik = torch.arange(n).repeat_interleave(k)
    jk = idx.reshape(-1)
    rows = gk.divergence(_build(fp, pp, [x[ik] for x in xp]), _build(fq, pq, [x[jk] for x in xq]),
                         kind, alpha)
    # (the library's tiled kinds of two diagonal sides: within its tolerance, 1e-13 (|D| + 1))
    torch.testing.assert_close(vals.detach().reshape(-1), rows.detach(), rtol=1e-12, atol=1e-12)
    for g, h in zip(_grads(vals, leaves, wk), _grads(rows, leaves, wk.reshape(-1))):
        torch.testing.assert_close(g, h, rtol=1e-10, atol=1e-12)


def test_pairwise_gradients_with_batch_shapes_and_float32(rng):
    m = torch.tensor(rng.normal(size=(2, 3, 4)), dtype=torch.float32, requires_grad=True)
    s = torch.tensor(rng.uniform(0.5, 2, (2, 3, 4)), dtype=torch.float32, requires_grad=True)
    C = torch.tensor(np.linalg.cholesky(np.eye(4) + 0.1 * np.ones((4, 4))), dtype=torch.float32)
    mq = torch.tensor(rng.normal(size=(5, 4)), dtype=torch.float32)
    q = gk.FullGaussian(mq, scale_tril=C.expand(5, 4, 4))
    out = gk.pairwise(gk.DiagGaussian(m, std=s), q, "bhattacharyya")
    assert out.shape == (2, 3, 5) and out.dtype == torch.float32
    g = torch.autograd.grad(out.sum(), (m, s))
    p64 = gk.DiagGaussian(m.detach().double().requires_grad_(), std=s.detach().double()
                          .requires_grad_())
    q64 = gk.FullGaussian(mq.double(), scale_tril=C.double().expand(5, 4, 4))
    h = torch.autograd.grad(gk.pairwise(p64, q64, "bhattacharyya").sum(),
                            (p64.mean, p64.scale))
    for a, b in zip(g, h):
        assert a.dtype == torch.float32
        torch.testing.assert_close(a.double(), b, rtol=1e-5, atol=1e-6)


# -- the torch path's values against the library's ------------------------------------------------
def _data(rng, family, n, d, level, offset):
    """(p, q) raw parameters (numpy) of the same family: q random, or a near-duplicate of p at
    relative `level`; means offset by `offset`."""
    mean, L = _dense(rng, family, n, d, 1.0)
    mean = mean + offset
    if level is None:
        mq, Lq = _dense(rng, family, n, d, 1.0)
        return (mean, L), (mq + offset, Lq)

    def near(x):
        return x * (1 + level * rng.uniform(-1, 1, np.shape(x)))

    Lq = (near(L[0]), near(L[1])) if family == "low_rank" else near(L)
    return (mean, L), (near(mean), Lq)


WORST = {}


@pytest.mark.parametrize("data", ["random", "offset", "near1e-4", "near1e-8"])
@pytest.mark.parametrize("kind,alpha", KINDS[:5])
def test_torch_path_values_against_the_library(rng, monkeypatch, kind, alpha, data):
    from gausskl import _ext

    for name in ("divergence", "pairwise", "knn"):  # the torch path may not call the library
        def checked(*args, _real=getattr(_ext, name)):
            got = _real(*args)
            if got.__class__ is not int and args[-2] is True:
                raise AssertionError("the C++ library computed a torch-path call")
            return got

        monkeypatch.setattr(_ext, name, checked)
    level = {"random": None, "offset": None, "near1e-4": 1e-4, "near1e-8": 1e-8}[data]
    offset = 1e3 if data == "offset" else 0.0
    worst = 0.0
    for fp in FAMILIES:
        for fq in FAMILIES:
            pp, pq = PARAMS[fp][0], PARAMS[fq][1 % len(PARAMS[fq])]
            n, d = 6, 5
            if fp == fq:
                (a, b) = _data(rng, fp, n, d, level, offset)
            else:
                a = _data(rng, fp, n, d, None, offset)[0]
                b = _data(rng, fq, n, d, None, offset)[0]
            p, q = _build(fp, pp, _raw(fp, pp, *a)), _build(fq, pq, _raw(fq, pq, *b))
            exact = gk.divergence(p, q, kind, alpha)
            got = gk.divergence(p, q, kind, alpha, torch_path=True)
            errs = [(got - exact).abs() / (exact.abs() + 1)]
            exact = gk.pairwise(p, q, kind, alpha)
            got = gk.pairwise(p, q, kind, alpha, torch_path=True)
            errs.append((got - exact).abs() / (exact.abs() + 1))
            assert bool((got >= 0).all())
            for qq in (q, None):
                ix, v = gk.knn(p, qq, k=3, kind=kind, alpha=alpha)
                iy, w = gk.knn(p, qq, k=3, kind=kind, alpha=alpha, torch_path=True)
                errs.append((w - v).abs() / (v.abs() + 1))
                # the same neighbours, unless two values are within the error of each other
                same = (ix == iy).all(-1)
                close = (v[:, 1:] - v[:, :-1]).abs().min(-1).values < 1e-12 * (v.abs().max() + 1)
                assert bool((same | close).all())
            own = gk.pairwise(p, kind=kind, alpha=alpha, torch_path=True)
            assert bool((own.diagonal() == 0).all())
            if kind != "renyi":
                assert torch.equal(own, own.T)
            if kind == "hellinger":
                assert bool((got <= 1).all())
            worst = max(worst, max(float(e.max()) for e in errs))
    WORST[(kind, alpha, data)] = worst
    print(f"\n{kind} alpha={alpha} {data}: largest torch-path error {worst:.2g}")
    assert worst <= 1e-12


def _renyi_pair(rng, family):
    """p wider than q: alpha = 2 makes 2 S_q - S_p indefinite at every row."""
    xp = _raw(family, PARAMS[family][0], *_dense(rng, family, 3, 3, 4.0))
    xq = _raw(family, PARAMS[family][0], *_dense(rng, family, 3, 3, 0.25))
    return _build(family, PARAMS[family][0], xp), _build(family, PARAMS[family][0], xq)


def _split(message):
    """The message without the pivot's value, and the value."""
    m = re.search(r"\(pivot (\d+) is ([^)]+)\)", message)
    return message.replace(m.group(2), "V"), float(m.group(2))


@pytest.mark.parametrize("family", FAMILIES)
def test_renyi_error_names_the_row_as_the_library(rng, family):
    p, q = _renyi_pair(rng, family)
    calls = [lambda tp: gk.divergence(p, q, "renyi", 2.0, torch_path=tp),
             lambda tp: gk.pairwise(p, q, "renyi", 2.0, torch_path=tp),
             lambda tp: gk.knn(p, q, k=1, kind="renyi", alpha=2.0, torch_path=tp)]
    for call in calls:
        messages = []
        for tp in (False, True):
            with pytest.raises(ValueError, match=r"the renyi divergence is infinite at") as e:
                call(tp)
            messages.append(_split(str(e.value)))
        assert messages[0][0] == messages[1][0]
        assert math.isclose(messages[0][1], messages[1][1], rel_tol=1e-12)


def test_torch_func_grad_and_vmap():
    """torch.func.grad takes the torch path (its tensors have no memory the library reads);
    torch.func.vmap calls the operator (the library's values)."""
    m = torch.randn(4, 3, dtype=torch.float64)
    s = torch.rand(4, 3, dtype=torch.float64) + 0.5
    q = gk.DiagGaussian(torch.ones(4, 3, dtype=torch.float64), std=s.flip(0))

    def f(x):
        return gk.divergence(gk.DiagGaussian(x, std=s), q, "bhattacharyya").sum()

    leaf = m.clone().requires_grad_()
    f(leaf).backward()
    torch.testing.assert_close(torch.func.grad(f)(m), leaf.grad, rtol=1e-13, atol=0)
    # torch.func.vmap: the operator of gausskl._compile, the loop's values
    assert torch.equal(torch.func.vmap(f)(m[None].expand(2, 4, 3)), f(m).expand(2))


def test_jitter_on_factored_matrices_runs_in_torch_operations(rng):
    """As gk.kl: with a jitter, gradients of covariance and precision matrices come from the torch
    path forward and backward (the jittered matrices), with its JitterWarning."""
    C = torch.tensor([[[1.0, 1.0], [1.0, 1.0]], [[2.0, 0.0], [0.0, 1.0]]], dtype=torch.float64,
                     requires_grad=True)
    m = torch.zeros(2, 2, dtype=torch.float64)
    q = gk.DiagGaussian(torch.ones(2, 2, dtype=torch.float64),
                        std=torch.ones(2, 2, dtype=torch.float64))
    with pytest.warns(gk.JitterWarning, match="1 p distribution"):
        out = gk.divergence(gk.FullGaussian(m, covariance=C), q, "wasserstein2", jitter=1e-3)
    with pytest.warns(gk.JitterWarning):  # the library's value of the jittered matrix
        exact = gk.divergence(gk.FullGaussian(m, covariance=C.detach()), q, "wasserstein2",
                              jitter=1e-3)
    torch.testing.assert_close(out.detach(), exact, rtol=1e-13, atol=0)
    out.sum().backward()
    assert torch.isfinite(C.grad).all()
    with pytest.raises(ValueError, match="not positive"):
        gk.divergence(gk.FullGaussian(m, covariance=C), q, "wasserstein2")
