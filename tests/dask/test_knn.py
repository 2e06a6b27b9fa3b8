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


@pytest.mark.parametrize("tolerance", (None, 1e-7, 1e-5, 1e-3))
def test_knn_float32_is_the_library_s_bit_for_bit(client, rng, tolerance):
    """float32 inputs, D = 64, where a float32 call with a tolerance of 1e-5 or more runs the
    library's float kernel: the blocks rank float64 copies (screened at 1e-7 by default) and
    round at the end, and the result is gk.knn_kl's on the float32 batch, bit for bit, whatever
    the tolerance. The rows come in pairs, the second with one mean nudged by 2^-22: the pairs'
    values tie in float32 but not in the doubles the library ranks by (about a third of the
    float32 ties then have the higher index first), so a merge ranking rounded values would
    differ."""
    a = arrays(rng, "std", 90, 64, np.float32)
    b = arrays(rng, "std", 150, 64, np.float32)
    for x in (a, b):
        for name in ("mean", "std"):
            x[name][1::2] = x[name][0::2]
        x["mean"][1::2, 0] *= np.float32(1 + 2**-22)
    kw = {} if tolerance is None else {"tolerance": tolerance}
    p, q = gaussian("std", a), gaussian("std", b)
    runs, wants = [], []
    for pc, qc in (((90,), (150,)), ((7,) * 12 + (6,), (1,) * 10 + (14,) * 10),
                   ((30, 60), (75, 75))):
        runs.append(gk.dask.knn_kl(chunked("std", a, pc), chunked("std", b, qc), k=10, **kw))
        wants.append(gk.knn_kl(p, q, k=10, **kw))
        runs.append(gk.dask.knn_kl(chunked("std", a, pc), k=10, exclude_self=True, **kw))
        wants.append(gk.knn_kl(p, k=10, exclude_self=True, **kw))
    for (idx, val), got, want in zip(runs, dask.compute(*runs), wants):
        assert val.dtype == np.float32 and want[1].dtype == np.float32
        same(got, want)
    ties = np.diff(wants[0][1], axis=1) == 0
    assert np.any(ties & (np.diff(wants[0][0], axis=1) < 0))  # the data does what it says


@pytest.mark.parametrize("param", ("std", "scale_tril", "cov_factor"))
def test_knn_q_is_p_cut_apart_with_q_rows(client, rng, param):
    """q = p with q_rows: q cut apart from p (every block a call on two batches; exclude_self
    keeps k + 1 and leaves out j = i at the end), the same result bit for bit, duplicates (KL 0
    to a lower index than i) included."""
    a = arrays(rng, param, 41, 3)
    for name in a:
        a[name][30:36] = a[name][10]  # rows 10 and 30..35 alike: i's self is not always first
    runs, wants = [], []
    for chunks, q_rows in (((41,), 7), ((5,) * 8 + (1,), 41), ((1,) * 41, 2), ((13, 28), 64)):
        for exclude_self in (False, True):
            runs.append(gk.dask.knn_kl(chunked(param, a, chunks), k=8, exclude_self=exclude_self,
                                       q_rows=q_rows, split_every=3))
            wants.append(gk.knn_kl(gaussian(param, a), k=8, exclude_self=exclude_self))
    for got, want in zip(dask.compute(*runs), wants):
        same(got, want)
    with pytest.raises(ValueError, match=r"q_rows applies to q = p"):
        gk.dask.knn_kl(chunked(param, a, 5), chunked(param, a, 5), k=2, q_rows=10)


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
