"""gk.dask.knn_kl on a LocalCluster of worker processes: bit for bit the single-process
gk.knn_kl on the same inputs, whatever the chunking (ragged, chunks of one row, k larger than
every chunk of q, exclude_self across chunk boundaries, deep merge trees), every family and
parameterization, float32 and float64."""

import dask
import dask.array as da
import numpy as np
import pytest

import gausskl as gk
from conftest import PARAMS, arrays, chunked, chunkings, gaussian, ragged

DTYPES = (np.float32, np.float64)


def same(got, want):
    (gi, gv), (wi, wv) = got, want
    assert gi.dtype == np.int64 and gv.dtype == wv.dtype
    np.testing.assert_array_equal(gi, wi)
    np.testing.assert_array_equal(gv, wv)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("param", PARAMS)
def test_knn_every_chunking(client, rng, param, dtype):
    a, b = arrays(rng, param, 26, 4, dtype), arrays(rng, param, 37, 4, dtype)
    k = 9
    want = gk.knn_kl(gaussian(param, a), gaussian(param, b), k=k)
    # q in chunks of one row, smaller than k everywhere, ragged, whole.
    runs = []
    for p_chunks, q_chunks in zip(chunkings(26, rng), ((1,) * 37, (4,) * 9 + (1,),
                                                       ragged(37, rng), (37,))):
        idx, val = gk.dask.knn_kl(chunked(param, a, p_chunks), chunked(param, b, q_chunks), k=k)
        assert idx.chunks == (p_chunks, (k,)) == val.chunks
        runs.append((idx, val))
    for got in dask.compute(*runs):  # one round trip for all the chunkings
        same(got, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("param", PARAMS)
def test_knn_q_is_p_and_exclude_self(client, rng, param, dtype):
    a = arrays(rng, param, 33, 3, dtype)
    for exclude_self in (False, True):
        want = gk.knn_kl(gaussian(param, a), k=6, exclude_self=exclude_self)
        runs = [gk.dask.knn_kl(chunked(param, a, chunks), k=6, exclude_self=exclude_self)
                for chunks in chunkings(33, rng)]
        for got in dask.compute(*runs):
            same(got, want)
            if exclude_self:
                assert not np.any(got[0] == np.arange(33)[:, None])


def test_knn_exclude_self_in_chunks_of_one_row(client, rng):
    """Every block on the diagonal is one row with no candidate but itself."""
    a = arrays(rng, "precision", 20, 3)
    for exclude_self in (False, True):
        same(dask.compute(*gk.dask.knn_kl(chunked("precision", a, 1), k=19,
                                          exclude_self=exclude_self)),
             gk.knn_kl(gaussian("precision", a), k=19, exclude_self=exclude_self))


def test_knn_k_up_to_m(client, rng):
    a, b = arrays(rng, "std", 12, 3), arrays(rng, "std", 10, 3)
    for k in (1, 10):
        same(dask.compute(*gk.dask.knn_kl(chunked("std", a, 5), chunked("std", b, 3), k=k)),
             gk.knn_kl(gaussian("std", a), gaussian("std", b), k=k))
    same(dask.compute(*gk.dask.knn_kl(chunked("std", a, 5), k=11, exclude_self=True)),
         gk.knn_kl(gaussian("std", a), k=11, exclude_self=True))


def test_knn_ties_go_to_the_lower_global_index(client, rng):
    """Copies of the same distributions in different chunks of q: equal values, ranked by index
    across blocks exactly as within one."""
    base = arrays(rng, "var", 5, 3)
    b = {k: np.concatenate([v] * 6) for k, v in base.items()}  # row r == row r + 5 == ...
    a = arrays(rng, "var", 8, 3)
    want = gk.knn_kl(gaussian("var", a), gaussian("var", b), k=12)
    assert np.all(np.diff(want[1], axis=1) >= 0)
    runs = [gk.dask.knn_kl(chunked("var", a, 3), chunked("var", b, q_chunks), k=12,
                           split_every=split_every)
            for q_chunks in ((7, 3, 9, 11), (1,) * 30, (30,)) for split_every in (2, 3, 8)]
    for got in dask.compute(*runs):
        same(got, want)


def test_knn_merge_tree(client, rng):
    """split_every=2 over 40 chunks of q: a tree of depth 6, the same result."""
    a, b = arrays(rng, "scale_tril", 10, 3), arrays(rng, "scale_tril", 80, 3)
    idx, val = gk.dask.knn_kl(chunked("scale_tril", a, 5), chunked("scale_tril", b, 2), k=3,
                              split_every=2)
    keys = [k for k in idx.__dask_graph__() if isinstance(k, tuple) and "merge" in k[0]]
    assert max(k[2] for k in keys) == 5  # depths 0..5
    same(dask.compute(idx, val), gk.knn_kl(gaussian("scale_tril", a),
                                           gaussian("scale_tril", b), k=3))


def test_knn_dask_arrays_from_zarr(client, rng, tmp_path):
    pytest.importorskip("zarr")
    a = arrays(rng, "logvar", 300, 8, np.float32)
    for name, v in a.items():
        da.to_zarr(da.from_array(v, chunks=(64, 8)), str(tmp_path / "p.zarr"), component=name)
    p = gk.DiagGaussian(da.from_zarr(str(tmp_path / "p.zarr"), component="mean"),
                        logvar=da.from_zarr(str(tmp_path / "p.zarr"), component="logvar"))
    same(dask.compute(*gk.dask.knn_kl(p, k=5, exclude_self=True)),
         gk.knn_kl(gaussian("logvar", a), k=5, exclude_self=True))


def test_knn_errors_are_the_library_s(rng):
    p = chunked("std", arrays(rng, "std", 6, 2), 4)
    q = chunked("std", arrays(rng, "std", 5, 2), 2)
    with pytest.raises(ValueError, match=r"^\[knn_kl\] k = 6 must be between 1 and M = 5$"):
        gk.dask.knn_kl(p, q, k=6)
    with pytest.raises(ValueError, match=r"^\[knn_kl\] k = 6 must be between 1 and M - 1 = 5$"):
        gk.dask.knn_kl(p, k=6, exclude_self=True)
    with pytest.raises(ValueError, match=r"^\[knn_kl\] exclude_self needs q = p"):
        gk.dask.knn_kl(p, q, k=1, exclude_self=True)
    with pytest.raises(ValueError, match=r"^\[knn_kl\] options.tolerance"):
        gk.dask.knn_kl(p, k=1, tolerance=-1.0)
    with pytest.raises(TypeError):
        gk.dask.knn_kl(p, k=1.5)
