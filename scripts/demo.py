#!/usr/bin/env python3
"""A tour of the gausskl command-line tool on clustered diagonal Gaussians.

    python3 scripts/demo.py --cli build/gausskl --workdir demo-data

Writes the inputs and outputs under --workdir, prints timings and a few results, and checks
them against a direct NumPy float64 computation. Exits 1 if a check fails.
"""

import argparse
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np


def diag_kl(mu_p, std_p, mu_q, std_q):
    """KL(p || q) in nats for diagonal Gaussians, textbook formula, float64, over the last axis."""
    vp, vq = std_p.astype(np.float64) ** 2, std_q.astype(np.float64) ** 2
    diff = mu_p.astype(np.float64) - mu_q
    return 0.5 * np.sum(vp / vq + diff**2 / vq - 1 - np.log(vp) + np.log(vq), axis=-1)


def logdet(L):
    """log|L L'| for a batch of Cholesky factors."""
    return 2 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)


def full_kl(mu_p, L_p, mu_q, L_q):
    """The same for full covariances given by Cholesky factors, via solves."""
    S, T = L_p @ L_p.transpose(0, 2, 1), L_q @ L_q.transpose(0, 2, 1)
    diff = (mu_q - mu_p)[..., None]
    trace = np.trace(np.linalg.solve(T, S), axis1=1, axis2=2)
    maha = (diff * np.linalg.solve(T, diff)).sum(axis=(1, 2))
    return 0.5 * (trace + maha - mu_p.shape[1] + logdet(L_q) - logdet(L_p))


def run(cli, *args):
    """Runs the CLI; returns (wall seconds, stdout). Exits if it fails."""
    cmd = [str(cli), *map(str, args)]
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"failed (exit {result.returncode}): {' '.join(cmd)}\n{result.stderr}")
    return seconds, result.stdout


def clustered(rng, n, d, clusters):
    """n diagonal Gaussians around `clusters` centres, float32; returns (mean, std, labels)."""
    centres = rng.normal(0.0, 3.0, (clusters, d))
    spread = rng.uniform(0.5, 1.5, (clusters, d))
    labels = rng.integers(0, clusters, n)
    mean = centres[labels] + rng.normal(0.0, 0.4, (n, d))
    std = spread[labels] * rng.lognormal(0.0, 0.15, (n, d))
    return mean.astype(np.float32), std.astype(np.float32), labels


def random_tril(rng, n, d):
    """n lower-triangular factors with a positive diagonal."""
    L = np.tril(rng.normal(0.0, 0.3, (n, d, d)), -1)
    L[:, range(d), range(d)] = rng.uniform(0.5, 1.5, (n, d))
    return L


def close(got, want, tol):
    """max |got - want| / (|want| + 1), and whether it is within tol."""
    err = float(np.max(np.abs(got - want) / (np.abs(want) + 1), initial=0.0))
    return err, err <= tol


def size(path):
    return f"{path.stat().st_size / 2**20:.1f} MiB"


def report(name, ok, detail, why):
    """One check: its result, then one sentence on why it matters."""
    print(f"  [{'ok' if ok else 'FAILED'}] {name}: {detail}")
    print(textwrap.fill(why, 96, initial_indent="       ", subsequent_indent="       "))
    return ok


def pairwise_and_knn(cli, work, inputs, n, d):
    """Runs both commands, prints timings; returns the matrix, knn indices and knn values."""
    pairwise_npy, knn_npz = work / "pairwise.npy", work / "knn.npz"
    t_pair, _ = run(cli, "pairwise", "--p", inputs, "-o", pairwise_npy)
    t_knn, _ = run(cli, "knn", "--p", inputs, "-k", 5, "--exclude-self", "-o", knn_npz)
    per_element = 1e9 / (n * n * d)
    print("command                                 wall time   wall ns per (i, j, d)   output")
    print(f"pairwise   ({n} x {n} matrix)         {t_pair:7.2f} s   {t_pair * per_element:18.1f}"
          f"      {size(pairwise_npy)}")
    print(f"knn -k 5 --exclude-self                 {t_knn:7.2f} s   {t_knn * per_element:18.1f}"
          f"      {size(knn_npz)}")
    print("(wall ns per (i, j, d): the wall time over N * N * D, what one pair costs per dimension,")
    print(" the whole command included: reading, checking, computing, writing)\n")
    with np.load(knn_npz) as f:
        return np.load(pairwise_npy), f["indices"], f["kl"]


def full_covariance_example(cli, work, rng):
    """Row-wise KL of 4 full-covariance pairs through `-o -`; returns (gausskl, numpy)."""
    print("\nfull covariance (scale_tril, D = 3), row-wise:")
    print("  gausskl kl --p full_p.npz --q full_q.npz -o -")
    L_p, L_q = random_tril(rng, 4, 3), random_tril(rng, 4, 3)
    mu_p, mu_q = rng.normal(0, 1, (4, 3)), rng.normal(0, 1, (4, 3))
    np.savez(work / "full_p.npz", mean=mu_p, scale_tril=L_p)
    np.savez(work / "full_q.npz", mean=mu_q, scale_tril=L_q)
    _, text = run(cli, "kl", "--p", work / "full_p.npz", "--q", work / "full_q.npz", "-o", "-")
    got = np.loadtxt(text.splitlines(), delimiter=",").ravel()
    want = full_kl(mu_p, L_p, mu_q, L_q)
    for i, (g, w) in enumerate(zip(got, want)):
        print(f"  KL(p_{i} || q_{i}) = {g:.12f}   numpy: {w:.12f}")
    return got, want


def knn_agrees(matrix, indices, values):
    """knn against each pairwise row sorted, its diagonal left out, ties to the lower index.
    Where knn picked another index, the two must be a near-tie (they may round differently)."""
    masked = matrix.astype(np.float64)
    np.fill_diagonal(masked, np.inf)
    order = np.argsort(masked, axis=1, kind="stable")[:, : indices.shape[1]]
    want = np.take_along_axis(masked, order, axis=1)
    picked = np.take_along_axis(masked, indices, axis=1)
    differ = indices != order
    _, ties_ok = close(picked[differ], want[differ], 1e-6)
    err, ok = close(values, want, 1e-6)
    return report("knn vs sorted pairwise rows", ok and ties_ok,
                  f"{differ.sum()} of {indices.size} indices differ (near-ties), "
                  f"max value error {err:.2e}",
                  "knn never holds the whole matrix, so agreeing with the sorted rows of pairwise "
                  "shows that it still finds the same neighbours in the same order.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default="build/gausskl", type=Path)
    parser.add_argument("--workdir", default="demo-data", type=Path)
    parser.add_argument("-n", type=int, default=3000, help="number of Gaussians")
    parser.add_argument("-d", type=int, default=32, help="dimension")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    work, n, d = args.workdir, args.n, args.d
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)

    mean, std, labels = clustered(rng, n, d, clusters=6)
    inputs = work / "gaussians.npz"
    np.savez(inputs, mean=mean, std=std)
    print(f"{args.cli} --version: {run(args.cli, '--version')[1].strip()}")
    print(f"input: {n} diagonal Gaussians, D = {d}, float32, 6 clusters -> {inputs}")
    print(textwrap.fill(
        f"What it computes: KL(p_i || p_j) in nats for all {n} x {n} pairs (gausskl pairwise), "
        "the 5 smallest per row leaving out j = i (gausskl knn), then row-wise KL of 4 "
        "full-covariance pairs (gausskl kl); each result is then checked against NumPy.", 96))
    print()

    matrix, indices, values = pairwise_and_knn(args.cli, work, inputs, n, d)
    print("5 nearest neighbours by KL(p_i || p_j), j != i (index:cluster  KL in nats); they come")
    print("from the row's own cluster, which is what the data was generated to show:")
    for i in (0, n // 3, 2 * n // 3):
        row = "  ".join(f"{j:4d}:{labels[j]} {v:6.3f}" for j, v in zip(indices[i], values[i]))
        print(f"  row {i:4d} (cluster {labels[i]}): {row}")

    full_got, full_want = full_covariance_example(args.cli, work, rng)

    print("\nchecks:")
    i, j = rng.integers(0, n, 200), rng.integers(0, n, 200)
    err, ok = close(matrix[i, j], diag_kl(mean[i], std[i], mean[j], std[j]), 1e-6)
    results = [
        report("pairwise vs numpy float64, 200 random pairs", ok,
               f"max |error| / (|KL| + 1) = {err:.2e} (float32 output, limit 1e-6)",
               "The matrix comes from tiled SIMD kernels; agreeing with the textbook formula, "
               "computed independently in NumPy float64, shows the speed costs no accuracy."),
        report("pairwise diagonal", np.all(np.diag(matrix) == 0), "KL(p_i || p_i) == 0 exactly",
               "KL(p || p) is 0 by definition, where the GEMM expansion people write by hand "
               "cancels badly and gives nonzero, even negative, values."),
        knn_agrees(matrix, indices, values),
    ]
    err, ok = close(full_got, full_want, 1e-10)
    results.append(report("full covariance kl vs numpy", ok,
                          f"max |error| / (|KL| + 1) = {err:.2e} (float64, limit 1e-10)",
                          "Full covariances go through Cholesky solves; agreeing with NumPy's "
                          "dense solves to 1e-10 shows no precision is lost on the way."))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
