"""Batches large enough for tiles with ragged edges and several threads."""

import numpy as np
import pytest

import reference_np as ref
from cli_helpers import assert_close, gaussians, save


@pytest.mark.parametrize("kind, n, m, d", [("std", 301, 517, 37), ("lowrank", 61, 73, 9),
                                           ("scale_tril", 59, 67, 11)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pairwise_and_knn(gausskl, tmp_path, rng, kind, n, m, d, dtype):
    p = gaussians(rng, kind, n, d, dtype)
    q = gaussians(rng, kind, m, d, dtype)
    args = ["--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q)]
    gausskl.ok("pairwise", *args, "-o", tmp_path / "pw.npy")
    gausskl.ok("knn", *args, "-k", 7, "-o", tmp_path / "nn.npz")
    want = ref.pairwise(p, q)
    assert_close(np.load(tmp_path / "pw.npy"), want, dtype)
    with np.load(tmp_path / "nn.npz") as f:
        want_idx, want_kl = ref.knn(want, 7)
        np.testing.assert_array_equal(f["indices"], want_idx)
        assert_close(f["kl"], want_kl, dtype)


@pytest.mark.parametrize("command, out", [("kl", "r.npy"), ("pairwise", "r.npy"),
                                          ("knn", "r.npz")])
def test_thread_count_does_not_change_results(gausskl, tmp_path, rng, command, out):
    p = gaussians(rng, "std", 400, 16)
    q = gaussians(rng, "std", 400, 16)
    args = [command, "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q)]
    args += ["-k", 5] if command == "knn" else []
    outputs = []
    for threads in (["--threads", 1], ["--threads", 2], ["--threads", 0], []):
        path = tmp_path / f"{len(outputs)}-{out}"
        gausskl.ok(*args, *threads, "-o", path)
        outputs.append(path.read_bytes())
    assert all(o == outputs[0] for o in outputs)
