#!/usr/bin/env python3
"""Gaussians fitted to features (FID's statistics), side by side in one run.

    .venv/bin/python bench/fit_gaussian.py [--n 50000] [--d 2048] [--batch 1000] [--repeats 3]
                                           [--threads T] [--cli build/gausskl]

--threads T (default 0: all cores) is given to gausskl (threads=T) and, through
OPENBLAS_NUM_THREADS / OMP_NUM_THREADS set before NumPy loads and torch.set_num_threads, to the
others, so that every method runs on the same number of threads.

Features: float32 [N, D], mean 1e3 (per column 1e3 (1 + N(0, 0.01))) and spread 0.1, correlated
through a random mixing matrix: the case where raw sums cancel. Methods, timed in turns in this
process (minimum over --repeats rounds), each giving mean [D] and covariance [D, D] (ddof 1):

* gausskl fit_gaussian    ``gk.fit_gaussian(x)`` on the float32 array;
* gausskl accumulator     ``gk.MomentAccumulator(D)`` updated with batches of --batch rows;
* np.cov                  ``np.mean(x, 0, dtype=np.float64)``, ``np.cov(x, rowvar=False)``
                          (pytorch-fid's code on float64 activations: the whole array, converted
                          to float64 and centred, in memory);
* np.mean float32         ``np.mean(x, 0)`` on the float32 array as it is (a column reduction
                          summed in float32), for its mean error only (the covariance is
                          np.cov's);
* raw sums numpy          float64 ``sum x`` and ``sum x x^T`` per batch, then
                          ``(S - n m m^T) / (n - 1)`` (torchmetrics' and StyleGAN's form);
* raw sums torch          the same in torch float64 (``features.t().mm(features)``), as
                          torchmetrics writes it (when torch is installed);
* gausskl fit (CLI)       with --cli PATH: ``gausskl fit --x x.npy -o stats.npz`` as a child
                          process, the features saved to a temporary .npy first (memory-mapped
                          by the command; the time includes reading them and the process).

Error: max |cov - ref| / max |ref| against the reference ``np.cov`` of the features shifted by
their first row in float64 (a difference of two float32 values is exact in float64, and the
shifted data has no large mean to cancel). Rows/s = N / time.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import tempfile
import time

import sys

if __name__ == "__main__" and "--threads" in sys.argv:
    _t = sys.argv[sys.argv.index("--threads") + 1]
    if _t != "0":
        os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = _t

import numpy as np  # noqa: E402

import gausskl as gk  # noqa: E402

THREADS = 0


def features(n, d, seed=0):
    rng = np.random.default_rng(seed)
    mix = (rng.normal(size=(d, d)) / np.sqrt(d) + np.eye(d)).astype(np.float32)
    centre = (1e3 * (1 + 0.01 * rng.normal(size=d))).astype(np.float32)
    x = np.empty((n, d), dtype=np.float32)
    for k in range(0, n, 4096):
        z = rng.standard_normal(size=(min(4096, n - k), d), dtype=np.float32)
        x[k:k + len(z)] = centre + 0.1 * (z @ mix)
    return x


def gk_fit(x, batch):
    g = gk.fit_gaussian(x, threads=THREADS)
    return g.mean, g.scale


def gk_acc(x, batch):
    acc = gk.MomentAccumulator(x.shape[1], threads=THREADS)
    for k in range(0, len(x), batch):
        acc.update(x[k:k + batch])
    return acc.mean, acc.covariance()


def np_cov(x, batch):
    return np.mean(x, axis=0, dtype=np.float64), np.cov(x, rowvar=False)


def np_mean32(x, batch):
    return np.mean(x, axis=0), None


def raw_numpy(x, batch):
    d = x.shape[1]
    s, ss = np.zeros(d), np.zeros((d, d))
    for k in range(0, len(x), batch):
        b = x[k:k + batch].astype(np.float64)
        s += b.sum(axis=0)
        ss += b.T @ b
    n = len(x)
    m = s / n
    return m, (ss - n * np.outer(m, m)) / (n - 1)


def raw_torch(x, batch):
    import torch

    d = x.shape[1]
    s = torch.zeros(d, dtype=torch.float64)
    ss = torch.zeros(d, d, dtype=torch.float64)
    t = torch.from_numpy(x)
    for k in range(0, len(x), batch):
        b = t[k:k + batch].double()
        s += b.sum(dim=0)
        ss += b.t().mm(b)
    n = len(x)
    m = s / n
    return m.numpy(), ((ss - n * torch.outer(m, m)) / (n - 1)).numpy()


def cli_fit(path, folder):
    def run(x, batch):
        out = os.path.join(folder, "stats.npz")
        subprocess.run([path, "fit", "--x", os.path.join(folder, "x.npy"), "-o", out,
                        "--quiet", "--threads", str(THREADS)], check=True)
        with np.load(out) as f:
            return f["mean"], f["covariance"]
    return run


METHODS = [("gausskl fit_gaussian", gk_fit), ("gausskl MomentAccumulator", gk_acc),
           ("np.cov", np_cov), ("np.mean float32", np_mean32), ("raw sums, numpy float64", raw_numpy),
           ("raw sums, torch float64", raw_torch)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50000)
    ap.add_argument("--d", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cli", help="the gausskl command, to time `gausskl fit` too")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    global THREADS
    THREADS = args.threads
    try:
        import torch
        if args.threads:
            torch.set_num_threads(args.threads)
        methods = list(METHODS)
    except ImportError:
        methods = METHODS[:-1]
    x = features(args.n, args.d)
    folder = tempfile.mkdtemp(prefix="bench-fit-")
    if args.cli:
        np.save(os.path.join(folder, "x.npy"), x)
        methods.append(("gausskl fit (CLI, .npy)", cli_fit(args.cli, folder)))
    shifted = x.astype(np.float64) - x[0].astype(np.float64)
    ref = np.cov(shifted, rowvar=False)
    ref_mean = shifted.mean(axis=0) + x[0].astype(np.float64)
    del shifted
    scale = np.max(np.abs(ref))
    times = {name: [] for name, _ in methods}
    errors = {}
    load = os.getloadavg()[0]
    for _ in range(args.repeats):
        for name, f in methods:
            t0 = time.perf_counter()
            mean, cov = f(x, args.batch)
            times[name].append(time.perf_counter() - t0)
            errors[name] = (float(np.max(np.abs(cov - ref)) / scale) if cov is not None
                            else float("nan"),
                            float(np.max(np.abs(mean - ref_mean)) / np.max(np.abs(ref_mean))))
    best = {name: min(ts) for name, ts in times.items()}
    base = best["np.cov"]
    print(f"N = {args.n}, D = {args.d}, float32 features of mean 1e3 and spread 0.1, batches of "
          f"{args.batch} rows; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, threads {args.threads or 'all'}, load {load:.2f} before; min of {args.repeats} rounds in "
          f"turns, gausskl {gk.__version__}, numpy {np.__version__}\n")
    print("| method | time | rows/s | np.cov time / time | covariance error | mean error |")
    print("|---|---|---|---|---|---|")
    for name, _ in methods:
        t = best[name]
        ce, me = errors[name]
        print(f"| {name} | {t:.2f} s | {args.n / t:,.0f} | {base / t:.2f}x | {ce:.1e} | "
              f"{me:.1e} |")
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    os.rmdir(folder)


if __name__ == "__main__":
    main()
