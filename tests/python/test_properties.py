"""Property-based tests of the Python API (issue 37, item 6), with hypothesis: random families,
parameterizations, batch shapes, dtypes, NumPy and torch CPU arrays, values from the adversarial
ranges (means offset by 1e3, scales over 1e-3 .. 1e3, near-duplicates, NaN, inf, negative and zero
values, zero-size batches, non-contiguous and broadcast strides), for every op and kind. Each call
either returns values within the documented tolerance of a float64 NumPy reference (plus that
reference's own rounding, which follows the conditioning), or raises a gausskl error whose message
starts with ``[op]``; never a crash, a negative divergence, a NaN result, or a changed input.

The budget: the profile ``gausskl-test`` (a few dozen examples per test, in ``make test``), or the
profile named by GAUSSKL_HYPOTHESIS_PROFILE (``gausskl-fuzz``: thousands, ``make fuzz``)."""

import os
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import gausskl as gk  # noqa: E402
from conftest import HAS_TORCH  # noqa: E402

settings.register_profile("gausskl-test", max_examples=25, deadline=None, derandomize=True,
                          database=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("gausskl-fuzz", max_examples=3000, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("GAUSSKL_HYPOTHESIS_PROFILE", "gausskl-test"))

KINDS = ["kl", "jeffreys", "bhattacharyya", "hellinger", "renyi", "wasserstein2"]
PARAMS = {"diag": ["std", "var", "logvar", "precision"],
          "full": ["scale_tril", "covariance", "precision_matrix"], "low_rank": ["cov_factor"]}
U = 2.0 ** -53


# ---- the distributions: a spec (float64 means and covariance factors), emitted in a layout ----

@st.composite
def specs(draw, n, d):
    """A batch of n Gaussians in dimension d: (family, param, arrays in float64)."""
    family = draw(st.sampled_from(sorted(PARAMS)))
    param = draw(st.sampled_from(PARAMS[family]))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    offset = draw(st.sampled_from([0.0, 1e3, -1e3]))
    lo, hi = draw(st.sampled_from([(0.5, 2.0), (1e-3, 1e3), (1e-3, 1e-3), (1e3, 1e3)]))
    rng = np.random.default_rng(seed)
    mean = rng.normal(size=(n, d)) + offset
    s = np.exp(rng.uniform(np.log(lo), np.log(hi), size=(n, d)))
    if family == "diag":
        var = s * s
        scale = {"std": s, "var": var, "logvar": np.log(var), "precision": 1 / var}[param]
        return family, param, {"mean": mean, param: scale}
    if family == "full":
        g = np.tril(rng.normal(size=(n, d, d)), -1) * 0.3 / np.sqrt(d)
        L = s[:, :, None] * (np.eye(d) + g)
        cov = L @ np.swapaxes(L, 1, 2)
        scale = {"scale_tril": L, "covariance": cov,
                 "precision_matrix": np.linalg.inv(cov) if n else cov}[param]
        if param != "scale_tril":
            scale = 0.5 * (scale + np.swapaxes(scale, 1, 2))
        return family, param, {"mean": mean, param: scale}
    r = draw(st.integers(1, 3))
    w = s[:, :, None] * rng.normal(size=(n, d, r)) / np.sqrt(r)
    return family, param, {"mean": mean, "cov_factor": w, "cov_diag": s * s}


def near_duplicate(rng, arrays, rel):
    """Every value x as x (1 + rel u), u uniform in [-1, 1] (a valid distribution still: the
    scales stay positive and a covariance stays symmetric)."""
    out = {}
    for k, v in arrays.items():
        e = rng.uniform(-1, 1, size=v.shape)
        if k in ("covariance", "precision_matrix"):
            e = 0.5 * (e + np.swapaxes(e, -1, -2))
        out[k] = v * (1 + rel * e) if k != "logvar" else v + rel * e
    return out


def emit(arrays, dtype, layout, rng):
    """The arrays in dtype, contiguous, strided (every other element of a larger array) or
    broadcast (one row read n times through a zero stride: only when every row is row 0)."""
    out = {}
    for k, v in arrays.items():
        v = v.astype(dtype)
        if layout == "strided":
            big = np.empty(v.shape[:-1] + (2 * v.shape[-1],), dtype)
            big[..., ::2] = v
            big[..., 1::2] = rng.normal(size=v.shape)
            v = big[..., ::2]
        elif layout == "broadcast" and v.shape[0] > 0:
            v = np.broadcast_to(v[:1], v.shape)
        out[k] = v
    return out


def build(family, arrays, torch):
    if torch:
        import torch as t
        arrays = {k: t.from_numpy(np.array(v)) for k, v in arrays.items()}
    a = dict(arrays)
    mean = a.pop("mean")
    if family == "diag":
        return gk.DiagGaussian(mean, **a)
    if family == "full":
        return gk.FullGaussian(mean, **a)
    return gk.LowRankGaussian(mean, **a)


# ---- the float64 reference, from the arrays as the library receives them ----

def dense(family, arrays):
    """Means [N, D] and covariances [N, D, D] in float64 from the emitted arrays."""
    a = {k: np.asarray(v, np.float64) for k, v in arrays.items()}
    mean, d = a["mean"], a["mean"].shape[1]
    eye = np.eye(d)
    if "std" in a:
        return mean, a["std"][:, :, None] ** 2 * eye
    if "var" in a:
        return mean, a["var"][:, :, None] * eye
    if "logvar" in a:
        return mean, np.exp(a["logvar"])[:, :, None] * eye
    if "precision" in a:
        return mean, (1 / a["precision"])[:, :, None] * eye
    if "scale_tril" in a:
        L = np.tril(a["scale_tril"])
        return mean, L @ np.swapaxes(L, 1, 2)
    if "covariance" in a:
        return mean, a["covariance"]
    if "precision_matrix" in a:
        return mean, np.linalg.inv(a["precision_matrix"])
    W = a["cov_factor"]
    return mean, W @ np.swapaxes(W, 1, 2) + a["cov_diag"][:, :, None] * eye


def logdet(S):
    return 2 * np.sum(np.log(np.diagonal(np.linalg.cholesky(S), axis1=-2, axis2=-1)), -1)


def maha(delta, S):
    return np.einsum("...i,...i->...", delta, np.linalg.solve(S, delta[..., None])[..., 0])


def sqrtm_psd(S):
    w, v = np.linalg.eigh(S)
    return (v * np.sqrt(np.clip(w, 0, None))[..., None, :]) @ np.swapaxes(v, -1, -2)


def ref_divergence(kind, mp, S, mq, T, alpha=0.5):
    """D(p || q) per broadcast pair, float64."""
    d = mp.shape[-1]
    delta = mq - mp
    if kind in ("kl", "jeffreys"):
        kl = 0.5 * (np.trace(np.linalg.solve(T, S), axis1=-2, axis2=-1) + maha(delta, T) - d
                    + logdet(T) - logdet(S))
        if kind == "kl":
            return kl
        return kl + ref_divergence("kl", mq, T, mp, S)
    if kind in ("bhattacharyya", "hellinger"):
        M = 0.5 * (S + T)
        db = maha(delta, M) / 8 + 0.5 * (logdet(M) - 0.5 * (logdet(S) + logdet(T)))
        return db if kind == "bhattacharyya" else -np.expm1(-db)
    if kind == "renyi":
        M = (1 - alpha) * S + alpha * T
        return (alpha / 2 * maha(delta, M)
                - (logdet(M) - (1 - alpha) * logdet(S) - alpha * logdet(T)) / (2 * (alpha - 1)))
    rs = sqrtm_psd(S)
    cross = sqrtm_psd(rs @ T @ rs)
    return np.sum(delta * delta, -1) + np.trace(S + T - 2 * cross, axis1=-2, axis2=-1)


def ref_diag(kind, mp, v, mq, w, alpha=0.5):
    """D(p || q) of diagonal Gaussians per broadcast pair, float64, by per-dimension forms with
    no cancellation between dimensions (each term is non-negative): a few ulps of the value."""
    delta2 = (mq - mp) ** 2
    lv, lw = np.log(v), np.log(w)

    def kl(d2, lv, lw, w):
        r = lv - lw
        return 0.5 * np.sum(d2 / w + np.expm1(r) - r, -1)

    if kind == "kl":
        return kl(delta2, lv, lw, w)
    if kind == "jeffreys":
        return kl(delta2, lv, lw, w) + kl(delta2, lw, lv, v)
    if kind in ("bhattacharyya", "hellinger"):
        db = np.sum(delta2 / (4 * (v + w)) + 0.5 * np.log((v + w) / (2 * np.sqrt(v * w))), -1)
        return db if kind == "bhattacharyya" else -np.expm1(-db)
    if kind == "renyi":
        m = (1 - alpha) * v + alpha * w
        return np.sum(alpha / 2 * delta2 / m
                      - (np.log(m) - (1 - alpha) * lv - alpha * lw) / (2 * (alpha - 1)), -1)
    return np.sum(delta2 + (np.sqrt(v) - np.sqrt(w)) ** 2, -1)


def condition(S):
    if not np.all(np.isfinite(S)):
        return np.inf
    w = np.linalg.eigvalsh(S) if S.size else np.ones(1)
    return float(np.max(w) / np.min(w)) if np.all(w > 0) else np.inf


# ---- the property ----

def check_call(op, kind, fp, ap, fq, aq, dtype, torch, k=1, q_none=False):
    """Runs the op on the emitted arrays; checks the outcome as the module docstring says."""
    before = {id(v): np.array(v, copy=True) for a in (ap, aq) for v in a.values()}
    p = build(fp, ap, torch)
    q = None if q_none else build(fq, aq, torch)
    alpha = 0.5 if kind == "renyi" else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if op == "divergence":
                got = gk.divergence(p, q, kind=kind, alpha=alpha)
            elif op == "pairwise":
                got = gk.pairwise(p, q, kind=kind, alpha=alpha)
            else:
                idx, got = gk.knn(p, q, k, kind=kind, alpha=alpha)
    except gk.GaussKLError as e:
        assert str(e).startswith(f"[{op}]"), str(e)
        return "error"
    finally:
        for a in (ap, aq):
            for v in a.values():
                assert np.array_equal(np.asarray(v), before[id(v)], equal_nan=True), "input changed"
    got = np.asarray(got.numpy() if torch else got, np.float64)
    mp, S = dense(fp, ap)
    mq, T = (mp, S) if q_none else dense(fq, aq)
    if not got.size:  # an empty result reads no row (an empty broadcast partner: nothing checked)
        return "value"
    assert np.all(np.isfinite(mp)) and np.all(np.isfinite(S)), "bad input accepted"
    assert np.all(np.isfinite(mq)) and np.all(np.isfinite(T)), "bad input accepted"
    assert not np.any(np.isnan(got)), "NaN result"
    assert np.all(got >= 0), "negative divergence"
    both_diag = fp == "diag" and (q_none or fq == "diag")
    if both_diag:  # the per-dimension forms: kappa plays no part
        v, w = (np.diagonal(x, axis1=-2, axis2=-1) for x in (S, T))
        reference = lambda a, b, c, e: ref_diag(kind, a, b, c, e)  # noqa: E731
        S = T = np.ones((1, 1, 1))
        covs = (v, w)
    else:
        reference = lambda a, b, c, e: ref_divergence(kind, a, b, c, e)  # noqa: E731
        covs = (S, T)
    if op == "divergence":
        ref = reference(mp, covs[0], mq, covs[1])
        ref = np.broadcast_to(ref, got.shape)
    else:
        ref = reference(mp[:, None], covs[0][:, None], mq[None], covs[1][None])
        if q_none and ref.size:
            np.fill_diagonal(ref, 0.0)
        if op == "knn":
            assert idx.shape == got.shape == (len(mp), k)
            idx = np.asarray(idx.numpy() if torch else idx)
            ref_sel = np.take_along_axis(ref, idx, 1)
            # The k smallest, ascending: each chosen value is one of the row's k smallest.
            kth = np.sort(ref, 1)[:, k - 1:k] if ref.size else ref[:, :1]
            tol_sel = tolerance(kind, dtype, S, T, kth)
            assert np.all(ref_sel <= kth + tol_sel), "not among the k nearest"
            ref = ref_sel
    tol = tolerance(kind, dtype, S, T, ref)
    assert np.all(np.abs(got - ref) <= tol), (np.max(np.abs(got - ref) - tol), kind, op)
    return "value"


def record(outcome, op, family):
    hypothesis.event(f"{op} {family}: {outcome}")


def tolerance(kind, dtype, S, T, ref):
    """The documented tolerance (|got - exact| / (|exact| + 1): 1e-7 float32, 1e-13 float64 for
    kl; the other kinds are exact in double, their own rounding then), plus the float64
    reference's rounding: kappa u per unit of |value| + 1, kappa the worst condition number of
    the covariances involved (and of their mixtures)."""
    kappa = max([condition(x) for x in (S, T) if x.size] + [1.0])
    documented = 1e-7 if dtype == np.float32 else 1e-13
    slack = 64 * U * kappa * (np.abs(ref) + 1) * max(1, S.shape[-1]) ** 2
    if kappa == 1.0:  # the diagonal reference (or well-conditioned dense): a few ulps per dimension
        slack = 16 * U * (np.abs(ref) + 1)
    if kind == "wasserstein2":  # squared means of 1e3 offsets: absolute in the means' scale
        slack = slack * 1e6
    return documented * (np.abs(ref) + 1) + slack


# ---- strategies for whole calls ----

SPECIAL = [np.nan, np.inf, -np.inf, -1.0, 0.0]


@st.composite
def calls(draw):
    op = draw(st.sampled_from(["divergence", "pairwise", "knn"]))
    kind = draw(st.sampled_from(KINDS))
    d = draw(st.integers(1, 4))
    n = draw(st.integers(0, 5))
    least = 1 if op == "knn" else 0
    m = n if op == "divergence" and draw(st.booleans()) else draw(st.integers(least, 5))
    if op == "divergence" and n != m:
        n = 1 if draw(st.booleans()) else n
        m = 1 if n != 1 else m
    fp, param_p, ap = draw(specs(n, d))
    fq, param_q, aq = draw(specs(m, d))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    q_none = op != "divergence" and draw(st.booleans())
    if draw(st.booleans()) and m == n and not q_none:  # q: near-duplicates of p
        fq, aq = fp, near_duplicate(rng, ap, draw(st.sampled_from([1e-4, 1e-8, 0.0])))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    layout_p = draw(st.sampled_from(["contiguous", "strided", "broadcast"]))
    layout_q = draw(st.sampled_from(["contiguous", "strided", "broadcast"]))
    ep, eq = emit(ap, dtype, layout_p, rng), emit(aq, draw(st.sampled_from([dtype, np.float64])),
                                                 layout_q, rng)
    if draw(st.integers(0, 3)) == 0:  # one bad value somewhere
        side = ep if draw(st.booleans()) else eq
        key = draw(st.sampled_from(sorted(side)))
        if side[key].size:
            v = np.array(side[key])
            v.flat[draw(st.integers(0, v.size - 1))] = draw(st.sampled_from(SPECIAL))
            side[key] = v
    strided_ok = layout_p != "broadcast" and layout_q != "broadcast"
    torch = HAS_TORCH and strided_ok and draw(st.booleans())
    k = draw(st.integers(1, max(1, n if q_none else m)))
    return op, kind, fp, ep, fq, eq, dtype, torch, k, q_none


# Found by the fuzz profile: one p (or q) with a NaN broadcast against an empty partner gives an
# empty result (nothing read, nothing validated), not an error.
@example(("divergence", "kl", "diag", {"mean": np.array([[np.nan]]), "std": np.array([[0.7]])},
          "diag", {"mean": np.zeros((0, 1)), "std": np.zeros((0, 1))}, np.float64, False, 1, False))
@example(("divergence", "kl", "diag", {"mean": np.zeros((0, 3)), "std": np.zeros((0, 3))}, "diag",
          {"mean": np.zeros((1, 3)), "std": np.array([[0.5, np.nan, 1.7]])}, np.float64, False, 1,
          False))
@given(calls())
def test_every_call_is_a_value_within_tolerance_or_a_gausskl_error(call):
    op, kind, fp, ep, fq, eq, dtype, torch, k, q_none = call
    outcome = check_call(op, kind, fp, ep, fq, eq, dtype, torch, k=k, q_none=q_none)
    record(outcome, op, fp if q_none or fp == fq else "mixed")


# ---- regressions and fixed corner cases (each a call the property above must pass) ----

def _diag(n, d, offset=0.0, scale=1.0):
    rng = np.random.default_rng(n * 10 + d)
    return {"mean": rng.normal(size=(n, d)) + offset, "std": np.full((n, d), scale)}


@pytest.mark.parametrize("op", ["divergence", "pairwise", "knn"])
@pytest.mark.parametrize("kind", KINDS)
def test_corner_cases(op, kind):
    # Zero rows on p, offsets of 1e3, tiny and huge scales, identical distributions.
    if op != "divergence":
        check_call(op, kind, "diag", _diag(0, 3), "diag", _diag(4, 3), np.float64, False, k=2)
    a = _diag(3, 2, offset=1e3, scale=1e-3)
    check_call(op, kind, "diag", a, "diag", dict(a), np.float64, False, k=1)
    b = _diag(3, 2, scale=1e3)
    check_call(op, kind, "diag", b, "diag", _diag(3, 2), np.float32, False, k=3)
    bad = _diag(3, 2)
    bad["std"][1, 1] = np.nan
    assert check_call(op, kind, "diag", bad, "diag", _diag(3, 2), np.float64, False) == "error"
    neg = _diag(3, 2)
    neg["std"][2, 0] = -1.0
    assert check_call(op, kind, "diag", _diag(3, 2), "diag", neg, np.float64, False) == "error"
