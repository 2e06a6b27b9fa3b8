"""Shared fixtures of the Python package tests: seeded data, families, a float64 reference."""

import importlib.util
import zlib

import numpy as np
import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs PyTorch")

DIAG = ("std", "var", "logvar", "precision")
FULL = ("scale_tril", "covariance", "precision_matrix")
# Every parameterization of every family, as (family, param).
PARAMS = [("diag", p) for p in DIAG] + [("full", p) for p in FULL] + [("low_rank", "cov_factor")]


@pytest.fixture
def rng(request):
    # Seeded by the test's id: each test sees the same data on every run.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def random_covariance(rng, n, d):
    a = rng.normal(size=(n, d, d)) / np.sqrt(d)
    return a @ a.transpose(0, 2, 1) + 0.5 * np.eye(d)


def make_arrays(rng, family, param, n, d, r=2, offset=0.0):
    """Arrays (dict, float64) of a random batch in the given parameterization."""
    mean = rng.normal(size=(n, d)) + offset
    if family == "diag":
        var = rng.uniform(0.3, 3.0, size=(n, d))
        scale = {"std": np.sqrt(var), "var": var, "logvar": np.log(var), "precision": 1 / var}
        return {"mean": mean, param: scale[param]}
    if family == "full":
        cov = random_covariance(rng, n, d)
        scale = {
            "scale_tril": np.linalg.cholesky(cov),
            "covariance": cov,
            "precision_matrix": np.linalg.inv(cov),
        }[param]
        if param != "scale_tril":
            scale = 0.5 * (scale + scale.transpose(0, 2, 1))
        return {"mean": mean, param: scale}
    return {
        "mean": mean,
        "cov_factor": rng.normal(size=(n, d, r)) / np.sqrt(r),
        "cov_diag": rng.uniform(0.3, 2.0, size=(n, d)),
    }


def gaussian(arrays, convert=lambda a: a):
    """The gausskl batch of an arrays dict, each array passed through convert."""
    import gausskl as gk

    a = {k: convert(v) for k, v in arrays.items()}
    mean = a.pop("mean")
    if "cov_factor" in a:
        return gk.LowRankGaussian(mean, **a)
    if set(a) & set(DIAG):
        return gk.DiagGaussian(mean, **a)
    return gk.FullGaussian(mean, **a)


def covariance(arrays):
    """Dense covariances [N, D, D] in float64."""
    a = {k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()}
    if a["mean"].ndim == 1:
        a = {k: v[None] for k, v in a.items()}
    d = a["mean"].shape[1]
    if "std" in a:
        return a["std"][:, :, None] ** 2 * np.eye(d)
    if "var" in a:
        return a["var"][:, :, None] * np.eye(d)
    if "logvar" in a:
        return np.exp(a["logvar"])[:, :, None] * np.eye(d)
    if "precision" in a:
        return (1 / a["precision"])[:, :, None] * np.eye(d)
    if "scale_tril" in a:
        L = a["scale_tril"]
        return L @ L.transpose(0, 2, 1)
    if "covariance" in a:
        return a["covariance"]
    if "precision_matrix" in a:
        return np.linalg.inv(a["precision_matrix"])
    W = a["cov_factor"]
    return W @ W.transpose(0, 2, 1) + a["cov_diag"][:, :, None] * np.eye(d)


def ref_kl_dense(mp, S, mq, T):
    """KL(N(mp, S) || N(mq, T)) per row in float64, by Cholesky and solves (broadcasting)."""
    d = mp.shape[-1]
    Lq = np.linalg.cholesky(T)
    Lp = np.linalg.cholesky(S)
    trace = np.trace(np.linalg.solve(T, S), axis1=-2, axis2=-1)
    diff = (mq - mp)[..., None]
    maha = np.sum(diff * np.linalg.solve(T, diff), axis=(-2, -1))
    logdet = lambda L: 2 * np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), -1)  # noqa: E731
    return 0.5 * (trace + maha - d + logdet(Lq) - logdet(Lp))


def ref_kl(p, q):
    mp, mq = np.asarray(p["mean"], np.float64), np.asarray(q["mean"], np.float64)
    mp, mq = np.atleast_2d(mp), np.atleast_2d(mq)
    return ref_kl_dense(mp, covariance(p), mq, covariance(q))


def ref_pairwise(p, q):
    mp, mq = np.atleast_2d(np.asarray(p["mean"], np.float64)), np.atleast_2d(
        np.asarray(q["mean"], np.float64))
    S, T = covariance(p), covariance(q)
    return ref_kl_dense(mp[:, None], S[:, None], mq[None], T[None])


def force_torch_path(monkeypatch):
    """CPU tensors onto the torch path (GAUSSKL_FORCE_TORCH_PATH=1), with any result computed by
    the C++ library an error (its entry points may only answer that the call is the torch
    path's), so that a test of that path cannot pass through the library."""
    from gausskl import _ext

    monkeypatch.setenv("GAUSSKL_FORCE_TORCH_PATH", "1")
    refuse_library(monkeypatch)


def refuse_library(monkeypatch):
    from gausskl import _ext

    for name in ("kl", "kl_standard_normal", "pairwise_kl", "knn_kl"):
        def checked(*args, _real=getattr(_ext, name), **kwargs):
            got = _real(*args, **kwargs)
            if got != _ext.TORCH_PATH:
                raise AssertionError("the C++ library was called")
            return got

        monkeypatch.setattr(_ext, name, checked)


def mp_kl_low_rank(m1, w1, d1, m2, w2, d2):
    """KL between low-rank Gaussians in mpmath (at the caller's mpmath.mp.dps), from the float64
    parameters as given."""
    import mpmath

    def cov(w, dg):
        w = mpmath.matrix(w.tolist())
        return w * w.T + mpmath.diag([mpmath.mpf(float(x)) for x in dg])
    S1, S2 = cov(w1, d1), cov(w2, d2)
    diff = mpmath.matrix([mpmath.mpf(float(a)) - mpmath.mpf(float(b)) for a, b in zip(m2, m1)])
    inv = S2 ** -1
    d = S1.rows
    tr = sum((inv * S1)[k, k] for k in range(d))
    maha = (diff.T * inv * diff)[0, 0]
    return (tr + maha - d + mpmath.log(mpmath.det(S2)) - mpmath.log(mpmath.det(S1))) / 2


def run_readme_python(start: str, end: str) -> dict:
    """Runs the first ```python block of README.md between the headings start and end, as
    pasted; returns the names it defined."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index(start):readme.index(end)]
    code = section[section.index("```python\n") + 10:]
    code = code[:code.index("```")]
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    return namespace
