"""PyTorch: from_torch, agreement with torch.distributions.kl_divergence, autograd, and the
torch-operations path (the one CUDA and MPS tensors take), tested on CPU tensors."""

import numpy as np
import pytest

import gausskl as gk
from conftest import PARAMS, covariance, gaussian, make_arrays, needs_torch

pytestmark = needs_torch


@pytest.fixture(scope="module")
def torch():
    import torch as t

    return t


@pytest.fixture
def seed(rng, torch):
    return torch.Generator().manual_seed(int(rng.integers(1 << 31)))


def torch_distribution(torch, arrays):
    """The torch.distributions object of an arrays dict (float64 tensors)."""
    D = torch.distributions
    t = {k: torch.from_numpy(np.asarray(v)) for k, v in arrays.items()}
    if "std" in t:
        return D.Independent(D.Normal(t["mean"], t["std"]), 1)
    if "var" in t:
        return D.Independent(D.Normal(t["mean"], t["var"].sqrt()), 1)
    if "logvar" in t:
        return D.Independent(D.Normal(t["mean"], (0.5 * t["logvar"]).exp()), 1)
    if "precision" in t:
        return D.Independent(D.Normal(t["mean"], t["precision"].rsqrt()), 1)
    if "scale_tril" in t:
        return D.MultivariateNormal(t["mean"], scale_tril=t["scale_tril"])
    if "covariance" in t:
        return D.MultivariateNormal(t["mean"], covariance_matrix=t["covariance"])
    if "precision_matrix" in t:
        return D.MultivariateNormal(t["mean"], precision_matrix=t["precision_matrix"])
    return D.LowRankMultivariateNormal(t["mean"], t["cov_factor"], t["cov_diag"])


# -- from_torch and torch.distributions.kl_divergence ------------------------------------------

@pytest.mark.parametrize("fp,pp", PARAMS)
@pytest.mark.parametrize("fq,pq", [("diag", "std"), ("full", "scale_tril"),
                                   ("full", "covariance"), ("low_rank", "cov_factor")])
def test_matches_torch_kl_divergence(torch, rng, fp, pp, fq, pq):
    a, b = make_arrays(rng, fp, pp, 6, 4), make_arrays(rng, fq, pq, 6, 4)
    tp, tq = torch_distribution(torch, a), torch_distribution(torch, b)
    try:
        expected = torch.distributions.kl_divergence(tp, tq)
    except NotImplementedError:  # mixed families: torch's own answer on dense covariances
        dense = lambda x: torch.distributions.MultivariateNormal(  # noqa: E731
            torch.from_numpy(x["mean"]), torch.from_numpy(covariance(x)))
        expected = torch.distributions.kl_divergence(dense(a), dense(b))
    p, q = gk.from_torch(tp), gk.from_torch(tq)
    out = gk.kl(p, q)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    torch.testing.assert_close(out, expected, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(gk.kl(tp, tq), expected, rtol=1e-9, atol=1e-12)  # objects directly


def test_from_torch_keeps_the_parameterization_and_tensors(torch):
    D = torch.distributions
    loc, L = torch.zeros(3, 2), torch.eye(2).expand(3, 2, 2)
    assert gk.from_torch(D.MultivariateNormal(loc, scale_tril=L)).param == "scale_tril"
    assert gk.from_torch(D.MultivariateNormal(loc, covariance_matrix=L)).param == "covariance"
    assert gk.from_torch(D.MultivariateNormal(loc, precision_matrix=L)).param == "precision_matrix"
    normal = D.Independent(D.Normal(loc, torch.ones(3, 2)), 1)
    g = gk.from_torch(normal)
    assert (g.family, g.param, g.n, g.d) == ("diag", "std", 3, 2)
    assert g.mean.data_ptr() == loc.data_ptr()
    # A Normal is univariate, as in torch: [4] is four distributions of D = 1, no copy.
    u = gk.from_torch(D.Normal(loc, torch.ones(3, 2)))
    assert (u.batch_shape, u.d) == ((3, 2), 1) and u.mean.data_ptr() == loc.data_ptr()
    assert gk.from_torch(D.Normal(torch.zeros(4), 1.0)).batch_shape == (4,)
    assert gk.from_torch(D.Normal(0.0, 1.0)).batch_shape == ()
    lr = gk.from_torch(D.LowRankMultivariateNormal(loc, torch.ones(3, 2, 1), torch.ones(3, 2)))
    assert (lr.family, lr.rank) == ("low_rank", 1)
    with pytest.raises(TypeError, match=r"^\[from_torch\] unsupported distribution Gamma"):
        gk.from_torch(D.Gamma(1.0, 1.0))
    with pytest.raises(TypeError, match=r"^\[from_torch\] Independent is supported over Normal"):
        gk.from_torch(D.Independent(D.Gamma(torch.ones(2, 3), 1.0), 1))
    # Any batch shape (torch's), and Independent over any number of axes.
    assert gk.from_torch(D.Independent(D.Normal(torch.zeros(2, 3, 4), 1.0), 2)).batch_shape == (2,)
    assert gk.from_torch(D.MultivariateNormal(torch.zeros(2, 3, 4), torch.eye(4))).batch_shape \
        == (2, 3)


def test_normal_is_univariate_as_in_torch(torch):
    D = torch.distributions
    p, q = D.Normal(torch.randn(5, 3), torch.rand(5, 3) + 0.5), D.Normal(torch.zeros(5, 3), 1.0)
    torch.testing.assert_close(gk.kl(p, q), D.kl_divergence(p, q))
    pi, qi = D.Independent(p, 1), D.Independent(q, 1)
    torch.testing.assert_close(gk.kl(pi, qi), D.kl_divergence(pi, qi))


# -- autograd -----------------------------------------------------------------------------------

def leaf_tensors(torch, arrays):
    return {k: torch.from_numpy(np.asarray(v)).requires_grad_() for k, v in arrays.items()}


def build(torch, t):
    """A gausskl batch of leaf tensors; symmetric matrices are symmetrized inside the graph so
    gradcheck's one-sided nudges stay valid inputs."""
    a = dict(t)
    for k in ("covariance", "precision_matrix"):
        if k in a:
            a[k] = 0.5 * (a[k] + a[k].transpose(-1, -2))
    if "scale_tril" in a:
        a["scale_tril"] = torch.tril(a["scale_tril"])
    return gaussian(a)


# The pairs test_gradients.py checks against torch.autograd of the direct formulas (every
# diagonal p against std and logvar q: test_rowwise_diagonal; scale_tril against scale_tril:
# test_rowwise_triangular_factors) are not gradchecked again here.
CHECKED_IN_TEST_GRADIENTS = {(("diag", p), ("diag", q)) for p in ("std", "var", "logvar",
                                                                 "precision")
                             for q in ("std", "logvar")} | {(("full", "scale_tril"),) * 2}
ROWWISE_PAIRS = [(fp, pp, fq, pq) for fp, pp in PARAMS for fq, pq in PARAMS
                 if ((fp, pp), (fq, pq)) not in CHECKED_IN_TEST_GRADIENTS]


@pytest.mark.parametrize("fp,pp,fq,pq", ROWWISE_PAIRS)
def test_rowwise_gradcheck(torch, rng, fp, pp, fq, pq):
    a, b = make_arrays(rng, fp, pp, 2, 3), make_arrays(rng, fq, pq, 2, 3)
    ta, tb = leaf_tensors(torch, a), leaf_tensors(torch, b)
    names = list(ta) + list(tb)

    def f(*xs):
        pa = dict(zip(ta, xs[: len(ta)]))
        qb = dict(zip(tb, xs[len(ta):]))
        return gk.kl(build(torch, pa), build(torch, qb))

    assert torch.autograd.gradcheck(f, [*ta.values(), *tb.values()], eps=1e-6, atol=1e-5), names


@pytest.mark.parametrize("fp,pp", PARAMS)
def test_kl_standard_normal_gradcheck(torch, rng, fp, pp):
    ta = leaf_tensors(torch, make_arrays(rng, fp, pp, 3, 3))
    f = lambda *xs: gk.kl_standard_normal(build(torch, dict(zip(ta, xs))))  # noqa: E731
    assert torch.autograd.gradcheck(f, list(ta.values()), eps=1e-6, atol=1e-5)


@pytest.mark.parametrize("pp", ["std", "var", "logvar", "precision"])
@pytest.mark.parametrize("self_pairs", [False, True])
def test_pairwise_diag_gradcheck(torch, rng, pp, self_pairs):
    ta = leaf_tensors(torch, make_arrays(rng, "diag", pp, 4, 3, offset=50.0))
    tb = leaf_tensors(torch, make_arrays(rng, "diag", "logvar", 5, 3, offset=50.0))
    if self_pairs:
        f = lambda m, s: gk.pairwise_kl(gaussian({"mean": m, pp: s}))  # noqa: E731
        inputs = list(ta.values())
    else:
        f = lambda m, s, n, w: gk.pairwise_kl(gaussian({"mean": m, pp: s}),  # noqa: E731
                                              gaussian({"mean": n, "logvar": w}))
        inputs = [*ta.values(), *tb.values()]
    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-5)


def test_pairwise_diag_backward_at_the_forums_size(torch):
    # N = M = 1024, D = 256: an [N, M, D] float64 intermediate would be 2 GiB; the backward
    # is five GEMMs of [N, M] by [M, D].
    n, d = 1024, 256
    mu = torch.randn(n, d, requires_grad=True)
    std = (torch.rand(n, d) + 0.5).requires_grad_()
    gk.pairwise_kl(gk.DiagGaussian(mu, std=std)).sum().backward()
    assert torch.isfinite(mu.grad).all() and torch.isfinite(std.grad).all()


def test_pairwise_non_diagonal_has_gradients(torch, rng):
    ta = leaf_tensors(torch, make_arrays(rng, "full", "scale_tril", 3, 2))
    tb = leaf_tensors(torch, make_arrays(rng, "low_rank", "cov_factor", 2, 2))
    f = lambda m, L, n, W, d: gk.pairwise_kl(  # noqa: E731
        build(torch, {"mean": m, "scale_tril": L}),
        gaussian({"mean": n, "cov_factor": W, "cov_diag": d}))
    assert torch.autograd.gradcheck(f, [*ta.values(), *tb.values()], eps=1e-6, atol=1e-5)


@pytest.mark.parametrize("fam,par", PARAMS)
def test_gradients_are_finite_at_p_equal_q(torch, rng, fam, par):
    t = leaf_tensors(torch, make_arrays(rng, fam, par, 3, 3))
    g = gaussian(t)
    gk.kl(g, g).sum().backward()
    for x in t.values():
        assert torch.isfinite(x.grad).all()
        assert x.grad.abs().max() < 1e-6  # KL has its minimum at p = q
    for x in t.values():
        x.grad = None
    if fam == "diag":
        gk.pairwise_kl(g).sum().backward()
        assert all(torch.isfinite(x.grad).all() for x in t.values())


def test_knn_values_have_gradients(torch, rng):
    t = leaf_tensors(torch, make_arrays(rng, "diag", "std", 6, 3))
    idx, val = gk.knn_kl(gaussian(t), k=2, exclude_self=True)
    val.sum().backward()
    assert torch.isfinite(t["mean"].grad).all() and t["mean"].grad.abs().sum() > 0
    expected = gk.pairwise_kl(gaussian({k: v.detach() for k, v in t.items()}))
    torch.testing.assert_close(val.detach(), expected.gather(1, idx))


def test_float32_gradients_come_back_float32(torch):
    mu = torch.randn(4, 3, requires_grad=True)
    logvar = torch.zeros(4, 3, requires_grad=True)
    gk.kl_standard_normal(gk.DiagGaussian(mu, logvar=logvar)).sum().backward()
    assert mu.grad.dtype == torch.float32
    torch.testing.assert_close(mu.grad, mu.detach())


# -- the torch-operations path --------------------------------------------------------------

@pytest.mark.parametrize("fp,pp", PARAMS)
@pytest.mark.parametrize("fq,pq", PARAMS)
def test_torch_path_rowwise_matches_library(torch, rng, fp, pp, fq, pq):
    a, b = make_arrays(rng, fp, pp, 5, 4), make_arrays(rng, fq, pq, 5, 4)
    p, q = gaussian(a, torch.from_numpy), gaussian(b, torch.from_numpy)
    torch.testing.assert_close(gk.kl(p, q, torch_path=True), gk.kl(p, q), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fp,pp", PARAMS)
@pytest.mark.parametrize("fq,pq", [("diag", "var"), ("full", "covariance"),
                                   ("full", "precision_matrix"), ("low_rank", "cov_factor")])
def test_torch_path_pairwise_matches_library(torch, rng, fp, pp, fq, pq):
    a, b = make_arrays(rng, fp, pp, 6, 3, offset=100.0), make_arrays(rng, fq, pq, 4, 3,
                                                                     offset=100.0)
    p, q = gaussian(a, torch.from_numpy), gaussian(b, torch.from_numpy)
    torch.testing.assert_close(gk.pairwise_kl(p, q, torch_path=True), gk.pairwise_kl(p, q),
                               rtol=1e-7, atol=1e-9)
    self_pairs = gk.pairwise_kl(p, torch_path=True)
    assert torch.all(torch.diagonal(self_pairs) == 0)
    torch.testing.assert_close(self_pairs, gk.pairwise_kl(p), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("exclude_self", [False, True])
def test_torch_path_knn_matches_library(torch, rng, exclude_self, monkeypatch):
    from gausskl import _torch_path

    monkeypatch.setattr(_torch_path, "KNN_BLOCK_BYTES", 8 * 20 * 7)  # several row blocks
    a = make_arrays(rng, "diag", "std", 20, 3)
    p = gaussian(a, torch.from_numpy)
    i1, v1 = gk.knn_kl(p, k=5, exclude_self=exclude_self, torch_path=True)
    i2, v2 = gk.knn_kl(p, k=5, exclude_self=exclude_self)
    assert torch.equal(i1, i2)
    torch.testing.assert_close(v1, v2, rtol=1e-9, atol=1e-12)
    q = gaussian(make_arrays(rng, "full", "scale_tril", 11, 3), torch.from_numpy)
    i1, v1 = gk.knn_kl(p, q, k=3, torch_path=True)
    i2, v2 = gk.knn_kl(p, q, k=3)
    assert torch.equal(i1, i2)
    torch.testing.assert_close(v1, v2, rtol=1e-9, atol=1e-12)


def test_environment_variable_forces_the_torch_path(torch, monkeypatch):
    from conftest import refuse_library

    p = gk.DiagGaussian(torch.randn(3, 2), std=torch.ones(3, 2))
    monkeypatch.setenv("GAUSSKL_FORCE_TORCH_PATH", "1")
    refuse_library(monkeypatch)
    gk.kl(p, p)
    gk.kl_standard_normal(p)
    gk.pairwise_kl(p)
    gk.knn_kl(p, k=1)


def test_torch_path_has_gradients(torch, rng):
    t = leaf_tensors(torch, make_arrays(rng, "diag", "precision", 3, 2))
    u = leaf_tensors(torch, make_arrays(rng, "full", "covariance", 3, 2))
    f = lambda m, s, n, c: gk.kl(  # noqa: E731
        gaussian({"mean": m, "precision": s}),
        build(torch, {"mean": n, "covariance": c}), torch_path=True)
    assert torch.autograd.gradcheck(f, [*t.values(), *u.values()], eps=1e-6, atol=1e-5)


@pytest.mark.parametrize("fam,par", [("diag", "logvar"), ("diag", "std"), ("full", "scale_tril"),
                                     ("full", "covariance")])
def test_second_derivatives(torch, rng, fam, par):
    """create_graph=True: the gradients are differentiable (through the same formulas in torch
    operations), row-wise and, for diagonal batches, all pairs."""
    ta = leaf_tensors(torch, make_arrays(rng, fam, par, 3, 2))
    tb = leaf_tensors(torch, make_arrays(rng, "diag", "var", 3, 2))

    def f(*xs):
        return gk.kl(build(torch, dict(zip(ta, xs[:len(ta)]))),
                     gaussian(dict(zip(tb, xs[len(ta):]))))

    inputs = [*ta.values(), *tb.values()]
    assert torch.autograd.gradgradcheck(f, inputs, eps=1e-6, atol=1e-4)
    if fam == "diag":
        g = lambda *xs: gk.pairwise_kl(gaussian(dict(zip(ta, xs))))  # noqa: E731
        assert torch.autograd.gradgradcheck(g, list(ta.values()), eps=1e-6, atol=1e-4)


def test_overflowing_kl_is_infinite_on_both_paths(torch):
    """q's means 1e160 away with scales 1e-150: the whitened difference overflows, as the exact
    KL does; +inf on the library path and the torch path, never NaN."""
    d = 3
    p = gk.FullGaussian(torch.zeros(2, d, dtype=torch.float64),
                        scale_tril=torch.eye(d, dtype=torch.float64).expand(2, d, d))
    q = gk.FullGaussian(torch.full((2, d), 1e160, dtype=torch.float64),
                        scale_tril=1e-150 * torch.eye(d, dtype=torch.float64).expand(2, d, d))
    for torch_path in (False, True):
        assert torch.isposinf(gk.kl(p, q, torch_path=torch_path)).all()
        assert torch.isposinf(gk.pairwise_kl(p, q, torch_path=torch_path)).all()


def test_meta_tensors_get_a_clear_error(torch):
    """Tensors on the meta device have no values (and no DLPack export): every operation says so
    instead of an internal error."""
    m = gk.DiagGaussian(torch.zeros(2, 3, device="meta"), std=torch.ones(2, 3, device="meta"))
    c = gk.DiagGaussian(torch.zeros(2, 3), std=torch.ones(2, 3))
    calls = {"kl": lambda: gk.kl(m, c), "kl_standard_normal": lambda: gk.kl_standard_normal(m),
             "pairwise_kl": lambda: gk.pairwise_kl(m), "knn_kl": lambda: gk.knn_kl(m, k=1),
             "divergence": lambda: gk.divergence(m, c, kind="jeffreys"),
             "pairwise": lambda: gk.pairwise(m, kind="hellinger")}
    for op, call in calls.items():
        with pytest.raises(ValueError, match=rf"^\[{op}\] the tensors are on torch's meta device"):
            call()
