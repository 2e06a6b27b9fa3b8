"""A soak of training steps (issue 37, item 5): every op with gradients, NumPy and torch, the
library's paths and the torch path, all families, threads 1 and 2, and a CLI run per sample, for
--minutes; the process's resident memory (psutil), open file descriptors and threads sampled every
--every seconds into a CSV, plotted (matplotlib), and the slope of each printed.

    .venv/bin/python bench/soak.py --minutes 60 --csv soak.csv --plot bench/plots/soak.png

`make bench-soak` runs it (not part of `make test`; tests/python/test_soak_bounded.py runs a few
thousand of the same steps and bounds the memory growth)."""

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import gausskl as gk

KINDS = [("kl", None), ("jeffreys", None), ("bhattacharyya", None), ("hellinger", None),
         ("renyi", 0.5), ("wasserstein2", None)]
FAMILIES = ("diag", "full", "low_rank")


def _arrays(rng, family, n, d, r=2):
    mean = rng.normal(size=(n, d))
    if family == "diag":
        return {"mean": mean, "std": rng.uniform(0.5, 2.0, size=(n, d))}
    if family == "full":
        a = rng.normal(size=(n, d, d)) / np.sqrt(d)
        return {"mean": mean, "scale_tril": np.linalg.cholesky(a @ a.transpose(0, 2, 1)
                                                               + 0.5 * np.eye(d))}
    return {"mean": mean, "cov_factor": rng.normal(size=(n, d, r)) / np.sqrt(r),
            "cov_diag": rng.uniform(0.5, 2.0, size=(n, d))}


def _gaussian(family, arrays):
    a = dict(arrays)
    mean = a.pop("mean")
    cls = {"diag": gk.DiagGaussian, "full": gk.FullGaussian, "low_rank": gk.LowRankGaussian}
    return cls[family](mean, **a)


class Steps:
    """One configuration per step, in rotation: family x framework (NumPy; torch with
    gradients, the library's path and the torch path) x threads (1, 2); each step calls kl,
    pairwise_kl, knn_kl and, for the step's kind, divergence, pairwise and knn, and backward."""

    def __init__(self, seed=0, n=24, d=6, frameworks=("numpy", "torch", "torch_path"),
                 torch_families=FAMILIES):
        self.rng = np.random.default_rng(seed)
        self.n, self.d = n, d
        self.configs = [(f, fw, t) for f in FAMILIES for fw in frameworks for t in (1, 2)
                        if fw == "numpy" or f in torch_families]
        self.count = 0
        try:
            import torch
            self.torch = torch
        except ImportError:
            self.torch = None
            self.configs = [c for c in self.configs if c[1] == "numpy"]

    def step(self):
        family, framework, threads = self.configs[self.count % len(self.configs)]
        kind, alpha = KINDS[(self.count // len(self.configs)) % len(KINDS)]
        self.count += 1
        p_arrays = _arrays(self.rng, family, self.n, self.d)
        q_arrays = _arrays(self.rng, family, self.n, self.d)
        if framework == "numpy":
            p, q = _gaussian(family, p_arrays), _gaussian(family, q_arrays)
            gk.kl(p, q, threads=threads)
            gk.pairwise_kl(p, q, threads=threads)
            gk.knn_kl(p, q, k=3, threads=threads)
            gk.divergence(p, q, kind=kind, alpha=alpha, threads=threads)
            gk.pairwise(p, None, kind=kind, alpha=alpha, threads=threads)
            gk.knn(p, q, 3, kind=kind, alpha=alpha, threads=threads)
            return
        torch = self.torch
        tp = {k: torch.tensor(v, requires_grad=True) for k, v in p_arrays.items()}
        tq = {k: torch.tensor(v, requires_grad=True) for k, v in q_arrays.items()}
        p, q = _gaussian(family, tp), _gaussian(family, tq)
        path = framework == "torch_path"
        loss = (gk.kl(p, q, threads=threads, torch_path=path).sum()
                + gk.pairwise_kl(p, q, threads=threads, torch_path=path).sum()
                + gk.knn_kl(p, q, k=3, threads=threads, torch_path=path)[1].sum())
        loss = loss + gk.divergence(p, q, kind=kind, alpha=alpha, threads=threads,
                                    torch_path=path).sum()
        loss = loss + gk.pairwise(p, None, kind=kind, alpha=alpha, threads=threads,
                                  torch_path=path).sum()
        loss = loss + gk.knn(p, q, 3, kind=kind, alpha=alpha, threads=threads,
                             torch_path=path)[1].sum()
        loss.backward()


def sample(process):
    return process.memory_info().rss / 2 ** 20, process.num_fds(), process.num_threads()


def slope_per_hour(t_seconds, values):
    """Least-squares slope of values against time, per hour (the first sample, taken before the
    caches and pools warm up, left out when there are more than two)."""
    t, v = np.asarray(t_seconds, float), np.asarray(values, float)
    if len(t) > 2:
        t, v = t[1:], v[1:]
    if len(t) < 2 or np.ptp(t) == 0:
        return 0.0
    return float(np.polyfit(t / 3600, v, 1)[0])


def cli_run(cli, workdir):
    """One `gausskl pairwise` run on a small file, as a user's script would."""
    src = os.path.join(workdir, "p.npz")
    if not os.path.exists(src):
        rng = np.random.default_rng(1)
        np.savez(src, mean=rng.normal(size=(50, 4)), std=rng.uniform(0.5, 2, size=(50, 4)))
    subprocess.run([cli, "pairwise", "--p", src, "-o", os.path.join(workdir, "out.npy")],
                   check=True, capture_output=True)


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [r["minutes"] for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(7, 7), sharex=True)
    for ax, key, label in zip(axes, ("rss_mib", "fds", "threads"),
                              ("resident memory (MiB)", "open file descriptors", "threads")):
        ax.plot(t, [r[key] for r in rows], marker=".")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("minutes")
    fig.suptitle("gausskl soak: training steps, every op with gradients")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    ap.add_argument("--csv", default="soak.csv")
    ap.add_argument("--plot", default="bench/plots/soak.png")
    ap.add_argument("--cli", default=os.path.join(os.path.dirname(sys.executable), "gausskl"),
                    help="the gausskl command run once per sample ('' to skip)")
    ap.add_argument("--rows", type=int, default=24, help="rows of p and q per step")
    ap.add_argument("--dim", type=int, default=6)
    args = ap.parse_args(argv)
    import psutil

    process = psutil.Process()
    steps = Steps(n=args.rows, d=args.dim)
    rows = []
    start = time.monotonic()
    next_sample = start
    end = start + 60 * args.minutes
    with tempfile.TemporaryDirectory() as workdir:
        while True:
            now = time.monotonic()
            if now >= next_sample or now >= end:
                if args.cli:
                    cli_run(args.cli, workdir)
                rss, fds, threads = sample(process)
                rows.append({"minutes": (now - start) / 60, "steps": steps.count,
                             "rss_mib": rss, "fds": fds, "threads": threads})
                print(f"{rows[-1]['minutes']:7.2f} min  {steps.count:8d} steps  "
                      f"RSS {rss:8.1f} MiB  fds {fds:4d}  threads {threads:3d}", flush=True)
                next_sample = max(next_sample + args.every, now)  # a long step skips none
                if now >= end:
                    break
            steps.step()
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    if args.plot:
        plot(rows, args.plot)
    secs = [60 * r["minutes"] for r in rows]
    for key, unit in (("rss_mib", "MiB"), ("fds", "fds"), ("threads", "threads")):
        print(f"slope {key}: {slope_per_hour(secs, [r[key] for r in rows]):+.3f} {unit}/hour")
    print(f"{steps.count} steps; samples in {args.csv}, plot in {args.plot}")


if __name__ == "__main__":
    main()
