"""Input files (npz, npy, csv, layouts, byte orders, dtypes), the --dtype rule, and outputs."""

import numpy as np
import pytest

import reference_np as ref
from cli_helpers import FAMILIES, assert_close, gaussians, parse_csv, save

BINARY_FORMATS = ("npz", "npz_compressed", "npy", "fortran", "bigendian")


def kl_args(tmp_path, p, q, p_fmt="npz", q_fmt="npz"):
    return ["kl", "--p", *save(tmp_path, "p", p, p_fmt), "--q", *save(tmp_path, "q", q, q_fmt)]


@pytest.mark.parametrize("kind", FAMILIES)
@pytest.mark.parametrize("fmt", BINARY_FORMATS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_inputs(gausskl, tmp_path, rng, fmt, kind, dtype):
    p = gaussians(rng, kind, 4, 3, dtype)
    q = gaussians(rng, kind, 4, 3, dtype)
    out = tmp_path / "out.npy"
    gausskl.ok(*kl_args(tmp_path, p, q, fmt, fmt), "-o", out)
    got = np.load(out)
    assert got.dtype == dtype
    assert_close(got, ref.kl(p, q), dtype)


def test_csv_inputs(gausskl, tmp_path, rng):
    p = gaussians(rng, "logvar", 5, 4)
    q = gaussians(rng, "precision", 5, 4)
    out = tmp_path / "out.npy"
    gausskl.ok(*kl_args(tmp_path, p, q, "csv", "csv"), "-o", out)
    assert_close(np.load(out), ref.kl(p, q), np.float64)


def test_one_d_mean_broadcasts(gausskl, tmp_path, rng):
    p = {k: v[0] for k, v in gaussians(rng, "scale_tril", 1, 3).items()}
    q = gaussians(rng, "scale_tril", 4, 3)
    out = tmp_path / "out.npy"
    gausskl.ok(*kl_args(tmp_path, p, q), "-o", out)
    assert_close(np.load(out), ref.kl(p, q), np.float64)


@pytest.mark.parametrize(
    "p_dtype, q_dtype, p_fmt, flags, result",
    [
        (np.float32, np.float32, "npz", [], np.float32),
        (np.float32, np.float64, "npz", [], np.float64),
        (np.float64, np.float32, "npy", [], np.float64),
        (np.float32, np.float32, "csv", [], np.float64),  # CSV input counts as float64
        (np.float64, np.float64, "npz", ["--dtype", "float32"], np.float32),
        (np.float32, np.float32, "npz", ["--dtype", "float64"], np.float64),
    ],
)
def test_dtype_rule(gausskl, tmp_path, rng, p_dtype, q_dtype, p_fmt, flags, result):
    p = gaussians(rng, "std", 6, 4, p_dtype)
    q = gaussians(rng, "std", 6, 4, q_dtype)
    out = tmp_path / "out.npy"
    gausskl.ok(*kl_args(tmp_path, p, q, p_fmt), "-o", out, *flags)
    got = np.load(out)
    assert got.dtype == result
    assert_close(got, ref.kl(p, q), result)


def test_one_float64_array_makes_float64(gausskl, tmp_path, rng):
    p = gaussians(rng, "std", 3, 4, np.float32)
    p["std"] = p["std"].astype(np.float64)
    out = tmp_path / "out.npy"
    gausskl.ok("kl", "--p", *save(tmp_path, "p", p), "-o", out)
    assert np.load(out).dtype == np.float64


def test_float32_without_q_stays_float32(gausskl, tmp_path, rng):
    p = gaussians(rng, "std", 3, 4, np.float32)
    out = tmp_path / "out.npy"
    gausskl.ok("kl", "--p", *save(tmp_path, "p", p), "-o", out)
    got = np.load(out)
    assert got.dtype == np.float32
    assert_close(got, ref.kl(p), np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("command", ["kl", "pairwise"])
def test_csv_and_stdout_match_npy_exactly(gausskl, tmp_path, rng, command, dtype):
    # CSV holds the shortest text that reads back to the same value.
    p = gaussians(rng, "std", 4, 3)
    q = gaussians(rng, "std", 4 if command == "kl" else 5, 3)
    args = [command, "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q),
            "--dtype", dtype]
    gausskl.ok(*args, "-o", tmp_path / "out.npy")
    gausskl.ok(*args, "-o", tmp_path / "out.csv")
    stdout = gausskl.ok(*args, "-o", "-").stdout
    npy = np.load(tmp_path / "out.npy")
    for table in parse_csv((tmp_path / "out.csv").read_text()), parse_csv(stdout):
        if command == "kl":
            assert 1 in table.shape
            table = table.ravel()
        assert table.shape == npy.shape
        np.testing.assert_array_equal(table.astype(dtype), npy)


def test_success_replaces_existing_output(gausskl, tmp_path, rng):
    p = gaussians(rng, "std", 3, 2)
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "kl.npy"
    out.write_bytes(b"stale contents")
    gausskl.ok("kl", "--p", *save(tmp_path, "p", p), "-o", out)
    assert [f.name for f in folder.iterdir()] == ["kl.npy"]
    assert_close(np.load(out), ref.kl(p), np.float64)
