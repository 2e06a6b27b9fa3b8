"""gk.frechet_from_features: the value against gk.frechet_distance of gk.fit_gaussian; the
bootstrap replicates and FD-infinity reproduced draw for draw in NumPy (np.cov, and the distance
from scipy-free eigenvalues of the symmetric L^T S2 L); the estimates' statistics on data whose
answer is known; inputs (memory-mapped, torch, a fixed Gaussian); every error rule."""

import numpy as np
import pytest

import gausskl as gk
from conftest import needs_torch


def _np_fd(x, y, ddof=1):
    """The Fréchet distance of the Gaussians fitted to x and y, in NumPy float64."""
    m1, m2 = x.mean(0), y.mean(0)
    s1 = np.cov(x, rowvar=False, ddof=ddof)
    s2 = np.cov(y, rowvar=False, ddof=ddof)
    return _np_fd_stats(m1, s1, m2, s2)


def _np_fd_stats(m1, s1, m2, s2):
    low = np.linalg.cholesky(s1)
    mu = np.linalg.eigvalsh(low.T @ s2 @ low)
    return float(((m1 - m2) ** 2).sum() + np.trace(s1) + np.trace(s2)
                 - 2 * np.sqrt(np.maximum(mu, 0)).sum())


@pytest.fixture
def features():
    rng = np.random.default_rng(7)
    a = rng.normal(size=(6, 6))
    x = rng.normal(size=(900, 6)) @ a + 3.0
    y = rng.normal(size=(700, 6)) @ (a + 0.3 * np.eye(6)) + 2.5
    return x, y


def test_value_is_frechet_distance_of_the_fits(features):
    x, y = features
    got = gk.frechet_from_features(x, y, chunk_rows=100)
    assert isinstance(got, float)
    assert got == pytest.approx(_np_fd(x, y), rel=1e-12)
    ref = float(gk.frechet_distance(gk.fit_gaussian(x), gk.fit_gaussian(y)))
    assert got == pytest.approx(ref, rel=1e-13)
    assert gk.frechet_from_features(x, y, ddof=0) == pytest.approx(_np_fd(x, y, ddof=0), rel=1e-12)


def test_bootstrap_replicates_reproduced_in_numpy(features):
    x, y = features
    fd, extras = gk.frechet_from_features(x, y, bootstrap=5, seed=3, chunk_rows=128)
    rng = np.random.default_rng(3)
    want = []
    for _ in range(5):
        ix = np.sort(rng.integers(0, len(x), len(x)))
        iy = np.sort(rng.integers(0, len(y), len(y)))
        want.append(_np_fd(x[ix], y[iy]))
    np.testing.assert_allclose(extras["bootstrap_values"], want, rtol=1e-11)
    assert extras["bootstrap_se"] == pytest.approx(np.std(want, ddof=1), rel=1e-9)
    assert set(extras) == {"bootstrap_se", "bootstrap_values"}


def test_fixed_gaussian_is_not_resampled(features):
    x, y = features
    g = gk.fit_gaussian(y)
    fd, extras = gk.frechet_from_features(x, g, bootstrap=3, seed=11)
    rng = np.random.default_rng(11)
    want = [_np_fd_stats(x[ix].mean(0), np.cov(x[ix], rowvar=False), y.mean(0),
                         np.cov(y, rowvar=False))
            for ix in (np.sort(rng.integers(0, len(x), len(x))) for _ in range(3))]
    np.testing.assert_allclose(extras["bootstrap_values"], want, rtol=1e-11)
    assert fd == pytest.approx(_np_fd(x, y), rel=1e-12)


def test_fd_infinity_reproduced_in_numpy(features):
    x, y = features
    fd, extras = gk.frechet_from_features(x, y, fd_infinity=True, points=6, smallest=100,
                                          seed=5, chunk_rows=64)
    order = np.random.default_rng(5).permutation(len(x))
    sizes = np.unique(np.linspace(100, len(x), 6).astype(np.int64))
    np.testing.assert_array_equal(extras["fd_infinity_sizes"], sizes)
    want = np.array([_np_fd(x[order[:n]], y) for n in sizes])
    np.testing.assert_allclose(extras["fd_infinity_values"], want, rtol=1e-11)
    slope, intercept = np.polyfit(1.0 / sizes, want, 1)
    assert extras["fd_infinity"] == pytest.approx(intercept, rel=1e-9)
    assert extras["fd_infinity_slope"] == pytest.approx(slope, rel=1e-9)
    assert extras["fd_infinity_values"][-1] == pytest.approx(fd, rel=1e-12)


def test_fd_infinity_removes_the_sample_size_bias():
    # x drawn from N(0, I) against the exact N(0, I): the true distance is 0 and FD at N is all
    # bias (O(D^2 / N)); over 12 samples (fixed seeds) the extrapolation removes most of it.
    d, n = 16, 2000
    exact = gk.FullGaussian(np.zeros(d), covariance=np.eye(d))
    fds, infinities = [], []
    for seed in range(12):
        x = np.random.default_rng(seed).normal(size=(n, d))
        fd, extras = gk.frechet_from_features(x, exact, fd_infinity=True, seed=seed)
        fds.append(fd)
        infinities.append(extras["fd_infinity"])
        assert extras["fd_infinity_slope"] > 0
    assert abs(np.mean(infinities)) < 0.3 * np.mean(fds)


def test_bootstrap_se_matches_the_spread_over_new_samples():
    # The bootstrap SE from one sample against the standard deviation of FD over 30 independent
    # samples of the same two distributions (fixed seeds): within a factor of 2.
    rng = np.random.default_rng(2)
    d, n = 4, 400
    shift = np.full(d, 0.4)
    draws = [_np_fd(rng.normal(size=(n, d)), rng.normal(size=(n, d)) + shift)
             for _ in range(30)]
    x, y = rng.normal(size=(n, d)), rng.normal(size=(n, d)) + shift
    _, extras = gk.frechet_from_features(x, y, bootstrap=60, seed=4)
    ratio = extras["bootstrap_se"] / np.std(draws, ddof=1)
    assert 0.5 < ratio < 2.0


def test_memory_mapped_features(tmp_path, features):
    x, y = features
    np.save(tmp_path / "x.npy", x.astype(np.float32))
    mapped = np.load(tmp_path / "x.npy", mmap_mode="r")
    got = gk.frechet_from_features(mapped, y, chunk_rows=50)
    assert got == pytest.approx(_np_fd(x.astype(np.float32).astype(np.float64), y), rel=1e-11)


@needs_torch
def test_torch_features(features):
    import torch

    x, y = features
    got = gk.frechet_from_features(torch.from_numpy(x), torch.from_numpy(y).float())
    assert got == pytest.approx(_np_fd(x, y.astype(np.float32).astype(np.float64)), rel=1e-11)


def test_progress_callable_sees_every_distance(features):
    x, y = features
    seen = []
    gk.frechet_from_features(x, y, bootstrap=3, fd_infinity=True, points=4, seed=0,
                             progress=lambda done, total: seen.append((done, total)))
    assert seen == [(i, 8) for i in range(1, 9)]


def test_progress_lines(features, capsys):
    x, y = features
    gk.frechet_from_features(x, y, bootstrap=2, seed=0, progress=True)
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("[frechet_from_features] 3 distances done in ")


@pytest.mark.parametrize("kwargs, error, text", [
    ({"bootstrap": -1}, ValueError, "[frechet_from_features] bootstrap must be at least 0, found -1"),
    ({"bootstrap": True}, TypeError, "[frechet_from_features] bootstrap must be an integer, found bool"),
    ({"ddof": 1.5}, TypeError, "[frechet_from_features] ddof must be an integer, found float"),
    ({"chunk_rows": 0}, ValueError, "[frechet_from_features] chunk_rows must be at least 1, found 0"),
    ({"fd_infinity": 1}, TypeError, "[frechet_from_features] fd_infinity must be True or False, found int"),
    ({"fd_infinity": True, "points": 1}, ValueError, "[frechet_from_features] points must be at least 2, found 1"),
    ({"fd_infinity": True, "smallest": 900}, ValueError, "[frechet_from_features] fd_infinity needs sizes from smallest = 900 to N = 900"),
    ({"fd_infinity": True, "smallest": 3}, ValueError, "[frechet_from_features] smallest must be at least 7, found 3"),
])
def test_option_errors(features, kwargs, error, text):
    x, y = features
    with pytest.raises(error) as e:
        gk.frechet_from_features(x, y, **kwargs)
    assert str(e.value).startswith(text)


def test_input_errors(features):
    x, y = features
    with pytest.raises(ValueError, match=r"^\[frechet_from_features\] x must be features \[N, D\]"):
        gk.frechet_from_features(x[0], y)
    with pytest.raises(ValueError, match=r"^\[frechet_from_features\] y has 1 rows; the covariance "
                                         r"needs more than ddof = 1"):
        gk.frechet_from_features(x, y[:1])
    with pytest.raises(ValueError, match=r"^\[frechet_from_features\] x and y have D = 6 and "
                                         r"D = 5; D must match"):
        gk.frechet_from_features(x, y[:, :5])
    with pytest.raises(ValueError, match=r"^\[frechet_from_features\] fd_infinity subsamples x"):
        gk.frechet_from_features(gk.fit_gaussian(x), y, fd_infinity=True)
    bad = x.copy()
    bad[5, 2] = np.nan
    with pytest.raises(ValueError, match=r"^\[MomentAccumulator\]"):
        gk.frechet_from_features(bad, y)
