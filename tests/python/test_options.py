"""The tolerance= keyword (pairwise_kl, knn_kl) and memory_budget= (every operation).

tolerance is the certified error of each all-pairs result, |KL - exact| / (|exact| + 1), before
rounding to the result's dtype. The library may reach it with any kernel, so results with a
tolerance are compared with a float64 NumPy reference written here (never with the bits of the
default path), on random data and on an adversarial set: means offset by 1e3, near-duplicate rows
(relative perturbation 1e-4), standard deviations from 1e-2 to 1e2, D up to 1024.

Validation runs on the library path (NumPy arrays) and on the torch path
(GAUSSKL_FORCE_TORCH_PATH=1), which must give the same errors; there both options are otherwise
ignored.
"""

import math
import re

import numpy as np
import pytest

import gausskl as gk
from conftest import force_torch_path, needs_torch

F32_ROUNDING = 2.0**-24  # relative error of rounding a double to the nearest float32
DEFAULT_TOLERANCE = {np.float32: 1e-7, np.float64: 1e-13}


# -- the reference and the data ------------------------------------------------------------------

def ref_pairwise_diag(p, q=None):
    """KL(p_i || q_j) [N, M] for diagonal (mean, std) dicts, in float64 with the per-dimension
    form 2 KL = sum (mu_p - mu_q)^2 / v_q + expm1(l) - l, l = log v_p - log v_q, which keeps its
    accuracy for near-duplicates. Rows in chunks: never more than a few MiB at once."""
    q = p if q is None else q
    mp, mq = (np.asarray(g["mean"], np.float64) for g in (p, q))
    lp, lq = (2 * np.log(np.asarray(g["std"], np.float64)) for g in (p, q))
    vq = np.exp(lq)
    out = np.empty((len(mp), len(mq)))
    rows = max(1, (4 << 20) // (8 * mq.size))
    for i in range(0, len(mp), rows):
        d = mp[i:i + rows, None, :] - mq[None]
        ell = lp[i:i + rows, None, :] - lq[None]
        out[i:i + rows] = 0.5 * np.sum(d * d / vq + (np.expm1(ell) - ell), axis=-1)
    return out


def random_diag(rng, n, d, dtype=np.float32):
    return {"mean": rng.normal(size=(n, d)).astype(dtype),
            "std": rng.uniform(0.5, 2.0, size=(n, d)).astype(dtype)}


def adversarial_diag(rng, n, d, dtype=np.float32):
    """Groups of three rows: a base row (means 1e3 + N(0, 1), std 10^U(-2, 2)); the same with
    mean and std perturbed by 1e-4 relative to themselves; the same with the mean moved by 1e-4
    std and std by 1e-4 relative (a KL of about 1e-8 D, the hardest cancellation)."""
    groups = -(-n // 3)
    mean = 1e3 + rng.normal(size=(groups, d))
    std = 10.0 ** rng.uniform(-2, 2, size=(groups, d))
    e = lambda: 1e-4 * rng.normal(size=(groups, d))  # noqa: E731
    means = np.stack([mean, mean * (1 + e()), mean + std * e()], 1).reshape(-1, d)[:n]
    stds = np.stack([std, std * (1 + e()), std * (1 + e())], 1).reshape(-1, d)[:n]
    return {"mean": means.astype(dtype), "std": stds.astype(dtype)}


def diag(g):
    return gk.DiagGaussian(g["mean"], std=g["std"])


def assert_within(got, ref, tol):
    """|got - ref| <= tol (|ref| + 1) + the rounding of the result to its dtype, and a 1e-12
    allowance for the reference's own float64 error."""
    got = np.asarray(got)
    rounding = F32_ROUNDING if got.dtype == np.float32 else 2.0**-53
    bound = tol * (np.abs(ref) + 1) + rounding * np.abs(ref) + 1e-12 * (np.abs(ref) + 1)
    err = np.abs(got.astype(np.float64) - ref)
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    assert np.all(err <= bound), (
        f"error {err[worst]:.3g} > bound {bound[worst]:.3g} at {worst}: got {got[worst]!r}, "
        f"reference {ref[worst]!r} (tolerance {tol:g})")


# -- tolerance: values --------------------------------------------------------------------------

DATA = {"random": random_diag, "adversarial": adversarial_diag}
SHAPES = [(90, 1), (90, 7), (60, 64), (48, 257), (36, 1024)]


@pytest.mark.parametrize("tol", [1e-5, 1e-3])
@pytest.mark.parametrize("n,d", SHAPES)
@pytest.mark.parametrize("kind", DATA)
def test_pairwise_with_a_tolerance_is_within_it(rng, kind, n, d, tol):
    g = DATA[kind](rng, n, d)
    ref = ref_pairwise_diag(g)
    got = gk.pairwise_kl(diag(g), tolerance=tol)
    assert got.dtype == np.float32 and got.shape == (n, n)
    assert_within(got, ref, tol)
    assert np.all(np.diag(got) == 0)  # exactly, whatever the kernel
    assert np.all(got >= 0)
    # And with the default, which is within the default tolerance: the two agree within both.
    default = gk.pairwise_kl(diag(g))
    assert_within(default, ref, DEFAULT_TOLERANCE[np.float32])
    bound = (tol + DEFAULT_TOLERANCE[np.float32] + 2 * F32_ROUNDING) * (np.abs(ref) + 1)
    assert np.all(np.abs(got.astype(np.float64) - default) <= bound)


@pytest.mark.parametrize("n,d", [(40, 16), (30, 1024)])
@pytest.mark.parametrize("kind", DATA)
def test_pairwise_p_against_q_with_a_tolerance(rng, kind, n, d):
    g = DATA[kind](rng, 2 * n, d)
    p = {k: v[:n] for k, v in g.items()}
    q = {k: v[n:][::-1].copy() for k, v in g.items()}  # near-duplicates of p among them
    got = gk.pairwise_kl(diag(p), diag(q), tolerance=1e-5)
    assert got.shape == (n, n)
    assert_within(got, ref_pairwise_diag(p, q), 1e-5)
    assert np.all(got >= 0)


@pytest.mark.parametrize("kind", DATA)
def test_pairwise_float64_with_a_tolerance(rng, kind):
    g = DATA[kind](rng, 45, 300, np.float64)
    ref = ref_pairwise_diag(g)
    for tol in (1e-5, 1e-9):
        got = gk.pairwise_kl(diag(g), tolerance=tol)
        assert got.dtype == np.float64
        assert_within(got, ref, tol)
        assert np.all(np.diag(got) == 0) and np.all(got >= 0)


@pytest.mark.parametrize("exclude_self", [False, True])
@pytest.mark.parametrize("d", [16, 1024])
@pytest.mark.parametrize("kind", DATA)
def test_knn_with_a_tolerance_returns_the_k_nearest(rng, kind, d, exclude_self):
    n, k = 45, 5
    g = DATA[kind](rng, n, d)
    ref = ref_pairwise_diag(g)
    idx, val = gk.knn_kl(diag(g), k=k, exclude_self=exclude_self, tolerance=1e-5)
    assert idx.shape == val.shape == (n, k) and idx.dtype == np.int64
    chosen = np.take_along_axis(ref, idx, 1)
    assert_within(val, chosen, 1e-5)
    assert np.all(val >= 0) and np.all(np.diff(val, axis=1) >= 0)
    masked = ref.copy()
    if exclude_self:
        np.fill_diagonal(masked, np.inf)
        assert not np.any(idx == np.arange(n)[:, None])
    else:
        np.testing.assert_array_equal(idx[:, 0], np.arange(n))  # its own 0 comes first
        np.testing.assert_array_equal(val[:, 0], 0)
    for row in range(n):
        assert len(set(idx[row])) == k
        kth = np.sort(masked[row])[k - 1]
        # Each one chosen is among the k nearest, up to the tolerance on both sides.
        assert np.all(chosen[row] <= kth + 2e-5 * (abs(kth) + 1) + F32_ROUNDING * abs(kth))


def test_default_tolerance_is_0_or_none(rng):
    g = adversarial_diag(rng, 30, 64)
    default = gk.pairwise_kl(diag(g))
    for tol in (0, 0.0, None, np.float32(0)):
        np.testing.assert_array_equal(gk.pairwise_kl(diag(g), tolerance=tol), default)
    idx, val = gk.knn_kl(diag(g), k=3)
    for tol in (0, None):
        i2, v2 = gk.knn_kl(diag(g), k=3, tolerance=tol)
        np.testing.assert_array_equal(i2, idx)
        np.testing.assert_array_equal(v2, val)


def test_tolerance_on_other_families_is_within_it(rng):
    # Full and low-rank pairs take the tolerance too; checked against the dense reference.
    from conftest import make_arrays, gaussian, ref_pairwise

    p = make_arrays(rng, "full", "covariance", 20, 6, offset=50.0)
    q = make_arrays(rng, "low_rank", "cov_factor", 15, 6, offset=50.0)
    for a, b in ((p, p), (p, q), (q, p)):
        ref = ref_pairwise(a, b)
        got = gk.pairwise_kl(gaussian(a), gaussian(b), tolerance=1e-5)
        assert_within(got, ref, 1e-5 + 1e-10)  # + the dense reference's own error


# -- tolerance: validation ----------------------------------------------------------------------

PATHS = ["numpy", pytest.param("torch_path", marks=needs_torch)]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    """numpy: the library; torch_path: CPU tensors forced onto the torch path, the library
    refused."""
    if request.param == "torch_path":
        force_torch_path(monkeypatch)
    return request.param


def small(path, rng, n=6, d=3):
    g = random_diag(rng, n, d, np.float64)
    if path != "numpy":
        import torch

        g = {k: torch.as_tensor(v) for k, v in g.items()}
    return diag(g)


ALL_PAIRS = {
    "pairwise_kl": lambda p, **kw: gk.pairwise_kl(p, **kw),
    "pairwise_kl_q": lambda p, **kw: gk.pairwise_kl(p, p, **kw),
    "knn_kl": lambda p, **kw: gk.knn_kl(p, k=2, **kw),
    "knn_kl_q": lambda p, **kw: gk.knn_kl(p, p, k=2, **kw),
}


def op_of(name):
    return name.removesuffix("_q")


@pytest.mark.parametrize("value,shown", [
    (-1e-9, "-1e-09"), (-1.0, "-1"), (math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf"),
    (1.0000001e-3, "0.0010000001"), (2e-3, "0.002"), (1.0, "1"), (np.float32(0.5), "0.5"),
])
@pytest.mark.parametrize("call", ALL_PAIRS)
def test_tolerance_out_of_range_is_a_value_error(path, rng, call, value, shown):
    with pytest.raises(ValueError) as e:
        ALL_PAIRS[call](small(path, rng), tolerance=value)
    assert str(e.value) == (f"[{op_of(call)}] options.tolerance must be 0 (the default) or at "
                            f"most 1e-3, found {shown}")


@pytest.mark.parametrize("value", ["1e-5", b"0", [1e-5], 1e-5j, True, np.array([1e-5])])
@pytest.mark.parametrize("call", ALL_PAIRS)
def test_tolerance_of_a_wrong_type_is_a_type_error(path, rng, call, value):
    with pytest.raises(TypeError, match=rf"^\[{op_of(call)}\] tolerance must be a real number, "
                                        rf"found {type(value).__name__}$"):
        ALL_PAIRS[call](small(path, rng), tolerance=value)


@pytest.mark.parametrize("call", ALL_PAIRS)
def test_tolerance_limits_are_accepted(path, rng, call):
    p = small(path, rng)
    want = ALL_PAIRS[call](p)
    for tol in (0, 1e-300, 1e-3, np.float64(1e-3), 5e-4):
        got = ALL_PAIRS[call](p, tolerance=tol)
        for g, w in zip(got if isinstance(got, tuple) else [got],
                        want if isinstance(want, tuple) else [want]):
            g, w = np.asarray(g), np.asarray(w)
            if g.dtype == np.int64:
                np.testing.assert_array_equal(g, w)
            else:
                assert_within(g, w.astype(np.float64), max(tol, 1e-13) + 1e-13)


def test_kl_and_kl_standard_normal_take_no_tolerance(rng):
    p = small("numpy", rng)
    with pytest.raises(TypeError, match="tolerance"):
        gk.kl(p, p, tolerance=1e-5)
    with pytest.raises(TypeError, match="tolerance"):
        gk.kl_standard_normal(p, tolerance=1e-5)


@needs_torch
def test_torch_path_ignores_a_valid_tolerance(monkeypatch, rng):
    """Documented: on the torch path a valid tolerance is checked and has no effect."""
    monkeypatch.setenv("GAUSSKL_FORCE_TORCH_PATH", "1")
    p = small("torch_path", rng, n=20, d=5)
    want = gk.pairwise_kl(p).numpy()
    np.testing.assert_array_equal(gk.pairwise_kl(p, tolerance=1e-3).numpy(), want)
    wi, wv = gk.knn_kl(p, k=3)
    gi, gv = gk.knn_kl(p, k=3, tolerance=1e-3)
    np.testing.assert_array_equal(gi.numpy(), wi.numpy())
    np.testing.assert_array_equal(gv.numpy(), wv.numpy())


# -- memory_budget ------------------------------------------------------------------------------

ALL_OPS = {
    "kl": lambda p, **kw: gk.kl(p, p, **kw),
    "kl_standard_normal": lambda p, **kw: gk.kl_standard_normal(p, **kw),
    **ALL_PAIRS,
}

TOO_SMALL = {
    "kl": r"the row-wise work takes [0-9.]+ (B|KiB|MiB)",
    "kl_standard_normal": r"the row-wise work takes [0-9.]+ (B|KiB|MiB)",
    "pairwise_kl": r"the prepared distributions and work buffers take .*, and each row of results "
                   r".* more",
    "knn_kl": r"the prepared distributions and work buffers take .*, and each row of results "
              r".* more",
}


@pytest.mark.parametrize("budget", [1, 100])
@pytest.mark.parametrize("call", ALL_OPS)
def test_budget_too_small_is_a_runtime_error_with_the_library_message(rng, call, budget):
    op = op_of(call)
    with pytest.raises(RuntimeError) as e:
        ALL_OPS[call](small("numpy", rng, n=50, d=8), memory_budget=budget)
    assert re.fullmatch(rf"\[{op}\] the memory budget \({budget} B\) is too small: "
                        + TOO_SMALL[op], str(e.value)), str(e.value)


def parse_bytes(text):
    """An upper bound of the bytes of the library's "2.6 MiB" (one decimal) or "424 B"."""
    number, unit = text.split()
    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    return math.ceil((float(number) + (0.05 if unit != "B" else 0)) * units[unit])


@pytest.mark.parametrize("call", ALL_PAIRS)
def test_a_budget_of_a_few_rows_gives_the_same_results(rng, call):
    """A budget that leaves room for only a few rows per block: many blocks, same results. The
    room the rest takes (which may depend on the tolerance) is read from the library's message
    for a budget of 1 byte."""
    p = diag(adversarial_diag(rng, 300, 32))
    for tol in (0, 1e-5):
        with pytest.raises(RuntimeError) as e:
            ALL_PAIRS[call](p, memory_budget=1, threads=2, tolerance=tol)
        fixed, row = re.search(r"take (.*), and each row of results (.*) more",
                               str(e.value)).groups()
        budget = parse_bytes(fixed) + 4 * parse_bytes(row)
        assert budget - parse_bytes(fixed) < 300 * parse_bytes(row) // 4  # at least 4 blocks
        want = ALL_PAIRS[call](p, threads=2, tolerance=tol)
        got = ALL_PAIRS[call](p, threads=2, tolerance=tol, memory_budget=budget)
        for g, w in zip(got if isinstance(got, tuple) else [got],
                        want if isinstance(want, tuple) else [want]):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("call", ALL_OPS)
def test_a_large_budget_gives_the_same_results(path, rng, call):
    p = small(path, rng, n=40, d=9)
    want = ALL_OPS[call](p)
    for budget in (1 << 30, np.int64(1 << 30), None, 0):
        got = ALL_OPS[call](p, memory_budget=budget)
        for g, w in zip(got if isinstance(got, tuple) else [got],
                        want if isinstance(want, tuple) else [want]):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("call", ALL_OPS)
def test_negative_budget_is_a_value_error(path, rng, call):
    with pytest.raises(ValueError) as e:
        ALL_OPS[call](small(path, rng), memory_budget=-1)
    assert str(e.value) == (f"[{op_of(call)}] options.memory_budget must be >= 0 (0 = default), "
                            "found -1")


@pytest.mark.parametrize("call", ALL_OPS)
def test_budget_above_int64_is_a_value_error(path, rng, call):
    with pytest.raises(ValueError, match=rf"^\[{op_of(call)}\] options\.memory_budget must be at "
                                         r"most 2\^63 - 1, found 9223372036854775808$"):
        ALL_OPS[call](small(path, rng), memory_budget=1 << 63)


@pytest.mark.parametrize("value", ["2G", "800M", b"1024", 1e9, 1024.0, True])
@pytest.mark.parametrize("call", ALL_OPS)
def test_budget_of_a_wrong_type_is_a_type_error(path, rng, call, value):
    with pytest.raises(TypeError, match=rf"^\[{op_of(call)}\] memory_budget must be an int "
                                        rf"\(bytes\), found {type(value).__name__}$"):
        ALL_OPS[call](small(path, rng), memory_budget=value)


@pytest.mark.parametrize("value", [1.5, 2.0, "2", None, True])
@pytest.mark.parametrize("call", ALL_OPS)
def test_threads_of_a_wrong_type_is_a_type_error(path, rng, call, value):
    with pytest.raises(TypeError) as e:
        ALL_OPS[call](small(path, rng), threads=value)
    assert str(e.value) == f"[{op_of(call)}] threads must be an int, found {type(value).__name__}"


@pytest.mark.parametrize("call", ALL_OPS)
def test_threads_above_int_is_a_value_error(path, rng, call):
    with pytest.raises(ValueError) as e:
        ALL_OPS[call](small(path, rng), threads=1 << 31)
    assert str(e.value) == (f"[{op_of(call)}] options.threads must be at most 2^31 - 1, found "
                            "2147483648")
    assert ALL_OPS[call](small(path, rng), threads=np.int64(2)) is not None  # NumPy ints are ints


@needs_torch
@pytest.mark.parametrize("call", ALL_OPS)
def test_torch_path_budget(monkeypatch, rng, call):
    """On the torch path the budget sizes the all-pairs blocks (results unchanged by it; too
    small for one row: the library's RuntimeError) and is checked, then not needed, row-wise."""
    monkeypatch.setenv("GAUSSKL_FORCE_TORCH_PATH", "1")
    p = small("torch_path", rng, n=20, d=5)
    want = ALL_OPS[call](p)
    if op_of(call) in ("pairwise_kl", "knn_kl"):
        with pytest.raises(RuntimeError, match=rf"^\[{op_of(call)}\] the memory budget \(1 B\) "
                                               r"is too small: the torch path's operands take "):
            ALL_OPS[call](p, memory_budget=1)
        budget = 8 * 2 * 40 * 10 + 3 * 8 * 4 * 20 + 8 * 6 * 5  # operands, 3 rows, a pair chunk
    else:
        budget = 1
    got = ALL_OPS[call](p, memory_budget=budget)
    # Each result within the default tolerance 1e-13 of the exact one, so within 2e-13 of each
    # other (not bit for bit: BLAS may sum a block of other rows in another order).
    for g, w in zip(got if isinstance(got, tuple) else [got],
                    want if isinstance(want, tuple) else [want]):
        if g.dtype.is_floating_point:
            assert np.max(np.abs(g.numpy() - w.numpy()) / (np.abs(w.numpy()) + 1)) <= 2e-13
        else:
            np.testing.assert_array_equal(g.numpy(), w.numpy())


@needs_torch
def test_cpu_tensors_on_the_library_path_take_both_options(rng):
    import torch

    g = adversarial_diag(rng, 30, 40)
    t = gk.DiagGaussian(torch.as_tensor(g["mean"]), std=torch.as_tensor(g["std"]))
    got = gk.pairwise_kl(t, tolerance=1e-5, memory_budget=1 << 30)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    assert_within(got.numpy(), ref_pairwise_diag(g), 1e-5)
    with pytest.raises(RuntimeError, match=r"^\[pairwise_kl\] the memory budget \(1 B\)"):
        gk.pairwise_kl(t, memory_budget=1)
