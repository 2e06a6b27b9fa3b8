"""--memory-budget bounds the whole command: inputs as read, converted copies, the library's
prepared copies and work buffers, the blocks of results and knn's result. Checked by the peak
resident memory of the process, and by the errors when an input does not fit."""

import re
import subprocess
import sys

import numpy as np
import pytest

from cli_helpers import gaussians, save

MiB = 1 << 20

# Measures the peak resident set of one command in a fresh process (RUSAGE_CHILDREN of a
# process that ran only that command), in bytes.
PEAK_RSS = """
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def peak_rss(gausskl, *args):
    out = subprocess.run([sys.executable, "-c", PEAK_RSS, str(gausskl.path), *map(str, args)],
                         capture_output=True, text=True, check=True, timeout=300).stdout.split()
    return int(out[0]), int(out[1])


@pytest.fixture
def not_sanitized(gausskl):
    if "asan" in str(gausskl.path) or "tsan" in str(gausskl.path):
        pytest.skip("sanitizers add shadow memory to the resident set")


@pytest.mark.parametrize("command", ["knn", "pairwise"])
def test_peak_memory_stays_within_the_budget(gausskl, tmp_path, rng, not_sanitized, command):
    # 6000 float32 Gaussians, D = 32: 1.5 MiB of input, 7.3 MiB prepared; the default blocks
    # (128 MiB) would take 6000 x 6000 doubles = 275 MiB, capped to 128 MiB.
    spec = ["--p", *save(tmp_path, "p", gaussians(rng, "std", 6000, 32, np.float32))]
    args = [command, *spec, "-o", tmp_path / ("out.npz" if command == "knn" else "out.npy")]
    if command == "knn":
        args += ["-k", 10]
    code, baseline = peak_rss(gausskl, "--version")
    assert code == 0
    budget = 24 * MiB
    code, bounded = peak_rss(gausskl, *args, "--memory-budget", budget)
    assert code == 0
    code, default = peak_rss(gausskl, *args)
    assert code == 0
    # The process itself (code, libraries, stack) is the baseline; 2 MiB for the allocator's
    # own bookkeeping and fragmentation.
    assert bounded - baseline <= budget + 2 * MiB, (bounded, baseline)
    assert default - baseline > 4 * budget  # the test has teeth: unbounded blocks are far bigger


def test_an_input_larger_than_the_budget_fails_before_it_is_read(gausskl, tmp_path, rng):
    p = gaussians(rng, "std", 20000, 64)  # float64: mean and std take 9.8 MiB each
    spec = ["--p", *save(tmp_path, "p", p)]
    out = tmp_path / "kl.npy"
    result = gausskl("kl", *spec, "--memory-budget", "12M", "-o", out)
    assert result.returncode == 1
    assert "[read]" in result.stderr
    assert result.stderr == (
        f"gausskl: error: [read] {spec[1]}: entry 'std.npy': needs 9.8 MiB, but the inputs before "
        "it took 9.8 MiB of --memory-budget 12.0 MiB, which left 2.2 MiB\n")
    result = gausskl("kl", *spec, "--memory-budget", "1M", "-o", out)
    assert result.returncode == 1
    assert result.stderr == (f"gausskl: error: [read] {spec[1]}: entry 'mean.npy': needs 9.8 MiB, "
                             "but --memory-budget 1.0 MiB is less\n")
    assert not out.exists()


def test_csv_input_counts_its_text_and_values(gausskl, tmp_path, rng):
    mean = tmp_path / "mean.csv"
    np.savetxt(mean, rng.normal(size=(2000, 16)), delimiter=",")  # ~0.8 MiB of text
    std = tmp_path / "std.csv"
    np.savetxt(std, rng.uniform(0.5, 2, size=(2000, 16)), delimiter=",")
    spec = ["--p", f"mean={mean}", f"std={std}"]
    result = gausskl("kl", *spec, "--memory-budget", "512k", "-o", tmp_path / "kl.npy")
    assert result.returncode == 1
    assert f"[read] {mean}: needs" in result.stderr
    gausskl.ok("kl", *spec, "--memory-budget", "4M", "-o", tmp_path / "kl.npy")


def test_a_converted_copy_counts(gausskl, tmp_path, rng):
    # float32 mean with a float64 std: the mean is converted to float64 (1.6 MiB more).
    g = gaussians(rng, "std", 50000, 4)
    mean = tmp_path / "mean.npy"
    np.save(mean, g["mean"].astype(np.float32))
    std = tmp_path / "std.npy"
    np.save(std, g["std"])
    spec = ["--p", f"mean={mean}", f"std={std}"]
    result = gausskl("kl", *spec, "--memory-budget", "2500k", "-o", tmp_path / "kl.npy")
    assert result.returncode == 1
    assert "[load] p.mean converted to float64: needs 1.5 MiB" in result.stderr


def test_the_kept_result_and_the_library_share_count(gausskl, tmp_path, rng):
    spec = ["--p", *save(tmp_path, "p", gaussians(rng, "std", 1000, 8))]
    out = tmp_path / "nn.npz"
    # Inputs take 125 KiB, the plan about 1.5 MiB per thread, knn's result 1000 x 500 x 16 B.
    result = gausskl("knn", *spec, "-k", 500, "--memory-budget", "1M", "-o", out)
    assert result.returncode == 1 and "[knn] the result: needs 7.6 MiB" in result.stderr
    result = gausskl("knn", *spec, "-k", 5, "--memory-budget", "1M", "-o", out)
    assert result.returncode == 1
    # What the user asked for, what the inputs and the result took, what that left, what the
    # library needed: the numbers a user can act on.
    assert re.fullmatch(r"gausskl: error: \[knn\] --memory-budget 1\.0 MiB is too small: the "
                        r"inputs took 125\.0 KiB and the result 78\.1 KiB, which left 820\.9 "
                        r"KiB, but the prepared distributions and work buffers take .*, and each "
                        r"row of results .* more\n", result.stderr), result.stderr
    assert not out.exists()
    gausskl.ok("knn", *spec, "-k", 5, "--memory-budget", "6M", "-o", out)
