"""The torch path (CUDA, MPS; here CPU tensors with GAUSSKL_FORCE_TORCH_PATH=1) keeps the
library's promise on all pairs and knn: every entry within the tolerance of the exact value as
|KL - exact| / (|exact| + 1), never negative, exactly 0 for q = p, blocks within the budget.

References: mpmath at 40 digits for the small hard cases (independent of both paths), and the
float64 per-dimension form of test_options.ref_pairwise_diag for the adversarial sets."""

import numpy as np
import pytest

import gausskl as gk
from conftest import mp_kl_low_rank, needs_torch
from test_options import adversarial_diag, assert_within, ref_pairwise_diag

torch = pytest.importorskip("torch")
mpmath = pytest.importorskip("mpmath")

pytestmark = needs_torch


@pytest.fixture(autouse=True)
def torch_path(monkeypatch):
    monkeypatch.setenv("GAUSSKL_FORCE_TORCH_PATH", "1")


def mp_kl_diag(mp_, vp, mq, vq):
    """KL(N(mp, diag vp) || N(mq, diag vq)) in mpmath, from the float64 inputs as given."""
    s = mpmath.mpf(0)
    for a, v, b, w in zip(mp_, vp, mq, vq):
        a, v, b, w = (mpmath.mpf(float(x)) for x in (a, v, b, w))
        s += (v + (a - b) ** 2) / w - 1 + mpmath.log(w) - mpmath.log(v)
    return float(s / 2)


def mp_kl_tril(m1, L1, m2, L2):
    """KL(N(m1, L1 L1') || N(m2, L2 L2')) in mpmath from the float64 factors as given (their
    products formed in mpmath: rounding them to float64 would move a KL with conditioning 1e10
    by ~1e-6)."""
    L1, L2 = mpmath.matrix(L1.tolist()), mpmath.matrix(L2.tolist())
    S1, S2 = L1 * L1.T, L2 * L2.T
    diff = mpmath.matrix([mpmath.mpf(float(a)) - mpmath.mpf(float(b)) for a, b in zip(m2, m1)])
    inv = S2 ** -1
    d = S1.rows
    tr = sum((inv * S1)[k, k] for k in range(d))
    maha = (diff.T * inv * diff)[0, 0]
    return float((tr + maha - d + mpmath.log(mpmath.det(S2)) - mpmath.log(mpmath.det(S1))) / 2)


def rel_err(got, exact):
    got, exact = np.asarray(got, np.float64), np.asarray(exact, np.float64)
    return np.max(np.abs(got - exact) / (np.abs(exact) + 1))


def test_spread_means_with_near_duplicate_q():
    """Means spread ~1e4 and each q_i within 1e-3 of p_i: the GEMM form cancels ~1e8 of its
    terms (4.4e-8 before certification); mpmath is the reference."""
    mpmath.mp.dps = 40
    rng = np.random.default_rng(12)
    n, d = 8, 6
    mu = 1e4 * rng.normal(size=(n, d))
    nu = mu + 1e-3 * rng.normal(size=(n, d))
    sp, sq = rng.uniform(0.5, 2, (n, d)), rng.uniform(0.5, 2, (n, d))
    exact = np.array([[mp_kl_diag(mu[i], sp[i] ** 2, nu[j], sq[j] ** 2) for j in range(n)]
                      for i in range(n)])
    t = torch.as_tensor
    got = gk.pairwise_kl(gk.DiagGaussian(t(mu), std=t(sp)), gk.DiagGaussian(t(nu), std=t(sq)))
    assert rel_err(got, exact) <= 1e-13
    idx, val = gk.knn_kl(gk.DiagGaussian(t(mu), std=t(sp)), gk.DiagGaussian(t(nu), std=t(sq)),
                         k=3)
    order = np.lexsort((np.broadcast_to(np.arange(n), exact.shape), exact), axis=1)[:, :3]
    np.testing.assert_array_equal(idx.numpy(), order)
    assert rel_err(val, np.take_along_axis(exact, order, 1)) <= 1e-13


def random_rotation(rng, d):
    q, r = np.linalg.qr(rng.normal(size=(d, d)))
    return q * np.sign(np.diag(r))


def test_ill_conditioned_scale_tril_on_both_sides():
    """Covariance eigenvalues 1..1e10, N = M = 4, D = 8 (7.3e-8 by the GEMM form)."""
    mpmath.mp.dps = 60
    rng = np.random.default_rng(3)
    n, d = 4, 8
    covs = []
    for _ in range(2 * n):
        u = random_rotation(rng, d)
        covs.append((u * np.logspace(0, 10, d)) @ u.T)
    covs = np.array(covs)
    ls = np.linalg.cholesky(covs)
    means = rng.normal(size=(2 * n, d))
    exact = np.array([[mp_kl_tril(means[i], ls[i], means[n + j], ls[n + j])
                       for j in range(n)] for i in range(n)])
    t = torch.as_tensor
    p = gk.FullGaussian(t(means[:n]), scale_tril=t(ls[:n]))
    q = gk.FullGaussian(t(means[n:]), scale_tril=t(ls[n:]))
    assert rel_err(gk.pairwise_kl(p, q), exact) <= 1e-12


def test_low_rank_near_duplicates_are_never_negative():
    """q's cov_factor = W (1 + 1e-8 noise), same mean and diagonal: the value is ~1e-16, and
    rounding must not make it negative (65 of 200 seeds before); q = p gives exactly 0."""
    negatives = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        mean = rng.normal(size=(2, 6))
        w = rng.normal(size=(2, 6, 2))
        dg = rng.uniform(0.5, 2, (2, 6))
        w2 = w * (1 + 1e-8 * rng.normal(size=w.shape))
        t = torch.as_tensor
        p = gk.LowRankGaussian(t(mean), cov_factor=t(w), cov_diag=t(dg))
        q = gk.LowRankGaussian(t(mean), cov_factor=t(w2), cov_diag=t(dg))
        negatives += int((gk.pairwise_kl(p, q) < 0).sum()) + int((gk.kl(p, q) < 0).sum())
        assert torch.all(torch.diagonal(gk.pairwise_kl(p)) == 0)
    assert negatives == 0


@pytest.mark.parametrize("d", [3, 64, 1024])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adversarial_set_within_the_default_tolerance(d, dtype):
    """Offset means (1e3), near-duplicates, std spread 1e-2..1e2, D up to 1024: the default
    tolerance (1e-7 for float32 inputs, 1e-13 for float64) on every entry, as on the library
    path; q = p gives an exactly zero diagonal."""
    rng = np.random.default_rng(d)
    g = adversarial_diag(rng, 24, d, dtype)
    t = gk.DiagGaussian(torch.as_tensor(g["mean"]), std=torch.as_tensor(g["std"]))
    got = gk.pairwise_kl(t)
    assert got.dtype == (torch.float32 if dtype == np.float32 else torch.float64)
    tol = 1e-7 if dtype == np.float32 else 1e-13
    assert_within(got.numpy(), ref_pairwise_diag(g), tol)
    assert torch.all(torch.diagonal(got) == 0) and torch.all(got >= 0)
    lib = gk.pairwise_kl(gk.DiagGaussian(g["mean"], std=g["std"]), torch_path=False)
    assert_within(got.numpy(), np.asarray(lib, np.float64), 2 * tol)


def test_a_looser_tolerance_is_kept_too():
    rng = np.random.default_rng(5)
    g = adversarial_diag(rng, 30, 40, np.float64)
    t = gk.DiagGaussian(torch.as_tensor(g["mean"]), std=torch.as_tensor(g["std"]))
    assert_within(gk.pairwise_kl(t, tolerance=1e-5).numpy(), ref_pairwise_diag(g), 1e-5)


def test_knn_matches_the_library_on_near_ties():
    """Near-duplicate groups make near-ties: the candidates are re-scored exactly, so the
    torch path picks the same neighbours as the library, ties to the lower index."""
    rng = np.random.default_rng(9)
    g = adversarial_diag(rng, 30, 16, np.float64)
    g["mean"] = np.concatenate([g["mean"], g["mean"][:6]])  # exact duplicates: exact ties
    g["std"] = np.concatenate([g["std"], g["std"][:6]])
    t = gk.DiagGaussian(torch.as_tensor(g["mean"]), std=torch.as_tensor(g["std"]))
    for exclude_self in (False, True):
        idx, val = gk.knn_kl(t, k=4, exclude_self=exclude_self)
        lib_idx, lib_val = gk.knn_kl(gk.DiagGaussian(g["mean"], std=g["std"]), k=4,
                                     exclude_self=exclude_self, torch_path=False)
        np.testing.assert_array_equal(idx.numpy(), np.asarray(lib_idx))
        assert_within(val.numpy(), np.asarray(lib_val), 2e-13)


def test_blocks_follow_the_budget_and_never_hold_n_m_d(monkeypatch):
    """A budget of a few rows: the same results (within the tolerance) from many blocks, and
    the direct recompute in chunks of pairs."""
    from gausskl import _torch_path

    rng = np.random.default_rng(2)
    g = adversarial_diag(rng, 40, 32, np.float64)
    t = gk.DiagGaussian(torch.as_tensor(g["mean"]), std=torch.as_tensor(g["std"]))
    seen = []
    real = _torch_path._Pairs.block

    def spy(self, i0, i1, with_error=False):
        seen.append(i1 - i0)
        return real(self, i0, i1, with_error)

    monkeypatch.setattr(_torch_path._Pairs, "block", spy)
    budget = 8 * 2 * 80 * 64 + 5 * 8 * 4 * 40  # the operands, then 5 rows of results
    got = gk.pairwise_kl(t, memory_budget=budget)
    assert max(seen) <= 5 and len(seen) >= 8
    assert_within(got.numpy(), ref_pairwise_diag(g), 1e-13)


@pytest.mark.parametrize("level", [1e-8, 1e-12])
@pytest.mark.parametrize("diagonal_too", [False, True])
def test_tiny_low_rank_divergence_keeps_relative_accuracy(level, diagonal_too):
    """D = 6, R = 2, q's cov_factor = W (1 + level noise), same mean, the diagonal the same or
    perturbed as well: relative error <= 1e-6 of the tiny value (mpmath at 60 digits), never 0
    for p != q. The library path did 23% (2.22e-16 against 2.88e-16) and returned 0 in 30 of
    200 seeds with the diagonal perturbed."""
    mpmath.mp.dps = 60
    for seed in range(20):
        rng = np.random.default_rng(seed)
        mean = rng.normal(size=(1, 6))
        w = rng.normal(size=(1, 6, 2))
        dg = rng.uniform(0.5, 2, (1, 6))
        w2 = w * (1 + level * rng.normal(size=w.shape))
        dg2 = dg * (1 + level * rng.normal(size=dg.shape)) if diagonal_too else dg
        exact = mp_kl_low_rank(mean[0], w[0], dg[0], mean[0], w2[0], dg2[0])
        t = torch.as_tensor
        p = gk.LowRankGaussian(t(mean), cov_factor=t(w), cov_diag=t(dg))
        q = gk.LowRankGaussian(t(mean), cov_factor=t(w2), cov_diag=t(dg2))
        for got in (gk.kl(p, q), gk.pairwise_kl(p, q)[0]):
            assert abs(float(got) - float(exact)) <= 1e-6 * float(exact), (seed, float(got),
                                                                           float(exact))
