"""gk.dask.kl and gk.dask.kl_standard_normal: row-wise, one task per row chunk, bit for bit
the single-process results."""

import dask
import dask.array as da
import numpy as np
import pytest

import gausskl as gk
from conftest import PARAMS, arrays, chunked, chunkings, gaussian, ragged


@pytest.mark.parametrize("dtype", (np.float32, np.float64), ids=lambda t: t.__name__)
@pytest.mark.parametrize("param", PARAMS)
def test_kl_rowwise(client, rng, param, dtype):
    a, b = arrays(rng, param, 30, 4, dtype), arrays(rng, param, 30, 4, dtype)
    want = gk.kl(gaussian(param, a), gaussian(param, b))
    runs = []
    for chunks in chunkings(30, rng):
        # q cut differently: made to follow p's chunks.
        x = gk.dask.kl(chunked(param, a, chunks), chunked(param, b, ragged(30, rng)))
        assert x.chunks == (chunks,)
        runs.append(x)
    *got, prior = dask.compute(*runs, gk.dask.kl_standard_normal(chunked(param, a,
                                                                        ragged(30, rng))))
    for g in got:
        np.testing.assert_array_equal(g, want)
    np.testing.assert_array_equal(prior, gk.kl_standard_normal(gaussian(param, a)))


def test_kl_one_row_pairs_with_every_row(client, rng):
    a, one = arrays(rng, "scale_tril", 20, 3), arrays(rng, "scale_tril", 1, 3)
    np.testing.assert_array_equal(
        gk.dask.kl(chunked("scale_tril", a, 6), gaussian("scale_tril", one)).compute(),
        gk.kl(gaussian("scale_tril", a), gaussian("scale_tril", one)))
    np.testing.assert_array_equal(
        gk.dask.kl(gaussian("scale_tril", {k: v[0] for k, v in one.items()}),
                   chunked("scale_tril", a, 7)).compute(),
        gk.kl(gaussian("scale_tril", {k: v[0] for k, v in one.items()}),
              gaussian("scale_tril", a)))
    with pytest.raises(ValueError, match=r"^\[kl\] p and q have N = 20 and N = 3"):
        gk.dask.kl(chunked("std", arrays(rng, "std", 20, 3), 6),
                   gk.DiagGaussian(da.zeros((3, 3)), std=1.0))
