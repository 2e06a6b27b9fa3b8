"""gk.dask.fit_gaussian over row chunks of a Dask array on a LocalCluster of worker processes,
against np.cov of the float64 data (the reference) and gk.fit_gaussian, whatever the chunks."""

import numpy as np
import pytest

import dask.array as da
import gausskl as gk


def rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("chunks", [(1000, 6), (97, 6), (250, 2), (1, 6)])
def test_fit_gaussian_any_chunks(client, rng, chunks):
    n = 1000 if chunks[0] != 1 else 40
    x = (1e3 + 0.1 * rng.normal(size=(n, 6))).astype(np.float32)
    g = gk.dask.fit_gaussian(da.from_array(x, chunks=chunks), split_every=3)
    ref = np.cov(x.astype(np.float64), rowvar=False)
    assert isinstance(g, gk.FullGaussian) and isinstance(g.scale, np.ndarray)
    assert rel(g.scale, ref) <= 1e-10
    assert rel(g.mean, x.astype(np.float64).mean(0)) <= 1e-14
    assert rel(g.scale, gk.fit_gaussian(x).scale) <= 1e-12


def test_diag_ddof_and_moments(client, rng):
    x = rng.normal(size=(300, 4))
    dx = da.from_array(x, chunks=(64, 4))
    g = gk.dask.fit_gaussian(dx, ddof=0, family="diag")
    assert isinstance(g, gk.DiagGaussian)
    assert rel(g.scale, np.var(x, axis=0)) <= 1e-13
    acc = gk.dask.moments(dx).compute()
    assert isinstance(acc, gk.MomentAccumulator) and acc.count == 300
    assert rel(acc.covariance(), np.cov(x, rowvar=False)) <= 1e-13


def test_errors_name_the_row_in_the_whole_array(client, rng):
    x = rng.normal(size=(100, 3))
    x[73, 2] = np.inf
    with pytest.raises(ValueError, match=r"\[MomentAccumulator\] x must be finite, found inf at "
                                         r"row 73, column 2"):
        gk.dask.fit_gaussian(da.from_array(x, chunks=(20, 3)))
    with pytest.raises(ValueError, match=r"^\[fit_gaussian\] ddof = 5 needs more than 5 rows"):
        gk.dask.fit_gaussian(da.from_array(x[:5], chunks=(2, 3)), ddof=5)
    with pytest.raises(TypeError, match=r"^\[fit_gaussian\] x must be a Dask array"):
        gk.dask.fit_gaussian(x)
