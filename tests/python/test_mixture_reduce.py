"""gk.reduce_mixture: moments preserved (against the mixture's own moments, computed here), the
lazy greedy against a naive greedy written here (every pair's cost recomputed each step), a
1-D case worked by hand, threshold stopping, and the input rules."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gausskl as gk


def moments(w, mu, S):
    m = (w[:, None] * mu).sum(0)
    dev = mu - m
    return m, (w[:, None, None] * (S + dev[:, :, None] * dev[:, None, :])).sum(0)


def full_mixture(rng, c, d, offset=0.0):
    mu = rng.normal(size=(c, d)) * 2 + offset
    A = rng.normal(size=(c, d, d)) * 0.5
    S = A @ np.swapaxes(A, -1, -2) + 0.1 * np.eye(d)
    w = rng.dirichlet(np.ones(c))
    return gk.GaussianMixture(gk.FullGaussian(mu, covariance=S), weights=w), (w, mu, S)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), c=st.integers(2, 12), d=st.integers(1, 3),
       offset=st.sampled_from([0.0, 1e3]), method=st.sampled_from(["runnalls", "west", "salmond"]),
       diag=st.booleans())
def test_mean_and_covariance_are_preserved(seed, c, d, offset, method, diag):
    rng = np.random.default_rng(seed)
    if diag:
        mu = rng.normal(size=(c, d)) + offset
        v = rng.uniform(0.1, 2, (c, d))
        w = rng.dirichlet(np.ones(c))
        f = gk.GaussianMixture(gk.DiagGaussian(mu, var=v), weights=w)
        S = v[:, :, None] * np.eye(d)
    else:
        f, (w, mu, S) = full_mixture(rng, c, d, offset)
    m, P = moments(w, mu, S)
    k = int(rng.integers(1, c + 1))
    r = gk.reduce_mixture(f, k, method=method)
    assert r.n_components == k
    np.testing.assert_allclose(r.mean, m, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(r.covariance, P, rtol=1e-10, atol=1e-12 * np.abs(P).max())
    np.testing.assert_allclose(np.asarray(r.weights).sum(), 1.0, rtol=1e-14)


def test_all_components_kept_and_one_component():
    rng = np.random.default_rng(1)
    f, (w, mu, S) = full_mixture(rng, 5, 2)
    same = gk.reduce_mixture(f, 5)
    np.testing.assert_allclose(same.components.mean, mu, rtol=1e-15)
    np.testing.assert_allclose(same.weights, w, rtol=1e-15)
    one = gk.reduce_mixture(f, 1)
    m, P = moments(w, mu, S)
    np.testing.assert_allclose(one.components.mean[0], m, rtol=1e-14)
    np.testing.assert_allclose(one.components.arrays["scale"][0], P, rtol=1e-12)


def test_runnalls_first_merge_worked_by_hand():
    # Three 1-D components; B(i, j) = ((wi + wj) log Pij - wi log Pi - wj log Pj) / 2 with
    # Pij = (wi Pi + wj Pj) / w + wi wj / w^2 (mi - mj)^2, computed here with math.
    w, m, P = [0.2, 0.3, 0.5], [0.0, 1.0, 4.0], [1.0, 0.5, 2.0]

    def cost(i, j):
        wt = w[i] + w[j]
        Pij = (w[i] * P[i] + w[j] * P[j]) / wt + w[i] * w[j] / wt**2 * (m[i] - m[j]) ** 2
        return 0.5 * (wt * math.log(Pij) - w[i] * math.log(P[i]) - w[j] * math.log(P[j]))

    costs = {(0, 1): cost(0, 1), (0, 2): cost(0, 2), (1, 2): cost(1, 2)}
    i, j = min(costs, key=costs.get)
    f = gk.GaussianMixture(gk.DiagGaussian(np.array(m)[:, None], var=np.array(P)[:, None]),
                           weights=np.array(w))
    r = gk.reduce_mixture(f, 2)
    k = ({0, 1, 2} - {i, j}).pop()
    wt = w[i] + w[j]
    merged_mean = (w[i] * m[i] + w[j] * m[j]) / wt
    got = sorted(zip(np.asarray(r.weights), r.components.mean[:, 0]))
    want = sorted([(wt, merged_mean), (w[k], m[k])])
    np.testing.assert_allclose(got, want, rtol=1e-14)


def naive_greedy(w, mu, S, k, method):
    """Every pair's cost recomputed at every step (O(C^3)), the same costs and tie rule."""
    from gausskl._mixture_reduce import _costs, _logdet, merge

    w, mu, S = [np.array(a, dtype=np.float64) for a in (w, mu, S)]
    active = list(range(len(w)))
    m, P = moments(w, mu, S)
    Pinv = np.linalg.inv(P)
    while len(active) > k:
        ld = _logdet(S, False)
        if method == "west":
            i = min(active, key=lambda a: (w[a], a))
            pairs = [(min(i, j), max(i, j)) for j in active if j != i]
            vals = [_costs(method, w, mu, S, ld, i, np.array([j]), False, Pinv)[0]
                    for j in active if j != i]
            a, b = pairs[int(np.argmin(vals))]
        else:
            best = None
            for x in active:
                for y in active:
                    if y > x:
                        v = _costs(method, w, mu, S, ld, x, np.array([y]), False, Pinv)[0]
                        if best is None or v < best[0]:
                            best = (v, x, y)
            _, a, b = best
        w[a], mu[a], S[a] = merge(w, mu, S, a, b, False)
        active.remove(b)
    return w[active], mu[active]


@pytest.mark.parametrize("method", ["runnalls", "west", "salmond"])
def test_lazy_greedy_equals_the_naive_greedy(method):
    rng = np.random.default_rng(2)
    f, (w, mu, S) = full_mixture(rng, 30, 2)
    r = gk.reduce_mixture(f, 7, method=method)
    w_ref, mu_ref = naive_greedy(w, mu, S, 7, method)
    np.testing.assert_allclose(np.asarray(r.weights), w_ref, rtol=1e-12)
    np.testing.assert_allclose(r.components.mean, mu_ref, rtol=1e-12)


def test_threshold_stops_before_a_costlier_merge():
    from gausskl._mixture_reduce import reduce_moments

    rng = np.random.default_rng(3)
    _, (w, mu, S) = full_mixture(rng, 20, 2)
    full = [reduce_moments(w, mu, S, components=k)[0].size for k in range(1, 21)]
    assert full == list(range(1, 21))
    t = 0.05
    w_t, mu_t, S_t, groups = reduce_moments(w, mu, S, threshold=t)
    # The next merge of what is left would cost more than t; every merge made cost at most t:
    # reducing one more gives a mixture whose cheapest merge was above t.
    from gausskl._mixture_reduce import _costs, _logdet

    ld = _logdet(S_t, False)
    cheapest = min(_costs("runnalls", w_t, mu_t, S_t, ld, i, np.array([j]), False, None)[0]
                   for i in range(len(w_t)) for j in range(i + 1, len(w_t)))
    assert cheapest > t and len(w_t) < 20
    assert groups.shape == (20,) and set(groups) == set(range(len(w_t)))


def test_batches_and_torch():
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
    d = gk.reduce_mixture(gk.GaussianMixture(gk.DiagGaussian(mu[0], var=v[0]), weights=w[0]), 2,
                          diagonal=True)
    assert isinstance(d.components, gk.DiagGaussian)
    np.testing.assert_allclose(np.diag(d.covariance),
                               np.diag(gk.GaussianMixture(gk.DiagGaussian(mu[0], var=v[0]),
                                                          weights=w[0]).covariance), rtol=1e-13)


@pytest.mark.parametrize("kwargs, message", [
    ({"components": 0}, r"components must be an integer in 1..C = 4, found 0"),
    ({"components": 5}, r"components must be an integer in 1..C = 4, found 5"),
    ({}, r"give components= \(the number to keep\), threshold="),
    ({"components": 2, "method": "greedy"}, r"method must be one of runnalls, west, salmond"),
    ({"threshold": -1.0}, r"threshold must be a finite number >= 0, found -1.0"),
    ({"components": 2, "diagonal": True}, r"diagonal=True needs diagonal components"),
])
def test_rules(kwargs, message):
    rng = np.random.default_rng(5)
    f, _ = full_mixture(rng, 4, 2)
    with pytest.raises(ValueError, match=r"^\[reduce_mixture\] " + message):
        gk.reduce_mixture(f, **kwargs)


def test_a_batch_needs_a_number_of_components():
    f = gk.GaussianMixture(gk.DiagGaussian(np.zeros((2, 3, 1)), std=np.ones((2, 3, 1))),
                           weights=np.ones((2, 3)) / 3)
    with pytest.raises(ValueError, match=r"a batch of mixtures \(batch_shape \(2,\)\)"):
        gk.reduce_mixture(f, threshold=0.1)
