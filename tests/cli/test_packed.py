"""packed_scale_tril inputs (full covariance from a network's packed Cholesky factors) and
--log-diagonal, through kl, pairwise and knn, checked against the NumPy oracle (reference_np),
which unpacks them row by row in torch.tril_indices order."""

import numpy as np
import pytest

import reference_np as ref
from cli_helpers import FAMILIES, assert_close, gaussians, parse_csv, save

OTHERS = FAMILIES + ("packed_scale_tril",)


def flag(log_diagonal):
    return ["--log-diagonal"] if log_diagonal else []


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("other", OTHERS)
@pytest.mark.parametrize("log_diagonal", [False, True])
def test_kl_packed_on_either_side(gausskl, tmp_path, rng, log_diagonal, other, dtype):
    packed = gaussians(rng, "packed_scale_tril", 5, 4, dtype, log_diagonal=log_diagonal)
    q = gaussians(rng, other, 5, 4, dtype, log_diagonal=log_diagonal)
    for name, (a, b) in {"pq": (packed, q), "qp": (q, packed)}.items():
        out = tmp_path / f"{name}.npy"
        gausskl.ok("kl", "--p", *save(tmp_path, f"{name}_p", a), "--q",
                   *save(tmp_path, f"{name}_q", b), *flag(log_diagonal), "-o", out)
        got = np.load(out)
        assert got.dtype == dtype
        assert_close(got, ref.kl(a, b, log_diagonal), dtype)


@pytest.mark.parametrize("log_diagonal", [False, True])
def test_kl_without_q(gausskl, tmp_path, rng, log_diagonal):
    p = gaussians(rng, "packed_scale_tril", 6, 3, log_diagonal=log_diagonal)
    out = tmp_path / "out.npy"
    gausskl.ok("kl", "--p", *save(tmp_path, "p", p), *flag(log_diagonal), "-o", out)
    assert_close(np.load(out), ref.kl(p, None, log_diagonal), np.float64)


@pytest.mark.parametrize("other", OTHERS)
@pytest.mark.parametrize("log_diagonal", [False, True])
def test_pairwise(gausskl, tmp_path, rng, log_diagonal, other):
    p = gaussians(rng, "packed_scale_tril", 5, 3, log_diagonal=log_diagonal)
    q = gaussians(rng, other, 4, 3, log_diagonal=log_diagonal)
    out = tmp_path / "out.npy"
    gausskl.ok("pairwise", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q),
               *flag(log_diagonal), "-o", out)
    assert_close(np.load(out), ref.pairwise(p, q, log_diagonal), np.float64)
    gausskl.ok("pairwise", "--p", *save(tmp_path, "q", q), "--q", *save(tmp_path, "p", p),
               *flag(log_diagonal), "-o", out)
    assert_close(np.load(out), ref.pairwise(q, p, log_diagonal), np.float64)


@pytest.mark.parametrize("log_diagonal", [False, True])
def test_pairwise_self_has_zero_diagonal(gausskl, tmp_path, rng, log_diagonal):
    p = gaussians(rng, "packed_scale_tril", 6, 4, np.float32, log_diagonal=log_diagonal)
    out = tmp_path / "out.npy"
    gausskl.ok("pairwise", "--p", *save(tmp_path, "p", p), *flag(log_diagonal), "-o", out)
    got = np.load(out)
    assert_close(got, ref.pairwise(p, None, log_diagonal), np.float32)
    np.testing.assert_array_equal(np.diagonal(got), np.zeros(6, dtype=np.float32))


@pytest.mark.parametrize("log_diagonal", [False, True])
def test_knn(gausskl, tmp_path, rng, log_diagonal):
    p = gaussians(rng, "packed_scale_tril", 7, 3, log_diagonal=log_diagonal)
    q = gaussians(rng, "scale_tril", 9, 3)
    out = tmp_path / "nn.npz"
    gausskl.ok("knn", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q), "-k", 4,
               *flag(log_diagonal), "-o", out)
    want_idx, want_kl = ref.knn(ref.pairwise(p, q, log_diagonal), 4)
    with np.load(out) as z:
        np.testing.assert_array_equal(z["indices"], want_idx)
        assert_close(z["kl"], want_kl, np.float64)


def test_log_diagonal_applies_to_every_packed_input(gausskl, tmp_path, rng):
    # Both sides packed with log diagonals, q a single distribution ([D] and [K]).
    p = gaussians(rng, "packed_scale_tril", 4, 5, log_diagonal=True)
    q = {k: v[0] for k, v in gaussians(rng, "packed_scale_tril", 1, 5, log_diagonal=True).items()}
    assert q["packed_scale_tril"].shape == (15,)
    out = tmp_path / "out.npy"
    gausskl.ok("kl", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q),
               "--log-diagonal", "-o", out)
    assert_close(np.load(out), ref.kl(p, q, True), np.float64)


@pytest.mark.parametrize("fmt", ["npy", "csv", "fortran", "npz_compressed"])
def test_file_formats(gausskl, tmp_path, rng, fmt):
    p = gaussians(rng, "packed_scale_tril", 3, 4, log_diagonal=True)
    q = gaussians(rng, "std", 3, 4)
    out = tmp_path / "out.npy"
    gausskl.ok("kl", "--p", *save(tmp_path, "p", p, fmt), "--q", *save(tmp_path, "q", q),
               "--log-diagonal", "-o", out)
    assert_close(np.load(out), ref.kl(p, q, True), np.float64)


def test_blog_post_example(gausskl, tmp_path, rng):
    # A network's unconstrained elements, exp on the diagonal. p = q up to the diagonal's log
    # gives exactly 0; the values match the oracle's unpacking of the same elements.
    d, n = 3, 5
    elems_p = rng.normal(size=(n, d * (d + 1) // 2))
    elems_q = rng.normal(size=(n, d * (d + 1) // 2))
    p = {"mean": rng.normal(size=(n, d)), "packed_scale_tril": elems_p}
    q = {"mean": rng.normal(size=(n, d)), "packed_scale_tril": elems_q}
    got = gausskl.ok("kl", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q),
                     "--log-diagonal", "-o", "-").stdout
    assert_close(parse_csv(got).ravel(), ref.kl(p, q, True), np.float64)
    same = gausskl.ok("kl", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "p2", p),
                      "--log-diagonal", "-o", "-").stdout
    np.testing.assert_array_equal(parse_csv(same).ravel(), np.zeros(n))
