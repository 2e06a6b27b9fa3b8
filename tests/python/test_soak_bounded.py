"""The bounded soak (issue 37, item 5): a few thousand of bench/soak.py's training steps (every
op with NumPy arrays for all families, and with torch tensors and gradients for the diagonal
family, the training-step fast path with its kept state; threads 1 and 2) keep the resident
memory within a fixed bound of where it stood after a warm-up, and leak no file descriptors or
threads. The torch steps of the other families and the torch path (0.1-1 s each here) run in
`make bench-soak`."""

import sys
import time
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import soak  # noqa: E402

GROWTH_MIB = 32  # allocator noise and caches: a leak of 1 KiB a step would be 3 MiB here
STEPS, SECONDS = 3000, 20


def test_memory_fds_and_threads_stay_bounded():
    steps = soak.Steps(seed=3, n=8, d=3, frameworks=("numpy", "torch"), torch_families=("diag",))
    process = psutil.Process()
    for _ in range(3 * len(steps.configs)):  # warm-up: pools, caches, torch's first calls
        steps.step()
    rss0, fds0, threads0 = soak.sample(process)
    start = time.monotonic()
    while steps.count < STEPS and time.monotonic() - start < SECONDS:
        steps.step()
    rss, fds, threads = soak.sample(process)
    assert steps.count >= 1000, f"only {steps.count} steps in {SECONDS} s"
    assert rss - rss0 < GROWTH_MIB, f"RSS {rss0:.1f} -> {rss:.1f} MiB in {steps.count} steps"
    assert fds <= fds0, f"open fds {fds0} -> {fds}"
    assert threads <= threads0 + 2, f"threads {threads0} -> {threads}"
