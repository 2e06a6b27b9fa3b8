"""--tolerance EPS (pairwise, knn): the certified error of each result,
|KL - exact| / (|exact| + 1), before rounding to the output type; 0 (the default) is 1e-7 for float32 inputs and 1e-13 for
float64; at most 1e-3. The library may use any kernel within it, so results are compared with a
float64 NumPy reference written here, never with the bits of the default output; on random data
and on an adversarial set (means offset by 1e3, near-duplicate rows with relative perturbation
1e-4, standard deviations from 1e-2 to 1e2, D up to 1024). A bad value is a usage error: exit 2,
one line on stderr, and the output folder untouched."""

import re

import numpy as np
import pytest

import reference_np as ref
from cli_helpers import Target, gaussians, parse_csv, save

F32_ROUNDING = 2.0**-24


def ref_pairwise_diag(p, q=None):
    """KL(p_i || q_j) for diagonal (mean, std) batches in float64, per dimension, with
    2 KL = sum (mu_p - mu_q)^2 / v_q + expm1(l) - l, l = log v_p - log v_q (accurate for
    near-duplicates); rows in chunks of a few MiB."""
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


def adversarial(rng, n, d, dtype=np.float32):
    """Groups of three rows: a base (means 1e3 + N(0, 1), std 10^U(-2, 2)), the base with mean
    and std perturbed by 1e-4 relative to themselves, and the base with the mean moved by 1e-4
    std and the std by 1e-4 relative (KL about 1e-8 D: the hardest cancellation)."""
    groups = -(-n // 3)
    mean = 1e3 + rng.normal(size=(groups, d))
    std = 10.0 ** rng.uniform(-2, 2, size=(groups, d))
    e = lambda: 1e-4 * rng.normal(size=(groups, d))  # noqa: E731
    means = np.stack([mean, mean * (1 + e()), mean + std * e()], 1).reshape(-1, d)[:n]
    stds = np.stack([std, std * (1 + e()), std * (1 + e())], 1).reshape(-1, d)[:n]
    return {"mean": means.astype(dtype), "std": stds.astype(dtype)}


def random(rng, n, d, dtype=np.float32):
    return gaussians(rng, "std", n, d, dtype)


def assert_within(got, reference, tol):
    """|got - ref| <= tol (|ref| + 1) + the output's rounding + 1e-12 for the reference."""
    got = np.asarray(got)
    rounding = F32_ROUNDING if got.dtype == np.float32 else 2.0**-53
    a = np.abs(reference)
    bound = tol * (a + 1) + rounding * a + 1e-12 * (a + 1)
    err = np.abs(got.astype(np.float64) - reference)
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    assert np.all(err <= bound), (
        f"error {err[worst]:.3g} > bound {bound[worst]:.3g} at {worst}: got {got[worst]!r}, "
        f"reference {reference[worst]!r} (tolerance {tol:g})")


DATA = {"random": random, "adversarial": adversarial}


@pytest.mark.parametrize("tol", ["1e-5", "1e-3"])
@pytest.mark.parametrize("n,d", [(60, 7), (45, 64), (30, 1024)])
@pytest.mark.parametrize("kind", DATA)
def test_pairwise_with_a_tolerance_is_within_it(gausskl, tmp_path, rng, kind, n, d, tol):
    g = DATA[kind](rng, n, d)
    spec = ["--p", *save(tmp_path, "p", g)]
    gausskl.ok("pairwise", *spec, "--tolerance", tol, "-o", tmp_path / "tol.npy")
    gausskl.ok("pairwise", *spec, "-o", tmp_path / "default.npy")
    got, default = np.load(tmp_path / "tol.npy"), np.load(tmp_path / "default.npy")
    reference = ref_pairwise_diag(g)
    assert got.dtype == np.float32 and got.shape == (n, n)
    assert_within(got, reference, float(tol))
    assert np.all(np.diag(got) == 0) and np.all(got >= 0)
    assert_within(default, reference, 1e-7)
    bound = (float(tol) + 1e-7 + 2 * F32_ROUNDING) * (np.abs(reference) + 1)
    assert np.all(np.abs(got.astype(np.float64) - default) <= bound)


@pytest.mark.parametrize("kind", DATA)
def test_pairwise_p_against_q_and_float64_output(gausskl, tmp_path, rng, kind):
    g = DATA[kind](rng, 60, 300)
    p = {k: v[:30] for k, v in g.items()}
    q = {k: v[30:][::-1].copy() for k, v in g.items()}
    spec = ["--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q)]
    out = tmp_path / "kl.npy"
    gausskl.ok("pairwise", *spec, "--tolerance", "1e-5", "--dtype", "float64", "-o", out)
    got = np.load(out)
    assert got.dtype == np.float64
    assert_within(got, ref_pairwise_diag(p, q), 1e-5)
    assert np.all(got >= 0)


def test_pairwise_float64_inputs_with_a_tolerance(gausskl, tmp_path, rng):
    g = adversarial(rng, 45, 200, np.float64)
    spec = ["--p", *save(tmp_path, "p", g)]
    for tol in ("1e-5", "1e-10"):
        out = tmp_path / f"kl{tol}.npy"
        gausskl.ok("pairwise", *spec, "--tolerance", tol, "-o", out)
        got = np.load(out)
        assert got.dtype == np.float64
        assert_within(got, ref_pairwise_diag(g), float(tol))
        assert np.all(np.diag(got) == 0) and np.all(got >= 0)


@pytest.mark.parametrize("exclude_self", [False, True])
@pytest.mark.parametrize("d", [16, 1024])
def test_knn_with_a_tolerance_returns_the_k_nearest(gausskl, tmp_path, rng, d, exclude_self):
    n, k = 45, 4
    g = adversarial(rng, n, d)
    out = tmp_path / "nn.npz"
    flags = ["--exclude-self"] if exclude_self else []
    gausskl.ok("knn", "--p", *save(tmp_path, "p", g), "-k", k, *flags, "--tolerance", "1e-5",
               "-o", out)
    z = np.load(out)
    idx, val = z["indices"], z["kl"]
    reference = ref_pairwise_diag(g)
    chosen = np.take_along_axis(reference, idx, 1)
    assert_within(val, chosen, 1e-5)
    assert np.all(val >= 0) and np.all(np.diff(val, axis=1) >= 0)
    if exclude_self:
        np.fill_diagonal(reference, np.inf)
        assert not np.any(idx == np.arange(n)[:, None])
    else:
        np.testing.assert_array_equal(idx[:, 0], np.arange(n))
        np.testing.assert_array_equal(val[:, 0], 0)
    kth = np.sort(reference, axis=1)[:, k - 1:k]
    assert np.all(chosen <= kth + 2e-5 * (np.abs(kth) + 1) + F32_ROUNDING * np.abs(kth))
    assert all(len(set(row)) == k for row in idx)


def test_knn_csv_with_a_tolerance_matches_the_brute_force(gausskl, tmp_path, rng):
    g = gaussians(rng, "std", 40, 8)  # float64
    result = gausskl.ok("knn", "--p", *save(tmp_path, "p", g), "-k", 3, "--tolerance", "1e-4",
                        "-o", "-")
    lines = result.stdout.splitlines()
    table = parse_csv("\n".join(lines[1:]))
    want_idx, want_val = ref.knn(ref.pairwise(g), 3)
    np.testing.assert_array_equal(table[:, 2].reshape(40, 3), want_idx)
    assert_within(table[:, 3].reshape(40, 3), want_val, 1e-4)


def assert_same_output(command, a_path, b_path):
    """The two outputs of `command` (knn's .npz, pairwise's .npy) hold identical arrays."""
    a, b = np.load(a_path), np.load(b_path)
    if command == "knn":
        for name in ("indices", "kl"):
            np.testing.assert_array_equal(a[name], b[name])
    else:
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("command", ["pairwise", "knn"])
def test_tolerance_zero_is_the_default(gausskl, tmp_path, rng, command):
    spec = ["--p", *save(tmp_path, "p", adversarial(rng, 30, 32))]
    ext = "npz" if command == "knn" else "npy"
    k = ["-k", 3] if command == "knn" else []
    gausskl.ok(command, *spec, *k, "-o", tmp_path / f"a.{ext}")
    gausskl.ok(command, *spec, *k, "--tolerance", "0", "-o", tmp_path / f"b.{ext}")
    assert_same_output(command, tmp_path / f"a.{ext}", tmp_path / f"b.{ext}")


@pytest.mark.parametrize("command", ["pairwise", "knn"])
def test_a_budget_gives_the_same_results_with_a_tolerance(gausskl, tmp_path, rng, command):
    # A row of results takes 8 KiB (pairwise) or 16 KiB (knn); of an 8M budget the inputs take
    # 250 KiB and the prepared copies and work buffers about 4 MiB: blocks of a few hundred rows.
    spec = ["--p", *save(tmp_path, "p", random(rng, 2000, 16))]
    ext = "npz" if command == "knn" else "npy"
    k = ["-k", 5] if command == "knn" else []
    common = [command, *spec, *k, "--tolerance", "1e-5", "--threads", 2]
    gausskl.ok(*common, "-o", tmp_path / f"a.{ext}")
    gausskl.ok(*common, "--memory-budget", "8M", "-o", tmp_path / f"b.{ext}")
    assert_same_output(command, tmp_path / f"a.{ext}", tmp_path / f"b.{ext}")


@pytest.mark.parametrize("command", ["pairwise", "knn"])
def test_a_budget_too_small_is_the_library_error(gausskl, tmp_path, rng, command):
    spec = ["--p", *save(tmp_path, "p", random(rng, 2000, 16))]
    out = tmp_path / ("nn.npz" if command == "knn" else "kl.npy")
    k = ["-k", 5] if command == "knn" else []
    result = gausskl(command, *spec, *k, "--tolerance", "1e-5", "--memory-budget", "1M",
                     "-o", out)
    op = command  # the CLI's tag is the command's name
    assert result.returncode == 1
    result_part = r" and the result .*" if command == "knn" else ""
    assert re.fullmatch(rf"gausskl: error: \[{op}\] --memory-budget 1\.0 MiB is too small: the "
                        rf"inputs took 250\.0 KiB{result_part}, which left .*, but the prepared "
                        r"distributions and work buffers take .*, and each row of results .* "
                        r"more\n", result.stderr), result.stderr
    assert not out.exists()


# -- bad values ----------------------------------------------------------------------------------

@pytest.mark.parametrize("existing", [False, True])
@pytest.mark.parametrize("value,message", [
    ("-1", "must be 0 (the default) or at most 1e-3, found -1"),
    ("-1e-300", "must be 0 (the default) or at most 1e-3, found -1e-300"),
    ("nan", "must be 0 (the default) or at most 1e-3, found nan"),
    ("inf", "must be 0 (the default) or at most 1e-3, found inf"),
    ("-inf", "must be 0 (the default) or at most 1e-3, found -inf"),
    ("0.0010000001", "must be 0 (the default) or at most 1e-3, found 0.0010000001"),
    ("1", "must be 0 (the default) or at most 1e-3, found 1"),
    ("abc", "must be a number, found abc"),
    ("1e-5x", "must be a number, found 1e-5x"),
    ("", "must be a number, found "),
])
@pytest.mark.parametrize("command", ["pairwise", "knn"])
def test_bad_tolerance_is_a_usage_error(gausskl, tmp_path, rng, command, value, message,
                                        existing):
    target = Target(tmp_path / "out", "nn.npz" if command == "knn" else "kl.npy", existing)
    k = ["-k", 2] if command == "knn" else []
    result = gausskl(command, "--p", *save(tmp_path, "p", random(rng, 5, 3)), *k,
                     "--tolerance", value, "-o", target.path)
    assert result.returncode == 2, result.stderr
    assert result.stderr == (f"gausskl: error: --tolerance: {message} "
                             f"(see gausskl {command} --help)\n")
    assert result.stdout == ""
    assert target.snapshot() == target.before


@pytest.mark.parametrize("option,value,message", [
    ("--threads", "-1", "must be >= 0 (0 = all cores), found -1"),
    ("--threads", "1.5", "must be an integer, found 1.5"),
    ("--jitter", "-1", "must be finite and >= 0, found -1"),
    ("--jitter", "inf", "must be finite and >= 0, found inf"),
])
def test_bad_threads_and_jitter_are_the_librarys_rules(gausskl, tmp_path, rng, option, value,
                                                       message):
    """--threads and --jitter are checked by the library's check_options before any input is
    read, with its rule in the message."""
    out = tmp_path / "kl.npy"
    result = gausskl("pairwise", "--p", tmp_path / "missing.npz", option, value, "-o", out)
    assert result.returncode == 2, result.stderr
    assert result.stderr == (f"gausskl: error: {option}: {message} "
                             f"(see gausskl pairwise --help)\n")
    assert not out.exists()


def test_bad_tolerance_is_reported_before_any_input_is_read(gausskl, tmp_path):
    out = tmp_path / "kl.npy"
    result = gausskl("pairwise", "--p", tmp_path / "missing.npz", "--tolerance", "2e-3", "-o", out)
    assert result.returncode == 2 and "--tolerance" in result.stderr
    assert "missing.npz" not in result.stderr and not out.exists()


@pytest.mark.parametrize("command", ["pairwise", "knn"])
def test_the_limits_are_accepted(gausskl, tmp_path, rng, command):
    g = random(rng, 20, 5, np.float64)
    spec = ["--p", *save(tmp_path, "p", g)]
    k = ["-k", 3] if command == "knn" else []
    for value in ("0", "-0", "1e-3", "0.001", "1e-300"):
        result = gausskl.ok(command, *spec, *k, "--tolerance", value, "-o", "-")
        assert result.stderr == ""
        if command == "pairwise":
            assert_within(parse_csv(result.stdout), ref_pairwise_diag(g), max(float(value), 1e-13))


def test_kl_has_no_tolerance(gausskl, tmp_path, rng):
    out = tmp_path / "kl.npy"
    result = gausskl("kl", "--p", *save(tmp_path, "p", random(rng, 5, 3)), "--tolerance", "1e-5",
                     "-o", out)
    assert result.returncode == 2
    assert result.stderr == ("gausskl: error: kl has no --tolerance: row-wise results are always "
                             "exact (see gausskl kl --help)\n")
    assert not out.exists()


@pytest.mark.parametrize("command", ["pairwise", "knn"])
def test_help_describes_the_tolerance(gausskl, command):
    text = " ".join(gausskl.ok(command, "--help").stdout.split())
    assert "--tolerance FLOAT:EPS in [0, 1e-3]" in text
    assert "|KL - exact| / (|exact| + 1)" in text
    assert "Default 0: 1e-7 when every input is float32, 1e-13 when any is float64 or CSV" in text
    assert "at most 1e-3" in text and "1e-5" in text


def test_kl_help_has_no_tolerance(gausskl):
    out = gausskl.ok("kl", "--help").stdout
    assert not re.search(r"^\s+--tolerance", out, re.M)  # not an option, and it says why
    assert "kl has no --tolerance: row-wise results are always exact." in out
