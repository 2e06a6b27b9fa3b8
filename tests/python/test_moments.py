"""gk.fit_gaussian and gk.MomentAccumulator against np.cov of the float64 data (the reference):
NumPy and torch input, any split of the rows, merge, pickle and .npz round trips, the diagonal
family, and every error."""

import pickle

import numpy as np
import pytest

import gausskl as gk
from conftest import needs_torch, run_readme_python


def features(rng, n, d, mean=0.0, std=1.0, dtype=np.float64):
    mix = rng.normal(size=(d, d)) / np.sqrt(d) + np.eye(d)
    return (mean + std * rng.normal(size=(n, d)) @ mix).astype(dtype)


def rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ddof", [0, 1, 5])
def test_fit_gaussian_is_np_cov(rng, dtype, ddof):
    x = features(rng, 500, 20, mean=2.0, dtype=dtype)
    g = gk.fit_gaussian(x, ddof=ddof)
    assert isinstance(g, gk.FullGaussian) and g.param == "covariance"
    ref = x.astype(np.float64)
    assert g.mean.dtype == np.float64 and g.scale.dtype == np.float64
    assert g.mean.shape == (20,) and g.scale.shape == (20, 20)
    assert rel(g.mean, ref.mean(axis=0)) <= 1e-14
    assert rel(g.scale, np.cov(ref, rowvar=False, ddof=ddof)) <= 1e-13


def test_large_mean_against_the_spread(rng):
    """float32 features of mean 1e3 and std 0.1: within 1e-10 of np.cov in float64, where raw
    sums (sum x, sum x x^T in float64) lose most digits."""
    x = features(rng, 20000, 16, mean=1e3, std=0.1, dtype=np.float32)
    ref = np.cov(x.astype(np.float64), rowvar=False)
    assert rel(gk.fit_gaussian(x).scale, ref) <= 1e-10
    acc = gk.MomentAccumulator(16)
    for batch in np.array_split(x, 13):
        acc.update(batch)
    assert rel(acc.covariance(), ref) <= 1e-10
    x64 = x.astype(np.float64)
    n = len(x64)
    raw = (x64.T @ x64 - np.outer(x64.sum(0), x64.sum(0)) / n) / (n - 1)
    assert rel(raw, ref) > 1e-8  # what the accumulator avoids


def test_accumulator_pieces_match_one_fit(rng):
    x = features(rng, 1000, 7, mean=-3.0)
    ref = np.cov(x, rowvar=False)
    acc = gk.MomentAccumulator(7)
    for k in range(0, 1000, 37):
        acc.update(x[k:k + 37])
    acc.update(x[:0])  # no rows
    assert acc.count == 1000
    assert rel(acc.mean, x.mean(0)) <= 1e-14
    assert rel(acc.covariance(), ref) <= 1e-13
    assert rel(acc.covariance(ddof=0), np.cov(x, rowvar=False, ddof=0)) <= 1e-13
    g = acc.gaussian()
    assert isinstance(g, gk.FullGaussian) and rel(g.scale, ref) <= 1e-13
    assert rel(acc.scatter(), ref * 999) <= 1e-13


def test_one_row_at_a_time(rng):
    x = features(rng, 50, 4, mean=100.0, dtype=np.float32)
    acc = gk.MomentAccumulator(4)
    for row in x:  # [D] vectors: one row each
        acc.update(row)
    assert acc.count == 50
    assert rel(acc.covariance(), np.cov(x.astype(np.float64), rowvar=False)) <= 1e-12


def test_merge_in_any_order(rng):
    x = features(rng, 600, 5, mean=10.0)
    parts = [gk.MomentAccumulator(5).update(p) for p in np.array_split(x, [1, 2, 100, 350])]
    forward = gk.MomentAccumulator(5)
    for p in parts:
        forward.merge(p)
    backward = gk.MomentAccumulator(5)
    for p in reversed(parts):
        backward.merge(p)
    ref = np.cov(x, rowvar=False)
    for acc in (forward, backward):
        assert acc.count == 600
        assert rel(acc.covariance(), ref) <= 1e-13
    assert parts[0].count == 1  # merge leaves the other unchanged
    same = gk.MomentAccumulator(5).update(x)
    same.merge(same)  # every row twice
    assert same.count == 1200
    assert rel(same.mean, x.mean(0)) <= 1e-14


def test_pickle_and_npz_round_trip(rng, tmp_path):
    x = features(rng, 300, 6)
    acc = gk.MomentAccumulator(6).update(x[:200])
    copy = pickle.loads(pickle.dumps(acc))
    assert copy.count == 200 and np.array_equal(copy.covariance(), acc.covariance())
    path = tmp_path / "state.npz"
    acc.save(path)
    with np.load(path) as f:
        assert sorted(f.files) == ["count", "mean", "scatter"]
        assert f["count"].dtype == np.int64 and f["count"].shape == ()
        assert np.array_equal(f["scatter"], acc.scatter())
    loaded = gk.MomentAccumulator.load(path)
    for a in (acc, copy, loaded):
        a.update(x[200:])
    ref = np.cov(x, rowvar=False)
    assert np.array_equal(loaded.covariance(), acc.covariance())
    assert np.array_equal(copy.covariance(), acc.covariance())
    assert rel(acc.covariance(), ref) <= 1e-13
    diag = gk.MomentAccumulator(6, family="diag").update(x)
    diag.save(tmp_path / "diag.npz")
    back = gk.MomentAccumulator.load(tmp_path / "diag.npz")
    assert back.family == "diag" and np.array_equal(back.covariance(), diag.covariance())
    assert pickle.loads(pickle.dumps(diag)).family == "diag"


def test_diag_family(rng):
    x = features(rng, 400, 9, mean=1e3, std=0.1, dtype=np.float32)
    g = gk.fit_gaussian(x, family="diag")
    assert isinstance(g, gk.DiagGaussian) and g.param == "var"
    ref = np.var(x.astype(np.float64), axis=0, ddof=1)
    assert rel(g.scale, ref) <= 1e-10
    acc = gk.MomentAccumulator(9, family="diag")
    for batch in np.array_split(x, 3):
        acc.update(batch)
    assert acc.covariance().shape == (9,)
    assert rel(acc.covariance(), ref) <= 1e-10
    assert isinstance(acc.gaussian(), gk.DiagGaussian)


def test_strided_and_integer_input(rng):
    x = features(rng, 200, 8)
    view = x[::3, ::2]
    assert rel(gk.fit_gaussian(view).scale, np.cov(view, rowvar=False)) <= 1e-13
    ints = rng.integers(0, 100, size=(50, 3))
    assert rel(gk.fit_gaussian(ints).scale, np.cov(ints.astype(np.float64), rowvar=False)) <= 1e-13


@needs_torch
def test_torch_input(rng):
    import torch

    x = features(rng, 300, 10, mean=5.0, dtype=np.float32)
    t = torch.from_numpy(x).requires_grad_()
    g = gk.fit_gaussian(t)
    assert isinstance(g.mean, np.ndarray) and g.mean.dtype == np.float64
    assert rel(g.scale, np.cov(x.astype(np.float64), rowvar=False)) <= 1e-13
    acc = gk.MomentAccumulator(10)
    for batch in torch.from_numpy(x.astype(np.float64)).split(64):
        acc.update(batch)
    assert rel(acc.covariance(), np.cov(x.astype(np.float64), rowvar=False)) <= 1e-13
    assert rel(gk.fit_gaussian(t.T.contiguous().T.half()).scale,
               np.cov(t.detach().half().double().numpy(), rowvar=False)) <= 1e-13


def test_w2_of_fitted_gaussians(rng):
    """The FID recipe: two fitted Gaussians, then the squared 2-Wasserstein distance."""
    a, b = features(rng, 400, 6), features(rng, 400, 6, mean=0.5)
    fid = gk.divergence(gk.fit_gaussian(a), gk.fit_gaussian(b), kind="wasserstein2")
    assert np.isfinite(fid) and fid > 0


def test_errors(rng):
    x = features(rng, 10, 3)
    acc = gk.MomentAccumulator(3).update(x[:2])
    with pytest.raises(ValueError, match=r"^\[MomentAccumulator\] x has 4 columns \(features\), "
                                         r"expected D = 3$"):
        acc.update(np.zeros((2, 4)))
    bad = x.copy()
    bad[7, 2] = np.nan
    with pytest.raises(ValueError, match=r"^\[MomentAccumulator\] x must be finite, found nan at "
                                         r"row 7, column 2$"):
        acc.update(bad)
    with pytest.raises(ValueError, match=r"found nan at row 107, column 2$"):
        acc.update(bad, first_row=100)
    assert acc.count == 2  # nothing added
    with pytest.raises(ValueError, match=r"^\[fit_gaussian\] x must be finite, found inf at row "
                                         r"0, column 1$"):
        gk.fit_gaussian(np.array([[1.0, np.inf, 0], [1, 2, 3]]))
    with pytest.raises(ValueError, match=r"^\[MomentAccumulator\] ddof = 2 needs more than 2 rows, "
                                         r"found 2"):
        acc.covariance(ddof=2)
    with pytest.raises(ValueError, match=r"^\[fit_gaussian\] ddof = 1 needs more than 1 rows, "
                                         r"found 1"):
        gk.fit_gaussian(x[:1])
    with pytest.raises(ValueError, match=r"^\[fit_gaussian\] ddof must be >= 0, found -1"):
        gk.fit_gaussian(x, ddof=-1)
    with pytest.raises(TypeError, match=r"^\[fit_gaussian\] ddof must be an integer"):
        gk.fit_gaussian(x, ddof=0.5)
    with pytest.raises(ValueError, match=r"^\[MomentAccumulator\] family must be 'full' or 'diag'"):
        gk.MomentAccumulator(3, family="low_rank")
    with pytest.raises(ValueError, match=r"^\[MomentAccumulator\] D must be >= 1, found 0"):
        gk.MomentAccumulator(0)
    with pytest.raises(ValueError, match=r"^\[MomentAccumulator\] cannot merge moments of D = 4 "
                                         r"into D = 3"):
        acc.merge(gk.MomentAccumulator(4))
    with pytest.raises(ValueError, match=r"cannot merge a diag accumulator into a full one"):
        acc.merge(gk.MomentAccumulator(3, family="diag"))
    with pytest.raises(TypeError, match=r"merge takes a MomentAccumulator"):
        acc.merge(x)
    with pytest.raises(ValueError, match=r"^\[fit_gaussian\] x must be \[N, D\]"):
        gk.fit_gaussian(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match=r"^\[fit_gaussian\] x must be float32 or float64"):
        gk.fit_gaussian(np.zeros((4, 2), dtype=np.complex128))


def test_readme_fid_snippet_runs_as_pasted():
    """The README's "FID from features" Python example, executed as written."""
    env = run_readme_python("## FID from features", "## C++")
    assert np.isfinite(env["fid"]) and env["fid"] > 0
