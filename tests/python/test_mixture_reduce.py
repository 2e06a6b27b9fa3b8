"""Mixture reduction on moments (python/gausskl/_mixture_reduce.py): moments preserved (against
the mixture's moments computed here), K = C and K = 1, a 1-D first merge worked by hand with
math, the lazy greedy against a naive O(C^3) greedy written here with its own costs, threshold
stopping, the input rules; then the gk.reduce_mixture wrapper (batches, torch, its rules)."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gausskl as gk

# The package imports this module as gausskl._mixture_reduce; it is loaded here from the file
# next to the tests (the module imports nothing from gausskl), so the tests see this tree's copy
# rather than an installed one.
_spec = importlib.util.spec_from_file_location(
    "gausskl_mixture_reduce", Path(__file__).parents[2] / "python/gausskl/_mixture_reduce.py")
mr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mr)
reduce_moments = mr.reduce_moments
METHODS = ["runnalls", "west", "salmond"]


def moments(w, mu, S):
    """The mixture's mean and covariance: sum w mu, sum w (S + (mu - m)(mu - m)^T)."""
    m = (w[:, None] * mu).sum(0)
    dev = mu - m
    return m, (w[:, None, None] * (S + dev[:, :, None] * dev[:, None, :])).sum(0)


def dense(S):
    return S[:, :, None] * np.eye(S.shape[1]) if S.ndim == 2 else S


def random_mixture(rng, c, d, offset=0.0, diag=False):
    mu = rng.normal(size=(c, d)) * 2 + offset
    if diag:
        S = rng.uniform(0.1, 2, (c, d))
    else:
        A = rng.normal(size=(c, d, d)) * 0.5
        S = A @ np.swapaxes(A, -1, -2) + 0.1 * np.eye(d)
    return rng.dirichlet(np.ones(c)), mu, S


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), c=st.integers(2, 12), d=st.integers(1, 3),
       offset=st.sampled_from([0.0, 1e3]), method=st.sampled_from(METHODS), diag=st.booleans())
def test_mean_and_covariance_are_preserved(seed, c, d, offset, method, diag):
    rng = np.random.default_rng(seed)
    w, mu, S = random_mixture(rng, c, d, offset, diag)
    k = int(rng.integers(1, c + 1))
    w_r, mu_r, S_r, groups = reduce_moments(w, mu, S, components=k, method=method)
    assert w_r.shape == (k,) and S_r.shape == (k, *S.shape[1:]) and groups.dtype == np.int64
    m, P = moments(w, mu, dense(S))
    m_r, P_r = moments(w_r, mu_r, dense(S_r))
    np.testing.assert_allclose(m_r, m, rtol=1e-13, atol=1e-13)
    # Diagonal merges keep only the diagonal of the spread, so only the diagonal is preserved.
    if diag:
        P, P_r = np.diagonal(P), np.diagonal(P_r)
    np.testing.assert_allclose(P_r, P, rtol=1e-11, atol=1e-12 * np.abs(P).max())
    np.testing.assert_allclose(w_r.sum(), 1.0, rtol=1e-14)
    np.testing.assert_allclose(np.bincount(groups, weights=w), w_r, rtol=1e-14)


def test_all_components_kept_and_one_component():
    w, mu, S = random_mixture(np.random.default_rng(1), 5, 2)
    w5, mu5, S5, g5 = reduce_moments(w, mu, S, components=5)
    assert (w5 == w).all() and (mu5 == mu).all() and (S5 == S).all()
    assert (g5 == np.arange(5)).all()
    w1, mu1, S1, g1 = reduce_moments(w, mu, S, components=1)
    m, P = moments(w, mu, S)
    np.testing.assert_allclose(w1, [1.0], rtol=1e-15)
    np.testing.assert_allclose(mu1[0], m, rtol=1e-14)
    np.testing.assert_allclose(S1[0], P, rtol=1e-12)
    assert (g1 == 0).all()


def test_runnalls_first_merge_worked_by_hand():
    # B(i, j) = ((wi + wj) log Pij - wi log Pi - wj log Pj) / 2 with
    # Pij = (wi Pi + wj Pj) / w + wi wj / w^2 (mi - mj)^2, computed here with math.
    w, m, P = [0.2, 0.3, 0.5], [0.0, 1.0, 4.0], [1.0, 0.5, 2.0]

    def cost(i, j):
        wt = w[i] + w[j]
        Pij = (w[i] * P[i] + w[j] * P[j]) / wt + w[i] * w[j] / wt**2 * (m[i] - m[j]) ** 2
        return 0.5 * (wt * math.log(Pij) - w[i] * math.log(P[i]) - w[j] * math.log(P[j]))

    costs = {(0, 1): cost(0, 1), (0, 2): cost(0, 2), (1, 2): cost(1, 2)}
    assert min(costs, key=costs.get) == (0, 1)  # 0.0766 < 0.451 < 0.525
    for diag in (True, False):
        S = np.array(P)[:, None] if diag else np.array(P)[:, None, None]
        w_r, mu_r, _, groups = reduce_moments(np.array(w), np.array(m)[:, None], S, components=2)
        assert groups.tolist() == [0, 0, 1]
        np.testing.assert_allclose(w_r, [0.5, 0.5], rtol=1e-15)
        np.testing.assert_allclose(mu_r[:, 0], [0.3 / 0.5, 4.0], rtol=1e-15)


def naive_greedy(w, mu, S, method, k=1, threshold=np.inf):
    """Every pair's cost recomputed at every step (O(C^3)), with its own costs (slogdet, inv,
    loops) and the same tie rule (the lowest pair); returns the result and the merge costs."""
    w, mu, S = [list(np.array(a, dtype=np.float64)) for a in (w, mu, S)]
    groups = list(range(len(w)))
    m, P = moments(np.array(w), np.array(mu), np.array(S))
    Pinv = np.linalg.inv(P)

    def cost(i, j):
        wt = w[i] + w[j]
        d = mu[i] - mu[j]
        if method == "runnalls":
            Pm = (w[i] * S[i] + w[j] * S[j]) / wt + w[i] * w[j] / wt**2 * np.outer(d, d)
            ld = [np.linalg.slogdet(x)[1] for x in (Pm, S[i], S[j])]
            return 0.5 * (wt * ld[0] - w[i] * ld[1] - w[j] * ld[2])
        metric = Pinv if method == "salmond" else np.linalg.inv(S[i] + S[j])
        return w[i] * w[j] / wt * float(d @ metric @ d)

    active, made = list(range(len(w))), []
    while len(active) > k:
        if method == "west":
            i = min(active, key=lambda a: (w[a], a))
            best = min((cost(i, j), min(i, j), max(i, j)) for j in active if j != i)
        else:
            best = min((cost(x, y), x, y) for x in active for y in active if y > x)
        if best[0] > threshold:
            break
        made.append(best[0])
        _, a, b = best
        wt = w[a] + w[b]
        d = mu[a] - mu[b]
        S[a] = (w[a] * S[a] + w[b] * S[b]) / wt + w[a] * w[b] / wt**2 * np.outer(d, d)
        mu[a] = (w[a] * mu[a] + w[b] * mu[b]) / wt
        w[a] = wt
        groups = [a if g == b else g for g in groups]
        active.remove(b)
    renumber = {a: n for n, a in enumerate(active)}
    out = [np.array([x[a] for a in active]) for x in (w, mu, S)]
    return (*out, np.array([renumber[g] for g in groups])), made


@pytest.mark.parametrize("method", METHODS)
def test_lazy_greedy_equals_the_naive_greedy(method):
    w, mu, S = random_mixture(np.random.default_rng(2), 30, 2)
    got = reduce_moments(w, mu, S, components=7, method=method)
    (w_ref, mu_ref, S_ref, g_ref), _ = naive_greedy(w, mu, S, method, k=7)
    assert (got[3] == g_ref).all()
    for a, b in zip(got[:3], (w_ref, mu_ref, S_ref)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("method", METHODS)
def test_threshold_stops_before_a_costlier_merge(method):
    w, mu, S = random_mixture(np.random.default_rng(3), 20, 2)
    _, costs = naive_greedy(w, mu, S, method)
    t = float(np.median(costs))
    (w_ref, mu_ref, S_ref, g_ref), made = naive_greedy(w, mu, S, method, threshold=t)
    # Every merge made cost at most t, and the next one (the naive run without a threshold
    # shares the same prefix) costs more.
    assert made == costs[:len(made)] and max(made) <= t < costs[len(made)]
    w_t, mu_t, S_t, g_t = reduce_moments(w, mu, S, threshold=t, method=method)
    assert w_t.size == 20 - len(made) and (g_t == g_ref).all()
    np.testing.assert_allclose(mu_t, mu_ref, rtol=1e-12, atol=1e-14)
    # With both given, the first stop wins.
    assert reduce_moments(w, mu, S, threshold=t, components=19, method=method)[0].size == 19
    assert reduce_moments(w, mu, S, threshold=t, components=1, method=method)[0].size == w_t.size


def _case(**change):
    w, mu, S = random_mixture(np.random.default_rng(5), 4, 2)
    args = {"weights": w, "means": mu, "covs": S, "components": 2}
    args.update(change)
    return args


def _bad_cov():
    S = random_mixture(np.random.default_rng(5), 4, 2)[2].copy()
    S[2] = [[1.0, 2.0], [2.0, 1.0]]
    return S


def _asym_cov():
    S = random_mixture(np.random.default_rng(5), 4, 2)[2].copy()
    S[1, 0, 1] += 1e-3
    return S


@pytest.mark.parametrize("change, message", [
    ({"components": 0}, r"components must be in 1..C = 4, found 0"),
    ({"components": 5}, r"components must be in 1..C = 4, found 5"),
    ({"components": 2.0}, r"components must be in 1..C = 4, found 2.0"),
    ({"components": None}, r"give components= \(the number to keep\), threshold="),
    ({"method": "greedy"}, r"method must be one of runnalls, west, salmond, found 'greedy'"),
    ({"threshold": -1.0}, r"threshold must be a finite number >= 0, found -1.0"),
    ({"threshold": math.nan}, r"threshold must be a finite number >= 0, found nan"),
    ({"weights": np.ones((0,)), "means": np.ones((0, 2)), "covs": np.ones((0, 2))},
     r"weights must be a vector \[C\] with C >= 1, found shape \(0,\)"),
    ({"weights": np.ones((2, 2)) / 4}, r"weights must be a vector \[C\]"),
    ({"means": np.zeros((3, 2))}, r"means must be \[C, D\] = \[4, D\], found shape \(3, 2\)"),
    ({"covs": np.ones((4, 3))}, r"covs must be \[C, D, D\] = \[4, 2, 2\] or diagonal"),
    ({"weights": np.array([0.5, np.nan, 0.25, 0.25])},
     r"weights must be finite and >= 0, found nan at component 1"),
    ({"weights": np.array([0.5, 0.75, -0.25, 0.0])},
     r"weights must be finite and >= 0, found -0.25 at component 2"),
    ({"weights": np.array([0.25, 0.25, 0.25, 0.25 + 2e-6])},
     r"weights must sum to 1 \(within 1e-06\), found 1.000002"),
    ({"means": np.array([[0, 0], [0, 0], [0, np.inf], [0, 0]])},
     r"means must be finite, found a non-finite entry at component 2"),
    ({"covs": np.array([[1, 1], [1, 0], [1, 1], [1, 1.0]])},
     r"diagonal covs must be > 0, found \[1.0, 0.0\] at component 1"),
    ({"covs": _asym_cov()}, r"covs must be symmetric, found an asymmetric matrix at component 1"),
    ({"covs": _bad_cov()}, r"covs must be positive definite \(Cholesky failed\) at component 2"),
])
def test_rules(change, message):
    with pytest.raises(ValueError, match=r"^\[reduce_mixture\] " + message):
        reduce_moments(**_case(**change))
    args = _case(**change)
    with pytest.raises(ValueError, match=r"^\[mine\] "):
        reduce_moments(**args, op="mine")


# The wrapper gk.reduce_mixture (python/gausskl/_mixtures.py), from the installed package.

def test_wrapper_batches_and_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    mu = rng.normal(size=(3, 6, 2))
    v = rng.uniform(0.5, 1, (3, 6, 2))
    w = rng.dirichlet(np.ones(6), size=3)
    f = gk.GaussianMixture(gk.DiagGaussian(torch.tensor(mu), var=torch.tensor(v)),
                           weights=torch.tensor(w))
    r = gk.reduce_mixture(f, 2)
    assert r.batch_shape == (3,) and r.n_components == 2 and r.is_torch
    for b in range(3):
        one = gk.reduce_mixture(gk.GaussianMixture(gk.DiagGaussian(mu[b], var=v[b]),
                                                   weights=w[b]), 2)
        np.testing.assert_allclose(r.components.mean[b].numpy(), one.components.mean, rtol=1e-14)
    f0 = gk.GaussianMixture(gk.DiagGaussian(mu[0], var=v[0]), weights=w[0])
    d = gk.reduce_mixture(f0, 2, diagonal=True)
    assert isinstance(d.components, gk.DiagGaussian)
    np.testing.assert_allclose(np.diag(d.covariance), np.diag(f0.covariance), rtol=1e-13)


@pytest.mark.parametrize("kwargs, message", [
    ({"components": 0}, r"components must be an integer in 1..C = 4, found 0"),
    ({}, r"give components= \(the number to keep\), threshold="),
    ({"components": 2, "method": "greedy"}, r"method must be one of runnalls, west, salmond"),
    ({"components": 2, "diagonal": True}, r"diagonal=True needs diagonal components"),
])
def test_wrapper_rules(kwargs, message):
    w, mu, S = random_mixture(np.random.default_rng(5), 4, 2)
    f = gk.GaussianMixture(gk.FullGaussian(mu, covariance=S), weights=w)
    with pytest.raises(ValueError, match=r"^\[reduce_mixture\] " + message):
        gk.reduce_mixture(f, **kwargs)
    f = gk.GaussianMixture(gk.DiagGaussian(np.zeros((2, 3, 1)), std=np.ones((2, 3, 1))),
                           weights=np.ones((2, 3)) / 3)
    with pytest.raises(ValueError, match=r"a batch of mixtures \(batch_shape \(2,\)\)"):
        gk.reduce_mixture(f, threshold=0.1)
