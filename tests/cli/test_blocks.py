"""pairwise and knn in blocks of rows: the tightest --memory-budget (one row per block) gives
the same bytes as the default (one block), against the NumPy oracle, and one byte less is a
resource error; the progress line appears on a terminal, and with --progress SECONDS as a line
every SECONDS on any stream."""

import os
import pty
import re
import subprocess

import numpy as np
import pytest

import reference_np as ref
from cli_helpers import assert_close, gaussians, save


def smallest_budget(gausskl, args):
    """The smallest --memory-budget (bytes) under which `gausskl *args` succeeds, by bisection."""
    low, high = 1, 64 << 20  # fails, succeeds
    assert gausskl(*args, "--memory-budget", high).returncode == 0
    while high - low > 1:
        mid = (low + high) // 2
        if gausskl(*args, "--memory-budget", mid).returncode == 0:
            high = mid
        else:
            low = mid
    return high


@pytest.mark.parametrize("kind", ["std", "scale_tril", "lowrank"])
@pytest.mark.parametrize("output", ["npy", "csv"])
def test_pairwise_tightest_budget_streams_the_same_matrix(gausskl, tmp_path, rng, kind, output):
    p = gaussians(rng, kind, 37, 5)
    q = gaussians(rng, kind, 23, 5)
    spec = ["--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q), "--threads", 1]
    whole, blocks = tmp_path / f"whole.{output}", tmp_path / f"blocks.{output}"
    gausskl.ok("pairwise", *spec, "-o", whole)
    # The tightest budget holds the inputs, the prepared copies and one row: 37 blocks.
    budget = smallest_budget(gausskl, ["pairwise", *spec, "-o", blocks])
    gausskl.ok("pairwise", *spec, "--memory-budget", budget, "-o", blocks)
    assert whole.read_bytes() == blocks.read_bytes()
    got = np.load(blocks) if output == "npy" else np.loadtxt(blocks, delimiter=",")
    assert_close(got, ref.pairwise(p, q), np.float64)
    # One byte less: not even one row fits; a resource error and no file.
    blocks.unlink()
    result = gausskl("pairwise", *spec, "--memory-budget", budget - 1, "-o", blocks)
    assert result.returncode == 1
    assert re.match(r"gausskl: error: \[pairwise\] --memory-budget .* is too small: the inputs "
                    r"took .*, which left .*, but the prepared", result.stderr), result.stderr
    assert not blocks.exists()


def test_knn_tightest_budget_same_result(gausskl, tmp_path, rng):
    p = gaussians(rng, "std", 41, 6, np.float32)
    spec = ["--p", *save(tmp_path, "p", p), "--threads", 1]
    gausskl.ok("knn", *spec, "-k", 3, "-o", tmp_path / "a.npz")
    budget = smallest_budget(gausskl, ["knn", *spec, "-k", 3, "-o", tmp_path / "b.npz"])
    gausskl.ok("knn", *spec, "-k", 3, "--memory-budget", budget, "-o", tmp_path / "b.npz")
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
    # 3M: room for the packing buffer (1.25 MiB), the prepared copies and several blocks.
    args = ["pairwise", *spec, "--threads", 1, "--memory-budget", "3M", "-o", tmp_path / "kl.npy"]
    code, printed = run_on_terminal(gausskl, args)
    assert code == 0 and "pairwise: 100% (300 of 300 rows" in printed
    code, printed = run_on_terminal(gausskl, [*args, "--quiet"])
    assert code == 0 and printed == ""
    result = gausskl.ok(*args)  # stderr is a pipe here
    assert result.stderr == ""


LINE = r"gausskl: {what}: +\d+% \((\d+) of {n} rows, [\d.]+ rows/s, [\d.]+ s, about [\d.]+ s left\)"
LAST = r"gausskl: {what}: 100% \({n} of {n} rows, [\d.]+ rows/s, in [\d.]+ s\)"


@pytest.mark.parametrize("command", [["pairwise"], ["knn", "-k", "3"]])
def test_progress_lines_on_any_stream(gausskl, tmp_path, rng, command):
    # A batch job's stderr is a file: --progress SECONDS writes a line every SECONDS (here every
    # block: the blocks are small and the interval tiny) and one at the end.
    spec = ["--p", *save(tmp_path, "p", gaussians(rng, "std", 1500, 8))]
    out = tmp_path / ("nn.npz" if command[0] == "knn" else "kl.npy")
    args = [*command, *spec, "--threads", 1, "--memory-budget", "3M", "-o", out]
    lines = gausskl.ok(*args, "--progress", "0.000001").stderr.splitlines()
    assert len(lines) >= 3, lines
    what = command[0]
    done = [int(re.fullmatch(LINE.format(what=what, n=1500), line).group(1)) for line in lines[:-1]]
    assert done == sorted(done) and 0 < done[0] < 1500
    assert re.fullmatch(LAST.format(what=what, n=1500), lines[-1]), lines[-1]
    # The default interval, 10 s: a run this short shows only the last line.
    (line,) = gausskl.ok(*args, "--progress").stderr.splitlines()
    assert re.fullmatch(LAST.format(what=what, n=1500), line), line
    # On a terminal, --progress changes nothing: the line is redrawn in place and erased.
    code, printed = run_on_terminal(gausskl, [*args, "--progress"])
    assert code == 0 and f"\r\033[K{what}: 100% (1500 of 1500 rows, " in printed
    assert printed.endswith("\r\033[K") and "\n" not in printed


@pytest.mark.parametrize("args, message", [
    (["pairwise", "--progress", "--quiet"], "--quiet excludes --progress (see gausskl pairwise "
                                            "--help)"),
    (["knn", "-k", "1", "--progress", "0"],
     "--progress: SECONDS must be a number > 0, found 0 (see gausskl knn --help)"),
    (["kl", "--progress"], "kl has no --progress (pairwise, knn and mixture-kl take it) (see gausskl kl "
                           "--help)"),
])
def test_progress_usage_errors(gausskl, tmp_path, rng, args, message):
    spec = ["--p", *save(tmp_path, "p", gaussians(rng, "std", 3, 2))]
    result = gausskl(args[0], *spec, *args[1:], "-o", tmp_path / "out.npz")
    assert result.returncode == 2 and result.stderr == f"gausskl: error: {message}\n"
