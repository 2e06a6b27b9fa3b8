"""Shared fixtures of the gausskl.dask tests: a LocalCluster of worker processes per module,
seeded batches of every family and parameterization, and their chunkings."""

import logging
import zlib

import numpy as np
import pytest

pytest.importorskip("dask.array")
pytest.importorskip("distributed")

import dask.array as da  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

import gausskl as gk  # noqa: E402

DIAG = ("std", "var", "logvar", "precision")
FULL = ("scale_tril", "covariance", "precision_matrix", "packed_scale_tril",
        "packed_log_diagonal")
# Every parameterization of every family.
PARAMS = DIAG + FULL + ("cov_factor",)


@pytest.fixture(scope="module")
def client():
    """Two single-threaded worker processes, as `gausskl-dask --scheduler local:2` runs."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as c:
        yield c


@pytest.fixture
def rng(request):
    # Seeded by the test's id: each test sees the same data on every run.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def arrays(rng, param, n, d, dtype=np.float64, r=2):
    """A random batch's arrays (a dict in the constructor's keywords, mean first) and, for
    packed factors, log_diagonal."""
    mean = rng.normal(size=(n, d)) * 2 + 1
    if param in DIAG:
        var = rng.uniform(0.3, 3.0, size=(n, d))
        scale = {"std": np.sqrt(var), "var": var, "logvar": np.log(var), "precision": 1 / var}
        out = {"mean": mean, param: scale[param]}
    elif param == "cov_factor":
        out = {"mean": mean, "cov_factor": rng.normal(size=(n, d, r)) / np.sqrt(r),
               "cov_diag": rng.uniform(0.3, 2.0, size=(n, d))}
    else:
        a = rng.normal(size=(n, d, d)) / np.sqrt(d)
        cov = a @ a.transpose(0, 2, 1) + 0.5 * np.eye(d)
        L = np.linalg.cholesky(cov)
        rows, cols = np.tril_indices(d)
        if param == "packed_scale_tril":
            out = {"mean": mean, "packed_scale_tril": L[:, rows, cols]}
        elif param == "packed_log_diagonal":
            packed = L[:, rows, cols].copy()
            packed[:, rows == cols] = np.log(packed[:, rows == cols])
            out = {"mean": mean, "packed_scale_tril": packed}
        else:
            scale = {"scale_tril": L, "covariance": cov,
                     "precision_matrix": np.linalg.inv(cov)}[param]
            if param != "scale_tril":
                scale = 0.5 * (scale + scale.transpose(0, 2, 1))
            out = {"mean": mean, param: scale}
    return {k: v.astype(dtype) for k, v in out.items()}


def gaussian(param, a, convert=lambda x: x):
    """The batch of arrays a (from `arrays`), each array passed through convert."""
    a = {k: convert(v) for k, v in a.items()}
    mean = a.pop("mean")
    if param == "cov_factor":
        return gk.LowRankGaussian(mean, **a)
    if param in DIAG:
        return gk.DiagGaussian(mean, **a)
    return gk.FullGaussian(mean, **a, log_diagonal=param == "packed_log_diagonal")


def chunked(param, a, chunks):
    """The batch with every array a Dask array in the given row chunks."""
    return gaussian(param, a, lambda x: da.from_array(x, chunks=(chunks,) + x.shape[1:]))


def ragged(n, rng, pieces=4):
    """Row chunks of n of random sizes, one of them a single row when n allows."""
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(pieces - 1, n - 1), replace=False))
    sizes = np.diff(np.concatenate(([0], cuts, [n]))).tolist()
    if n > 3 and 1 not in sizes:
        sizes = [1, sizes[0] - 1] + sizes[1:] if sizes[0] > 1 else sizes
    return tuple(int(s) for s in sizes if s > 0)


def chunkings(n, rng):
    """The row chunkings every test goes through: whole, one row each at the front, regular with
    a short last chunk, ragged with a chunk of one row."""
    return [(n,), (1, n - 1), tuple([7] * (n // 7) + ([n % 7] if n % 7 else [])), ragged(n, rng)]

