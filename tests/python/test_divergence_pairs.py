"""gk.pairwise and gk.knn for every kind: the row-wise gk.divergence of the broadcast pairs, mpmath
for a few values, the q = p contract and the errors."""

import numpy as np
import pytest

import gausskl as gk

KINDS = [("jeffreys", None), ("bhattacharyya", None), ("hellinger", None),
         ("wasserstein2", None), ("renyi", 0.5), ("renyi", 2.0)]


def _make(rng, family, n, d, dtype=np.float64):
    """n Gaussians of a family, with a way to take rows of them: (g, rows(idx))."""
    mean = rng.normal(0, 2, (n, d)).astype(dtype)
    if family == "diag":
        std = rng.uniform(0.5, 2, (n, d)).astype(dtype)
        make = lambda i: gk.DiagGaussian(mean[i], std=std[i])  # noqa: E731
    elif family == "full":
        a = rng.normal(size=(n, d, d))
        cov = (a @ np.swapaxes(a, -1, -2) + d * np.eye(d)).astype(dtype)
        make = lambda i: gk.FullGaussian(mean[i], covariance=cov[i])  # noqa: E731
    else:
        w = rng.normal(size=(n, d, 2)).astype(dtype)
        diag = rng.uniform(0.5, 2, (n, d)).astype(dtype)
        make = lambda i: gk.LowRankGaussian(mean[i], cov_factor=w[i], cov_diag=diag[i])  # noqa
    return make(slice(None)), make


def _rowwise(p, q, n, m, kind, alpha):
    i, j = np.repeat(np.arange(n), m), np.tile(np.arange(m), n)
    return gk.divergence(p(i), q(j), kind, alpha).reshape(n, m)


@pytest.mark.parametrize("kind,alpha", KINDS)
@pytest.mark.parametrize("fq", ["diag", "full", "lowrank"])
@pytest.mark.parametrize("fp", ["diag", "full", "lowrank"])
def test_matches_rowwise(fp, fq, kind, alpha):
    rng = np.random.default_rng(7)
    (p, p_rows), (q, q_rows) = _make(rng, fp, 4, 3), _make(rng, fq, 5, 3)
    try:
        want = _rowwise(p_rows, q_rows, 4, 5, kind, alpha)
    except ValueError:
        with pytest.raises(ValueError, match=r"\[pairwise\] the renyi divergence is infinite"):
            gk.pairwise(p, q, kind, alpha)
        return
    got = gk.pairwise(p, q, kind, alpha)
    assert got.shape == (4, 5) and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    idx, val = gk.knn(p, q, k=3, kind=kind, alpha=alpha)
    order = np.argsort(got, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_array_equal(val, np.take_along_axis(got, order, axis=1))


@pytest.mark.parametrize("kind,alpha", KINDS[:5])
@pytest.mark.parametrize("family", ["diag", "full", "lowrank"])
def test_self_pairs(family, kind, alpha):
    rng = np.random.default_rng(8)
    p = _make(rng, family, 6, 4, np.float32)[0]
    got = gk.pairwise(p, kind=kind, alpha=alpha)
    assert got.dtype == np.float32 and got.shape == (6, 6)
    np.testing.assert_array_equal(np.diag(got), np.zeros(6, np.float32))
    if kind != "renyi":
        np.testing.assert_array_equal(got, got.T)
    idx, val = gk.knn(p, k=2, kind=kind, alpha=alpha, exclude_self=True)
    assert not np.any(idx == np.arange(6)[:, None])


def test_kl_is_pairwise_kl_and_batch_shapes():
    rng = np.random.default_rng(9)
    pm, ps = rng.normal(size=(2, 3, 4)), rng.uniform(0.5, 2, (2, 3, 4))
    p = gk.DiagGaussian(pm, std=ps)
    q = gk.DiagGaussian(rng.normal(size=(5, 4)), std=rng.uniform(0.5, 2, (5, 4)))
    np.testing.assert_array_equal(gk.pairwise(p, q), gk.pairwise_kl(p, q))
    got = gk.pairwise(p, q, "jeffreys")
    assert got.shape == (2, 3, 5)
    flat = gk.DiagGaussian(pm.reshape(6, 4), std=ps.reshape(6, 4))
    np.testing.assert_array_equal(got.reshape(6, 5), gk.pairwise(flat, q, "jeffreys"))
    idx, val = gk.knn(p, q, k=2, kind="bhattacharyya")
    assert idx.shape == (2, 3, 2) and val.shape == (2, 3, 2)


def test_torch_cpu_and_gradients():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    mean, std = rng.normal(size=(4, 3)), rng.uniform(0.5, 2, (4, 3))
    p = gk.DiagGaussian(torch.tensor(mean), std=torch.tensor(std))
    got = gk.pairwise(p, kind="wasserstein2")
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    want = gk.pairwise(gk.DiagGaussian(mean, std=std), kind="wasserstein2")
    np.testing.assert_array_equal(got.numpy(), want)
    # Gradients (tests/python/test_divergence_grad.py checks them against the row-wise ones):
    # the library's values forward.
    leaf = torch.tensor(mean, requires_grad=True)
    got = gk.pairwise(gk.DiagGaussian(leaf, std=torch.tensor(std)), kind="hellinger")
    want = gk.pairwise(gk.DiagGaussian(mean, std=std), kind="hellinger")
    np.testing.assert_array_equal(got.detach().numpy(), want)
    got.sum().backward()
    assert leaf.grad is not None and torch.isfinite(leaf.grad).all()


def test_mpmath_near_duplicates():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    rng = np.random.default_rng(11)
    mean = rng.normal(size=(3, 2)) + 1e3
    std = rng.uniform(1e-3, 1e3, (3, 2))
    mean2, std2 = mean * (1 + 1e-8), std * (1 + 1e-8)
    p, q = gk.DiagGaussian(mean, std=std), gk.DiagGaussian(mean2, std=std2)
    got = gk.pairwise(p, q, "bhattacharyya")
    for i in range(3):
        for j in range(3):
            b = mp.mpf(0)
            for h in range(2):
                v1, v2 = mp.mpf(std[i, h]) ** 2, mp.mpf(std2[j, h]) ** 2
                d = mp.mpf(mean[i, h]) - mp.mpf(mean2[j, h])
                b += d**2 / (4 * (v1 + v2)) + mp.log((v1 + v2) / (2 * mp.sqrt(v1 * v2))) / 2
            assert abs(got[i, j] - float(b)) <= 1e-12 * abs(float(b)) + 1e-300, (i, j)


def test_errors():
    p = gk.DiagGaussian(np.zeros((2, 2)), std=np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"\[pairwise\] kind must be one of"):
        gk.pairwise(p, kind="jeff")
    with pytest.raises(ValueError, match=r"\[knn\] kind='renyi' needs alpha"):
        gk.knn(p, k=1, kind="renyi")
    with pytest.raises(ValueError, match=r"\[knn\] k"):
        gk.knn(p, k=3, kind="hellinger")
    with pytest.raises(gk.MemoryBudgetError, match=r"\[pairwise\] the memory budget"):
        gk.pairwise(_make(np.random.default_rng(1), "full", 3, 3)[0], kind="hellinger",
                    memory_budget=64)


@pytest.mark.parametrize("kind", ["jeffreys", "wasserstein2", "bhattacharyya", "hellinger"])
def test_tolerance_reaches_the_tiled_kinds(kind):
    """The tiled kinds of two diagonal batches keep KL's contract for tolerance: every entry
    within tolerance * (|D| + 1) of the exact per-pair values (gk.divergence row by row), for
    the default and a loose tolerance; knn uses the same values; a tolerance out of range is
    the library's OptionError, one of the wrong type a TypeError (the same as pairwise_kl)."""
    rng = np.random.default_rng(7)
    n, d = 40, 64
    p = gk.DiagGaussian(rng.normal(size=(n, d)) + 300.0, std=rng.uniform(0.5, 2.0, (n, d)))
    q = gk.DiagGaussian(rng.normal(size=(n, d)) + 300.0, std=rng.uniform(0.5, 2.0, (n, d)))
    exact = np.stack([gk.divergence(gk.DiagGaussian(np.repeat(p.mean[i:i + 1], n, 0),
                                                    std=np.repeat(p.scale[i:i + 1], n, 0)),
                                    q, kind=kind) for i in range(n)])
    for tol in (None, 1e-3):
        got = gk.pairwise(p, q, kind=kind, tolerance=tol)
        bound = 1e-13 if tol is None else tol
        assert np.max(np.abs(got - exact) / (np.abs(exact) + 1)) <= bound
        idx, val = gk.knn(p, q, k=3, kind=kind, tolerance=tol)
        np.testing.assert_array_equal(val, np.take_along_axis(got, idx, 1))
    with pytest.raises(gk.OptionError, match=r"\[pairwise\] .*tolerance"):
        gk.pairwise(p, q, kind=kind, tolerance=-1.0)
    with pytest.raises(TypeError, match=r"\[knn\] tolerance must be a real number"):
        gk.knn(p, q, k=1, kind=kind, tolerance="1e-3")


@pytest.mark.parametrize("family", ["full", "lowrank"])
def test_knn_with_gradients_keeps_the_zero_of_a_distribution_with_itself(family):
    """q = p on the torch path with gradients: the chosen pairs are computed again with their
    graph, and a distribution's pair with itself stays exactly 0 (the formulas gave round-off,
    e.g. 1e-29 for wasserstein2, 3e-16 for bhattacharyya of low-rank sides), as without
    gradients; its gradient is 0."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    g, _ = _make(rng, family, 6, 4)
    mean, *scale = (torch.from_numpy(np.ascontiguousarray(a)).requires_grad_()
                    for a in g._spec[1:])
    p = (gk.FullGaussian(mean, covariance=scale[0]) if family == "full" else
         gk.LowRankGaussian(mean, cov_factor=scale[0], cov_diag=scale[1]))
    for kind, alpha in KINDS[:5]:
        ix, v = gk.knn(p, k=2, kind=kind, alpha=alpha, torch_path=True)
        assert torch.equal(ix[:, 0], torch.arange(6)), kind
        assert torch.equal(v[:, 0], torch.zeros(6, dtype=v.dtype)), kind
        with torch.no_grad():
            _, plain = gk.knn(p, k=2, kind=kind, alpha=alpha, torch_path=True)
        torch.testing.assert_close(v.detach(), plain, rtol=1e-12, atol=0)
        mean.grad = None
        v[:, 0].sum().backward()
        assert torch.equal(mean.grad, torch.zeros_like(mean)), kind
