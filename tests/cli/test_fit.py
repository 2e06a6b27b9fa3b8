"""gausskl fit: statistics of rows of features from .npy (memory-mapped, any order and byte
order), .npz arrays and CSV, against np.cov of the float64 data; no output on error; and the FID
workflow with pytorch-fid's statistics files (--keys mean=mu,covariance=sigma) and its hint."""

import numpy as np
import pytest


def one_error_line(result):
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("gausskl: error: ") and result.stderr.count("\n") == 1, \
        result.stderr
    return result.stderr[len("gausskl: error: "):-1]


def features(rng, n, d, mean=0.0, std=1.0, dtype=np.float64):
    mix = rng.normal(size=(d, d)) / np.sqrt(d) + np.eye(d)
    return (mean + std * rng.normal(size=(n, d)) @ mix).astype(dtype)


def rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def check_stats(path, x, ddof=1, family="full"):
    ref = x.astype(np.float64)
    with np.load(path) as f:
        scale = "covariance" if family == "full" else "var"
        assert sorted(f.files) == sorted(["mean", scale, "count"])
        assert f["mean"].dtype == np.float64 and f[scale].dtype == np.float64
        assert f["count"].dtype == np.int64 and f["count"].shape == () and f["count"] == len(x)
        assert rel(f["mean"], ref.mean(0)) <= 1e-14
        want = np.cov(ref, rowvar=False, ddof=ddof)
        if family == "diag":
            want = np.diag(want)
        assert f[scale].shape == want.shape
        assert rel(f[scale], want) <= 1e-12


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fit_npy(gausskl, tmp_path, rng, dtype):
    x = features(rng, 3000, 24, mean=1e3, std=0.1, dtype=dtype)
    np.save(tmp_path / "x.npy", x)
    result = gausskl.ok("fit", "--x", tmp_path / "x.npy", "-o", tmp_path / "stats.npz")
    assert result.stdout == "" and result.stderr == ""
    check_stats(tmp_path / "stats.npz", x)


@pytest.mark.parametrize("layout", ["fortran", "bigendian"])
def test_fit_npy_any_order_and_byte_order(gausskl, tmp_path, rng, layout):
    x = features(rng, 200, 5)
    stored = np.asfortranarray(x) if layout == "fortran" else x.astype(">f8")
    np.save(tmp_path / "x.npy", stored)
    gausskl.ok("fit", "--x", tmp_path / "x.npy", "-o", tmp_path / "s.npz")
    check_stats(tmp_path / "s.npz", x)


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_fit_npz_array(gausskl, tmp_path, rng, save):
    x = features(rng, 500, 6, dtype=np.float32)
    save(tmp_path / "f.npz", features=x, labels=np.arange(500))
    gausskl.ok("fit", "--x", f"{tmp_path / 'f.npz'}:features", "-o", tmp_path / "s.npz")
    check_stats(tmp_path / "s.npz", x)
    save(tmp_path / "one.npz", np.asfortranarray(x))  # one array (arr_0), Fortran order
    gausskl.ok("fit", "--x", tmp_path / "one.npz", "-o", tmp_path / "s1.npz")
    check_stats(tmp_path / "s1.npz", x)


def test_fit_csv_ddof_and_diag(gausskl, tmp_path, rng):
    x = features(rng, 100, 4)
    np.savetxt(tmp_path / "x.csv", x, delimiter=",", header="a,b,c,d", comments="")
    gausskl.ok("fit", "--x", tmp_path / "x.csv", "--ddof", 0, "-o", tmp_path / "s.npz")
    check_stats(tmp_path / "s.npz", np.loadtxt(tmp_path / "x.csv", delimiter=",", skiprows=1),
                ddof=0)
    np.save(tmp_path / "x.npy", x)
    gausskl.ok("fit", "--x", tmp_path / "x.npy", "--family", "diag", "-o", tmp_path / "d.npz")
    check_stats(tmp_path / "d.npz", x, family="diag")


def test_fit_then_w2(gausskl, tmp_path, rng):
    """The FID recipe in the shell: fit, fit, kl --divergence wasserstein2."""
    import gausskl as gk  # the value to compare with, if the package is installed

    a, b = features(rng, 400, 8), features(rng, 300, 8, mean=0.3)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    gausskl.ok("fit", "--x", tmp_path / "a.npy", "-o", tmp_path / "a.npz")
    gausskl.ok("fit", "--x", tmp_path / "b.npy", "-o", tmp_path / "b.npz")
    out = gausskl.ok("kl", "--p", tmp_path / "a.npz", "--q", tmp_path / "b.npz", "--divergence",
                     "wasserstein2", "-o", "-").stdout
    want = gk.divergence(gk.fit_gaussian(a), gk.fit_gaussian(b), kind="wasserstein2")
    assert abs(float(out) - want) <= 1e-9 * want


def test_pytorch_fid_statistics(gausskl, tmp_path, rng):
    """pytorch-fid's files as it writes them: np.savez(path, mu=mu, sigma=sigma), [D], [D, D]."""
    import gausskl as gk

    a, b = features(rng, 300, 6), features(rng, 300, 6, mean=0.2)
    for name, x in (("a", a), ("b", b)):
        np.savez(tmp_path / f"{name}.npz", mu=np.mean(x, axis=0), sigma=np.cov(x, rowvar=False))
    out = gausskl.ok("kl", "--p", tmp_path / "a.npz", "--q", tmp_path / "b.npz", "--keys",
                     "mean=mu,covariance=sigma", "--divergence", "wasserstein2", "-o", "-").stdout
    want = gk.divergence(gk.fit_gaussian(a), gk.fit_gaussian(b), kind="wasserstein2")
    assert abs(float(out) - want) <= 1e-9 * want
    # Without --keys the hint names both keys: sigma there is a covariance, not a std.
    result = gausskl("kl", "--p", tmp_path / "a.npz", "--q", tmp_path / "b.npz",
                     "--divergence", "wasserstein2", "-o", "-")
    assert one_error_line(result).endswith(
        f"{tmp_path / 'a.npz'} holds 'mu', 'sigma' (not read; --keys mean=mu,covariance=sigma "
        "reads pytorch-fid's statistics, whose sigma is the covariance [D, D], not a std)")
    result = gausskl("kl", "--p", tmp_path / "a.npz", "--keys", "mean=mu", "-o", "-")
    assert one_error_line(result).endswith(
        "holds 'sigma' (not read; --keys mean=mu,covariance=sigma reads pytorch-fid's statistics, "
        "whose sigma is the covariance [D, D], not a std)")


def test_errors_leave_no_output(gausskl, tmp_path, rng):
    x = features(rng, 20, 3)
    x[13, 1] = np.nan
    np.save(tmp_path / "nan.npy", x)
    out = tmp_path / "s.npz"
    result = gausskl("fit", "--x", tmp_path / "nan.npy", "-o", out)
    assert one_error_line(result) == "[fit] x must be finite, found nan at row 13, column 1"
    assert not out.exists() and list(tmp_path.iterdir()) == [tmp_path / "nan.npy"]
    out.write_bytes(b"old")
    np.save(tmp_path / "one.npy", x[:1])
    result = gausskl("fit", "--x", tmp_path / "one.npy", "-o", out)
    assert one_error_line(result) == (
        f"[fit] --ddof 1 needs more than 1 rows; {tmp_path / 'one.npy'} has 1")
    assert out.read_bytes() == b"old"
    np.save(tmp_path / "v.npy", x[0])
    assert one_error_line(gausskl("fit", "--x", tmp_path / "v.npy", "-o", out)) == (
        f"[read] {tmp_path / 'v.npy'}: expected a 2-D array [N, D] (N rows of D features), found "
        "shape (3,)")
    np.savez(tmp_path / "two.npz", a=x, b=x)
    assert one_error_line(gausskl("fit", "--x", tmp_path / "two.npz", "-o", out)) == (
        f"[read] {tmp_path / 'two.npz'}: holds 'a', 'b': name the array to read, "
        f"{tmp_path / 'two.npz'}:NAME")
    assert one_error_line(gausskl("fit", "--x", f"{tmp_path / 'two.npz'}:c", "-o", out)) == (
        f"[read] {tmp_path / 'two.npz'}: no array 'c' (it holds 'a', 'b')")
    assert one_error_line(gausskl("fit", "--x", tmp_path / "x.txt", "-o", out)).startswith(
        f"[fit] --x {tmp_path / 'x.txt'}: give a .npy file")
    assert out.read_bytes() == b"old"
    result = gausskl("fit", "--x", tmp_path / "one.npy", "-o", tmp_path / "s.npy")
    assert result.returncode == 2
    assert one_error_line(gausskl("fit", "--x", tmp_path / "one.npy", "-o", "-")).startswith(
        "[fit] -o - is not possible")


def _csv_text(x, header=None, newline="\n"):
    lines = ([header] if header else []) + [",".join(repr(float(v)) for v in row) for row in x]
    return newline.join(lines)


@pytest.mark.parametrize("newline, last", [("\n", "\n"), ("\r\n", ""), ("\n", "")])
def test_fit_csv_streamed_across_blocks(gausskl, tmp_path, rng, newline, last):
    # About 4.5 MiB of text: parsed a MiB at a time (cli/fit.cpp, kCsvBlockBytes), lines cut at
    # the blocks' edges, with or without a last line end, with a header and comment lines.
    x = features(rng, 40000, 6, mean=3.0)
    text = "# features of 40000 images\n" + _csv_text(x, "f0,f1,f2,f3,f4,f5", newline) + last
    (tmp_path / "x.csv").write_text(text)
    gausskl.ok("fit", "--x", tmp_path / "x.csv", "-o", tmp_path / "s.npz")
    check_stats(tmp_path / "s.npz", x)


def test_fit_csv_errors_name_the_line_past_the_first_block(gausskl, tmp_path, rng):
    x = features(rng, 40000, 3)
    lines = _csv_text(x).split("\n")
    lines[31233] = "1.0,abc,2.0"
    (tmp_path / "x.csv").write_text("\n".join(lines) + "\n")
    result = gausskl("fit", "--x", tmp_path / "x.csv", "-o", tmp_path / "s.npz")
    assert one_error_line(result) == (f"[read] {tmp_path / 'x.csv'}: line 31234, column 2: 'abc' "
                                      "is not a number")
    assert not (tmp_path / "s.npz").exists()
    lines[31233] = "1.0,2.0"
    (tmp_path / "x.csv").write_text("\n".join(lines) + "\n")
    result = gausskl("fit", "--x", tmp_path / "x.csv", "-o", tmp_path / "s.npz")
    assert one_error_line(result) == (f"[read] {tmp_path / 'x.csv'}: line 31234 has 2 values, "
                                      "line 1 has 3")
    assert not (tmp_path / "s.npz").exists()


@pytest.mark.parametrize("text, message", [
    ("", "no values"), ("a,b\n", "a header row and no values"), ("# only a remark\n", "no values")])
def test_fit_csv_without_rows(gausskl, tmp_path, text, message):
    (tmp_path / "x.csv").write_text(text)
    result = gausskl("fit", "--x", tmp_path / "x.csv", "-o", tmp_path / "s.npz")
    assert one_error_line(result) == f"[read] {tmp_path / 'x.csv'}: {message}"
    assert not (tmp_path / "s.npz").exists()


def test_fit_csv_ddof_needs_rows(gausskl, tmp_path):
    (tmp_path / "x.csv").write_text("1,2\n")
    result = gausskl("fit", "--x", tmp_path / "x.csv", "-o", tmp_path / "s.npz")
    assert one_error_line(result) == f"[fit] --ddof 1 needs more than 1 rows; {tmp_path / 'x.csv'} has 1"
