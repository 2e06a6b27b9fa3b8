"""The gausskl-dask command: gausskl's input files and Zarr stores in, .zarr / .npy / .npz / CSV
out, the same results as the Python package (and as the gausskl binary when it is built), and
gausskl's errors (one line, exit 2, no output left behind)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import dask.array as da
import numpy as np
import pytest

import gausskl as gk
from conftest import arrays, gaussian

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "gausskl-dask"


def run(*args, timeout=180):
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "gausskl._dask_main"]
    return subprocess.run(command + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def on(client):
    """The module's cluster, for --scheduler (a LocalCluster per command would cost seconds)."""
    return ["--scheduler", client.scheduler.address, "--quiet"]


def ok(*args):
    r = run(*args)
    assert r.returncode == 0, r.stderr
    return r


def fails(*args, status=2):
    r = run(*args)
    assert r.returncode == status, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gausskl-dask: error: "), r.stderr
    return lines[0]


def save(path, a, compressed=False):
    (np.savez_compressed if compressed else np.savez)(path, **a)
    return path


def test_pairwise_to_zarr_npy_and_csv(on, rng, tmp_path):
    a, b = arrays(rng, "std", 70, 5, np.float32), arrays(rng, "std", 40, 5, np.float32)
    P, Q = save(tmp_path / "p.npz", a), save(tmp_path / "q.npz", b, compressed=True)
    want = gk.pairwise_kl(gaussian("std", a), gaussian("std", b))
    ok("pairwise", "--p", P, "--q", Q, "-o", tmp_path / "kl.zarr", "--chunk-rows", 16, *on)
    np.testing.assert_array_equal(da.from_zarr(str(tmp_path / "kl.zarr")).compute(), want)
    ok("pairwise", "--p", P, "--q", Q, "-o", tmp_path / "kl.npy", "--chunk-rows", 9,
       "--q-chunk-rows", 7, *on)
    np.testing.assert_array_equal(np.load(tmp_path / "kl.npy"), want)
    text = ok("pairwise", "--p", P, "--q", Q, "-o", "-", "--chunk-rows", 30, *on).stdout
    np.testing.assert_array_equal(np.loadtxt(text.splitlines(), delimiter=",", dtype=np.float32),
                                  want)
    assert sorted(os.listdir(tmp_path)) == ["kl.npy", "kl.zarr", "p.npz", "q.npz"]


def test_knn_inputs_of_every_kind(on, rng, tmp_path):
    a = arrays(rng, "covariance", 90, 4)
    b = arrays(rng, "covariance", 60, 4)
    np.save(tmp_path / "mean.npy", a["mean"])
    np.save(tmp_path / "cov.npy", np.asfortranarray(a["covariance"]))
    for name, v in b.items():
        da.to_zarr(da.from_array(v, chunks=(25,) + v.shape[1:]), str(tmp_path / "q.zarr"),
                   component=name)
    want = gk.knn_kl(gaussian("covariance", a), gaussian("covariance", b), k=7)
    ok("knn", "--p", f"mean={tmp_path / 'mean.npy'}", f"covariance={tmp_path / 'cov.npy'}",
       "--q", tmp_path / "q.zarr", "-k", 7, "-o", tmp_path / "nn.npz", "--chunk-rows", 20,
       "--q-chunk-rows", 3, *on)
    got = np.load(tmp_path / "nn.npz")
    np.testing.assert_array_equal(got["indices"], want[0])
    np.testing.assert_array_equal(got["kl"], want[1])
    ok("knn", "--p", f"mean={tmp_path / 'mean.npy'}", f"covariance={tmp_path / 'cov.npy'}",
       "-k", 5, "--exclude-self", "-o", tmp_path / "self.zarr", *on)
    self_want = gk.knn_kl(gaussian("covariance", a), k=5, exclude_self=True)
    np.testing.assert_array_equal(
        da.from_zarr(str(tmp_path / "self.zarr"), component="indices").compute(), self_want[0])
    np.testing.assert_array_equal(
        da.from_zarr(str(tmp_path / "self.zarr"), component="kl").compute(), self_want[1])


def test_knn_csv_and_dtype(on, rng, tmp_path):
    a = arrays(rng, "logvar", 30, 3, np.float32)
    P = save(tmp_path / "p.npz", a)
    text = ok("knn", "--p", P, "-k", 2, "-o", "-", *on).stdout.splitlines()
    idx, val = gk.knn_kl(gaussian("logvar", a), k=2)
    assert text[0] == "p,rank,q,kl" and len(text) == 61
    assert text[3] == "1,0,1,0"  # gausskl's shortest text
    assert text[4] == f"1,1,{idx[1, 1]},{np.float32(val[1, 1])!s}"
    # CSV inputs are float64, and so are the results.
    for name in ("mean", "logvar"):
        np.savetxt(tmp_path / f"{name}.csv", a[name].astype(np.float64), delimiter=",")
    ok("knn", "--p", f"mean={tmp_path / 'mean.csv'}", f"logvar={tmp_path / 'logvar.csv'}", "-k",
       2, "-o", tmp_path / "csv.npz", *on)
    got = np.load(tmp_path / "csv.npz")
    want = gk.knn_kl(gaussian("logvar", {k: v.astype(np.float64) for k, v in a.items()}), k=2)
    np.testing.assert_array_equal(got["indices"], want[0])
    np.testing.assert_array_equal(got["kl"], want[1])
    ok("knn", "--p", P, "-k", 2, "--dtype", "float64", "-o", tmp_path / "nn.npz", *on)
    got = np.load(tmp_path / "nn.npz")
    want = gk.knn_kl(gaussian("logvar", {k: v.astype(np.float64) for k, v in a.items()}), k=2)
    assert got["kl"].dtype == np.float64
    np.testing.assert_array_equal(got["indices"], want[0])
    np.testing.assert_array_equal(got["kl"], want[1])


@pytest.mark.parametrize("output", ["out.zarr", "out.npy"])
def test_bad_value_one_line_exit_2_no_output(on, rng, tmp_path, output):
    a = arrays(rng, "std", 80, 3)
    a["std"][61, 2] = -0.5
    P = save(tmp_path / "p.npz", a)
    line = fails("pairwise", "--p", P, "-o", tmp_path / output, "--chunk-rows", 16, *on)
    assert line == ("gausskl-dask: error: [pairwise_kl] p.scale (std) must be positive and "
                    "finite, found -0.5 at row 61, column 2")
    assert sorted(os.listdir(tmp_path)) == ["p.npz"]
    # An existing output is left as it was.
    (tmp_path / output).write_text("old") if output.endswith(".npy") else \
        (tmp_path / output).mkdir()
    fails("pairwise", "--p", P, "-o", tmp_path / output, "--chunk-rows", 16, *on)
    assert sorted(os.listdir(tmp_path)) == sorted(["p.npz", output])


def test_not_positive_definite_names_the_flag(on, rng, tmp_path):
    a = arrays(rng, "covariance", 40, 3)
    a["covariance"][33] = np.ones((3, 3))  # singular: not positive definite, fixed by a jitter
    line = fails("knn", "--p", save(tmp_path / "p.npz", a), "-k", 2, "-o", tmp_path / "nn.npz",
                 "--chunk-rows", 10, *on)
    assert "p.scale (covariance) is not positive definite at distribution 33" in line
    assert line.endswith("; --jitter EPS does that for each such matrix")
    ok("knn", "--p", tmp_path / "p.npz", "-k", 2, "-o", tmp_path / "nn.npz", "--jitter", "1e-6",
       "--chunk-rows", 10, *on)


def test_usage_and_file_errors(on, rng, tmp_path):
    P = save(tmp_path / "p.npz", arrays(rng, "std", 10, 2))
    assert "no such file" in fails("knn", "--p", tmp_path / "nope.npz", "-k", 1, "-o",
                                   tmp_path / "nn.npz", *on)
    bad = save(tmp_path / "bad.npz", {"mean": np.zeros((2, 2)), "sigma": np.ones((2, 2))})
    assert "unknown array 'sigma'" in fails("knn", "--p", bad, "-k", 1, "-o", tmp_path / "a.npz",
                                            *on)
    assert "k = 11 must be between 1 and M = 10" in fails("knn", "--p", P, "-k", 11, "-o",
                                                          tmp_path / "nn.npz", *on)
    assert "--exclude-self needs q = p" in fails("knn", "--p", P, "--q", P, "-k", 1,
                                                 "--exclude-self", "-o", tmp_path / "a.npz", *on)
    assert "writes .zarr stores" in fails("pairwise", "--p", P, "-o", tmp_path / "a.txt", *on)
    assert "--tolerance" in fails("pairwise", "--p", P, "-o", tmp_path / "a.npy",
                                  "--tolerance", "1", *on)
    assert "local:W needs W >= 1" in fails("pairwise", "--p", P, "-o", tmp_path / "a.npy",
                                           "--scheduler", "local:0")
    assert fails("pairwise", "-o", "x.npy").startswith("gausskl-dask: error: the following")
    assert sorted(os.listdir(tmp_path)) == ["bad.npz", "p.npz"]


def test_local_cluster(rng, tmp_path):
    """--scheduler local:W starts W worker processes of its own, and stops them."""
    a = arrays(rng, "var", 50, 3, np.float32)
    P = save(tmp_path / "p.npz", a)
    ok("knn", "--p", P, "-k", 3, "-o", tmp_path / "nn.npz", "--scheduler", "local:2",
       "--worker-memory", "512M", "--quiet")
    got, want = np.load(tmp_path / "nn.npz"), gk.knn_kl(gaussian("var", a), k=3)
    np.testing.assert_array_equal(got["indices"], want[0])
    np.testing.assert_array_equal(got["kl"], want[1])


def gausskl_binary():
    path = Path(os.environ.get("GAUSSKL_CLI", REPO / "build" / "gausskl"))
    return path if path.is_file() and os.access(path, os.X_OK) else None


@pytest.mark.skipif(gausskl_binary() is None, reason="the gausskl binary is not built")
def test_same_output_as_gausskl(on, rng, tmp_path):
    a = arrays(rng, "scale_tril", 64, 4, np.float32)
    P = save(tmp_path / "p.npz", a)
    binary = str(gausskl_binary())
    for cmd, out, extra in (("knn", "nn.csv", ["-k", "5", "--exclude-self"]),
                            ("pairwise", "kl.npy", [])):
        subprocess.run([binary, cmd, "--p", str(P), "-o", str(tmp_path / ("c-" + out)), *extra],
                       check=True, capture_output=True)
        ok(cmd, "--p", P, "-o", tmp_path / ("d-" + out), "--chunk-rows", 10, *extra, *on)
        if out.endswith(".csv"):
            assert (tmp_path / ("c-" + out)).read_text() == (tmp_path / ("d-" + out)).read_text()
        else:
            c, d = np.load(tmp_path / ("c-" + out)), np.load(tmp_path / ("d-" + out))
            assert np.array_equal(np.diagonal(d), np.zeros(64)) and c.dtype == d.dtype
            assert np.allclose(c, d, rtol=1e-6, atol=1e-6)  # scale_tril q: within tolerance
    shutil.rmtree(tmp_path)


def test_knn_q_is_p_cut_apart(on, rng, tmp_path):
    """Without --q, knn cuts q = p into its own chunks (--q-chunk-rows, else up to 65,536 rows):
    the same neighbours, bit for bit, with and without --exclude-self."""
    a = arrays(rng, "std", 60, 4, np.float32)
    a["mean"][40:44], a["std"][40:44] = a["mean"][3], a["std"][3]  # duplicates of a lower row
    P = save(tmp_path / "p.npz", a)
    for flags in ((), ("--exclude-self",)):
        ok("knn", "--p", P, "-k", 5, *flags, "--chunk-rows", 7, "--q-chunk-rows", 16, "-o",
           tmp_path / "nn.npz", *on)
        got = np.load(tmp_path / "nn.npz")
        idx, val = gk.knn_kl(gaussian("std", a), k=5, exclude_self=bool(flags))
        np.testing.assert_array_equal(got["indices"], idx)
        np.testing.assert_array_equal(got["kl"], val)


def test_option_rules_are_the_librarys(capsys):
    """--tolerance and --jitter are checked by the library's check_options, in its words."""
    from gausskl.dask import _cli

    for flag, value, rule in (("--tolerance", "1", "must be 0 (the default) or at most 1e-3"),
                              ("--jitter", "-1", "must be finite and >= 0"),
                              ("--jitter", "inf", "must be finite and >= 0")):
        with pytest.raises(SystemExit) as e:
            _cli.main(["pairwise", "--p", "p.npz", "-o", "a.npy", flag, value])
        assert e.value.code == 2
        assert f"{rule}, found {value}" in capsys.readouterr().err
