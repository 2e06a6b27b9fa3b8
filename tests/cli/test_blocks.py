"""pairwise and knn in blocks of rows: a tiny --memory-budget gives the same bytes as the
default (one block), against the NumPy oracle; the progress line appears only on a terminal."""

import os
import pty
import subprocess

import numpy as np
import pytest

import reference_np as ref
from cli_helpers import assert_close, gaussians, save


@pytest.mark.parametrize("kind", ["std", "scale_tril", "lowrank"])
@pytest.mark.parametrize("output", ["npy", "csv"])
def test_pairwise_tiny_budget_streams_the_same_matrix(gausskl, tmp_path, rng, kind, output):
    p = gaussians(rng, kind, 37, 5)
    q = gaussians(rng, kind, 23, 5)
    spec = ["--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q)]
    whole, blocks = tmp_path / f"whole.{output}", tmp_path / f"blocks.{output}"
    gausskl.ok("pairwise", *spec, "-o", whole)
    # 200 bytes hold less than one row of 23 doubles: every row is its own block.
    gausskl.ok("pairwise", *spec, "--memory-budget", "200", "-o", blocks)
    assert whole.read_bytes() == blocks.read_bytes()
    got = np.load(blocks) if output == "npy" else np.loadtxt(blocks, delimiter=",")
    assert_close(got, ref.pairwise(p, q), np.float64)


def test_knn_tiny_budget_same_result(gausskl, tmp_path, rng):
    p = gaussians(rng, "std", 41, 6, np.float32)
    spec = ["--p", *save(tmp_path, "p", p)]
    gausskl.ok("knn", *spec, "-k", 3, "-o", tmp_path / "a.npz")
    gausskl.ok("knn", *spec, "-k", 3, "--memory-budget", "1k", "-o", tmp_path / "b.npz")
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "b.npz") as b:
        np.testing.assert_array_equal(a["indices"], b["indices"])
        np.testing.assert_array_equal(a["kl"], b["kl"])
        want_idx, want_kl = ref.knn(ref.pairwise(p, p), 3, False)
        np.testing.assert_array_equal(a["indices"], want_idx)
        assert_close(a["kl"], want_kl, np.float32)


def test_bad_memory_budget_is_a_usage_error(gausskl, tmp_path, rng):
    spec = ["--p", *save(tmp_path, "p", gaussians(rng, "std", 3, 2))]
    result = gausskl("pairwise", *spec, "--memory-budget", "lots", "-o", tmp_path / "x.npy")
    assert result.returncode == 2
    assert "--memory-budget" in result.stderr
    assert not (tmp_path / "x.npy").exists()


def run_on_terminal(gausskl, args):
    """Runs gausskl with stderr on a pseudo-terminal; returns (exit code, what it printed)."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([str(gausskl.path), *map(str, args)], stdout=subprocess.DEVNULL,
                            stderr=terminal)
    os.close(terminal)
    printed = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        printed += chunk
    os.close(controller)
    return proc.wait(timeout=60), printed.decode(errors="replace")


def test_progress_only_on_a_terminal_and_not_with_quiet(gausskl, tmp_path, rng):
    spec = ["--p", *save(tmp_path, "p", gaussians(rng, "std", 300, 8))]
    args = ["pairwise", *spec, "--memory-budget", "2k", "-o", tmp_path / "kl.npy"]
    code, printed = run_on_terminal(gausskl, args)
    assert code == 0 and "pairwise: 100% (300 of 300 rows" in printed
    code, printed = run_on_terminal(gausskl, [*args, "--quiet"])
    assert code == 0 and printed == ""
    result = gausskl.ok(*args)  # stderr is a pipe here
    assert result.stderr == ""
