"""gk.dask.pairwise_kl on a LocalCluster of worker processes against the single-process
gk.pairwise_kl on the same inputs, for many chunkings and every family and parameterization: bit
for bit (the library's entries depend only on their two distributions), the diagonal exactly 0
with q = p.
"""

import os

import dask
import dask.array as da
import numpy as np
import pytest

import gausskl as gk
from conftest import PARAMS, arrays, chunked, chunkings, gaussian, ragged

DTYPES = (np.float32, np.float64)


def check(got, want, param, dtype, self_pairs):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if self_pairs:
        assert np.all(np.diagonal(got) == 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("param", PARAMS)
def test_pairwise_every_chunking(client, rng, param, dtype):
    a, b = arrays(rng, param, 29, 4, dtype), arrays(rng, param, 23, 4, dtype)
    want = gk.pairwise_kl(gaussian(param, a), gaussian(param, b))
    runs = []
    for p_chunks in chunkings(29, rng):
        for q_chunks in ((23,), (1, 22), ragged(23, rng)):
            x = gk.dask.pairwise_kl(chunked(param, a, p_chunks), chunked(param, b, q_chunks))
            assert x.chunks == (p_chunks, q_chunks)
            runs.append(x)
    for got in dask.compute(*runs):  # one round trip for all the chunkings
        check(got, want, param, dtype, False)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("param", PARAMS)
def test_pairwise_q_is_p(client, rng, param, dtype):
    a = arrays(rng, param, 31, 3, dtype)
    want = gk.pairwise_kl(gaussian(param, a))
    runs = [gk.dask.pairwise_kl(chunked(param, a, chunks)) for chunks in chunkings(31, rng)]
    for got in dask.compute(*runs):
        check(got, want, param, dtype, True)


def test_pairwise_mixed_families(client, rng):
    sides = {"std": arrays(rng, "std", 17, 3), "scale_tril": arrays(rng, "scale_tril", 13, 3),
             "cov_factor": arrays(rng, "cov_factor", 11, 3)}
    for pp, pa in sides.items():
        for qp, qa in sides.items():
            want = gk.pairwise_kl(gaussian(pp, pa), gaussian(qp, qa))
            got = gk.dask.pairwise_kl(chunked(pp, pa, (5, 5, 7)[: 3] if pp == "std" else 4),
                                      chunked(qp, qa, 3)).compute()
            np.testing.assert_array_equal(got, want)


def test_numpy_and_broadcast_arrays(client, rng):
    """A Dask mean with a NumPy scale, and a scalar scale (kept small in the graph)."""
    mu, nu = rng.normal(size=(40, 3)), rng.normal(size=(9, 3))
    std = rng.uniform(0.5, 2, size=(40, 3))
    p = gk.DiagGaussian(da.from_array(mu, chunks=(13, 3)), std=std)
    q = gk.DiagGaussian(da.from_array(nu, chunks=(4, 3)), std=0.7)
    got = gk.dask.pairwise_kl(p, q).compute()
    np.testing.assert_array_equal(got, gk.pairwise_kl(gk.DiagGaussian(mu, std=std),
                                                      gk.DiagGaussian(nu, std=0.7)))
    assert repr(p) == "DiagGaussian(N=40, D=3, std, dtype=float64, dask)"


def test_result_is_lazy_and_float32_in_float32_out(client, rng):
    a = arrays(rng, "logvar", 20, 2, np.float32)
    x = gk.dask.pairwise_kl(chunked("logvar", a, 6))
    assert isinstance(x, da.Array) and x.dtype == np.float32 and x.shape == (20, 20)
    assert x.numblocks == (4, 4)
    # One task per pair of chunks, each one library call.
    assert len([k for k in x.__dask_graph__() if k[0] == x.name]) == 16


def test_to_zarr_streams_chunks_and_leaves_no_temporaries(client, rng, tmp_path):
    zarr = pytest.importorskip("zarr")
    a, b = arrays(rng, "std", 50, 3), arrays(rng, "std", 30, 3)
    p, q = chunked("std", a, (1, 20, 29)), chunked("std", b, 8)  # ragged: made regular
    path = tmp_path / "kl.zarr"
    gk.dask.to_zarr(gk.dask.pairwise_kl(p, q), path)
    stored = zarr.open_array(str(path), mode="r")
    assert stored.shape == (50, 30)
    np.testing.assert_array_equal(stored[:], gk.pairwise_kl(gaussian("std", a),
                                                            gaussian("std", b)))
    assert sorted(os.listdir(tmp_path)) == ["kl.zarr"]
    with pytest.raises(FileExistsError):
        gk.dask.to_zarr(gk.dask.pairwise_kl(p, q), path)
    gk.dask.to_zarr(gk.dask.pairwise_kl(q, p), path, overwrite=True)
    assert zarr.open_array(str(path), mode="r").shape == (30, 50)
    assert sorted(os.listdir(tmp_path)) == ["kl.zarr"]


def test_options_are_the_library_s(client, rng):
    a = arrays(rng, "std", 10, 2)
    p = chunked("std", a, 4)
    with pytest.raises(ValueError, match=r"^\[pairwise_kl\] options.tolerance must be"):
        gk.dask.pairwise_kl(p, tolerance=0.5)  # at once, not at compute time
    with pytest.raises(TypeError, match=r"^\[pairwise_kl\] memory_budget must be an int"):
        gk.dask.pairwise_kl(p, memory_budget=1.5)
    with pytest.raises(ValueError, match=r"^\[pairwise_kl\] p and q have D = 2 and D = 3"):
        gk.dask.pairwise_kl(p, chunked("std", arrays(rng, "std", 5, 3), 2))
    # A budget the blocks cannot run in: the library's RuntimeError from the task.
    x = gk.dask.pairwise_kl(chunked("scale_tril", arrays(rng, "scale_tril", 40, 8), 20),
                            memory_budget=2 << 20)
    with pytest.raises(RuntimeError, match=r"^\[pairwise_kl\] the memory budget"):
        gk.dask.pairwise_kl(chunked("scale_tril", arrays(rng, "scale_tril", 40, 8), 20),
                            memory_budget=1 << 10)
    x.compute()  # 2 MiB is enough for blocks of 20 x 20
    with pytest.raises(ValueError, match="batch shape"):
        gk.dask.pairwise_kl(gk.DiagGaussian(da.zeros((2, 3, 4)), std=1.0))


def test_ordinary_operations_refuse_dask_batches(rng):
    p = chunked("std", arrays(rng, "std", 6, 2), 3)
    with pytest.raises(TypeError, match=r"^\[pairwise_kl\] .*use gausskl.dask.pairwise_kl"):
        gk.pairwise_kl(p)
    with pytest.raises(TypeError, match=r"^\[kl\] .*use gausskl.dask.kl"):
        gk.kl(p, p)


def block_tasks(x):
    return len([k for k in x.__dask_graph__() if k[0] == x.name])


def test_one_row_chunks_are_recut(rng):
    """1-row chunks of a few thousand rows: before, one task per pair of chunks (3,000^2 = 9M
    tasks, GBs of graph in the client); now recut into blocks sized from the memory budget, a
    few tasks, done in seconds with the client's memory bounded (tracemalloc: Python and NumPy
    allocations of this process). Diagonal family: bit for bit the single-process call. On
    Dask's threaded scheduler: the graph is the caller's (6,000 chunks of inputs) and ours."""
    import time
    import tracemalloc

    a, b = arrays(rng, "std", 3000, 4, np.float32), arrays(rng, "std", 2000, 4, np.float32)
    tracemalloc.start()
    try:
        start = time.monotonic()
        same = gk.dask.pairwise_kl(chunked("std", a, 1))
        two = gk.dask.pairwise_kl(chunked("std", a, 1), chunked("std", b, 1))
        assert same.chunks == ((3000,), (3000,)) and block_tasks(same) == 1
        assert two.chunks == ((3000,), (2000,)) and block_tasks(two) == 1
        got_same, got_two = dask.compute(same, two, scheduler="threads")
        elapsed = time.monotonic() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < 60, f"{elapsed:.1f} s"
    # The two results (36 + 24 MB) and the inputs' graph; 9M tasks' graph took over 10 GB.
    assert peak < 400 << 20, f"client peak {peak / 2**20:.0f} MiB"
    np.testing.assert_array_equal(got_same, gk.pairwise_kl(gaussian("std", a)))
    np.testing.assert_array_equal(got_two, gk.pairwise_kl(gaussian("std", a), gaussian("std", b)))


def test_block_rows_from_the_budget_and_d(rng, monkeypatch):
    monkeypatch.setattr(gk.dask, "MAX_TASKS", 10)
    a = arrays(rng, "std", 50, 3)
    x = gk.dask.pairwise_kl(chunked("std", a, 2))  # 625 blocks: recut
    assert x.chunks == ((50,), (50,))
    from gausskl.dask._sides import Side

    def rows(param, n, d, dtype, budget):
        return gk.dask.block_rows(Side("pairwise_kl", "p", chunked(param, arrays(
            rng, param, n, d, dtype), n)), dtype, budget)

    assert rows("std", 10_000, 4, np.float32, 0) == 4096  # 64 MiB of float32 results
    assert rows("std", 10_000, 4, np.float64, 0) == 2048  # 2,896^2 doubles: a power of two
    assert rows("std", 100, 4, np.float32, 0) == 100  # at most the side's rows
    assert rows("std", 10_000, 4, np.float64, 2 << 20) == 512  # the budget: 512^2 x 8 B
    # 64 x 64 + 64 doubles a row (33,280 B): 2,016 rows fit 64 MiB, 1,024 taken
    assert rows("scale_tril", 1100, 64, np.float64, 0) == 1024
    assert rows("scale_tril", 1100, 64, np.float64, 8 << 20) == 128  # 252 rows fit 8 MiB
    s = arrays(rng, "scale_tril", 40, 16)
    z = gk.dask.pairwise_kl(chunked("scale_tril", s, 1))
    assert z.chunks == ((40,), (40,))
    np.testing.assert_array_equal(z.compute(scheduler="sync"),
                                  gk.pairwise_kl(gaussian("scale_tril", s)))
    # q given: each side recut on its own, a side already coarse enough is kept
    b = arrays(rng, "std", 30, 3)
    w = gk.dask.pairwise_kl(chunked("std", a, 1), chunked("std", b, 30))
    assert w.chunks == ((50,), (30,))
    np.testing.assert_array_equal(w.compute(scheduler="sync"),
                                  gk.pairwise_kl(gaussian("std", a), gaussian("std", b)))


def test_explicit_rows_and_the_warning(rng, monkeypatch):
    a, b = arrays(rng, "std", 20, 3), arrays(rng, "std", 9, 3)
    x = gk.dask.pairwise_kl(chunked("std", a, 1), p_rows=8)
    assert x.chunks == ((8, 8, 4), (8, 8, 4))
    np.testing.assert_array_equal(np.diagonal(x.compute(scheduler="sync")), 0)
    y = gk.dask.pairwise_kl(chunked("std", a, 20), chunked("std", b, 9), p_rows=6, q_rows=4)
    assert y.chunks == ((6, 6, 6, 2), (4, 4, 1))
    np.testing.assert_array_equal(y.compute(scheduler="sync"),
                                  gk.pairwise_kl(gaussian("std", a), gaussian("std", b)))
    monkeypatch.setattr(gk.dask, "MAX_TASKS", 10)
    with pytest.warns(dask.array.core.PerformanceWarning,
                      match=r"^\[pairwise_kl\] 16 block tasks \(4 x 4 row chunks\), more than 10: "
                            r".*pass larger p_rows \(20 rows keep a block"):
        gk.dask.pairwise_kl(chunked("std", a, 1), p_rows=5)
    with pytest.warns(dask.array.core.PerformanceWarning, match=r"p_rows and q_rows"):
        gk.dask.pairwise_kl(chunked("std", a, 20), chunked("std", b, 9), p_rows=2, q_rows=2)
    with pytest.raises(ValueError, match=r"^\[pairwise_kl\] q = p is cut like p: give p_rows"):
        gk.dask.pairwise_kl(chunked("std", a, 4), q_rows=4)
    with pytest.raises(ValueError, match=r"^\[pairwise_kl\] p_rows = 0 must be at least 1"):
        gk.dask.pairwise_kl(chunked("std", a, 4), p_rows=0)
    with pytest.raises(TypeError, match=r"^\[pairwise_kl\] q_rows must be an int, found bool"):
        gk.dask.pairwise_kl(chunked("std", a, 4), chunked("std", b, 3), q_rows=True)
