"""The Fréchet distance (FID) at D = 512, 1024, 2048, float64, one pair, in one process timed in
turns (issue 36; ``bench/peers.py --only fid``):

* gausskl      ``gk.frechet_distance(gk.FullGaussian(m1, covariance=S1), ...)``: Cholesky, then
               the eigenvalues of the symmetric L' S2 L (src/cpu/divergence/w2_trace.hpp);
* sqrtm form   pytorch-fid's ``calculate_frechet_distance`` (also TTUR, clean-fid), its lines:
               ``covmean, _ = linalg.sqrtm(sigma1.dot(sigma2), disp=False)``, the eps retry when
               not finite, ``covmean.real``, ``diff.dot(diff) + tr(sigma1) + tr(sigma2) -
               2 tr(covmean)`` (scipy.linalg.sqrtm of the non-symmetric product);
* eigvals form torchmetrics' ``_compute_fid`` (also torch-fidelity): ``a + b - 2 *
               torch.linalg.eigvals(sigma1 @ sigma2).sqrt().real.sum()`` in torch float64;
* np eigvals   the same in NumPy, ``np.linalg.eigvals(S1 @ S2)`` (the issue's table).

Each setting of threads runs in a fresh process: the defaults (every method on all cores), and
one thread for all (OPENBLAS_NUM_THREADS=1 and friends before NumPy, SciPy and torch load; gausskl
``threads=1``). The case has a known answer: S2 = T S1 T for a symmetric
positive definite T gives W2^2 = |m1 - m2|^2 + tr((T - I) S1 (T - I)); the error column is
|got - exact| / exact. Time: the minimum over rounds (one round at D = 2048).
"""

from __future__ import annotations

import time

import numpy as np

SIZES = (512, 1024, 2048)
QUICK_SIZES = (64, 128)
METHODS = ("gausskl", "sqrtm", "np_eigvals", "eigvals")
LABEL = {"gausskl": "gausskl `frechet_distance`", "sqrtm": "sqrtm form (pytorch-fid)",
         "np_eigvals": "`np.linalg.eigvals` form", "eigvals": "torch eigvals form (torchmetrics)"}


def constructed_case(d, seed=36):
    """S1 = A A^T / d + 0.1 I, T = B B^T / d + 0.5 I, S2 = T S1 T; the exact W2^2."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    s1 = a @ a.T / d + 0.1 * np.eye(d)
    b = rng.normal(size=(d, d))
    t = b @ b.T / d + 0.5 * np.eye(d)
    s2 = t @ s1 @ t
    s2 = (s2 + s2.T) / 2
    m1 = rng.normal(size=d)
    m2 = m1 + 0.01 * rng.normal(size=d)
    e = t - np.eye(d)
    exact = float(np.sum((m1 - m2) ** 2) + np.trace(e @ s1 @ e))
    return m1, s1, m2, s2, exact


def sqrtm_form(mu1, sigma1, mu2, sigma2, eps=1e-6):
    """pytorch-fid's calculate_frechet_distance (src/pytorch_fid/fid_score.py), as it stands."""
    from scipy import linalg

    diff = mu1 - mu2
    covmean, _ = linalg.sqrtm(sigma1.dot(sigma2), disp=False)
    if not np.isfinite(covmean).all():
        offset = np.eye(sigma1.shape[0]) * eps
        covmean = linalg.sqrtm((sigma1 + offset).dot(sigma2 + offset))
    if np.iscomplexobj(covmean):
        if not np.allclose(np.diagonal(covmean).imag, 0, atol=1e-3):
            m = np.max(np.abs(covmean.imag))
            raise ValueError("Imaginary component {}".format(m))
        covmean = covmean.real
    tr_covmean = np.trace(covmean)
    return diff.dot(diff) + np.trace(sigma1) + np.trace(sigma2) - 2 * tr_covmean


def eigvals_form(mu1, sigma1, mu2, sigma2):
    """torchmetrics' _compute_fid (src/torchmetrics/image/fid.py), as it stands."""
    import torch

    a = (mu1 - mu2).square().sum(dim=-1)
    b = sigma1.trace() + sigma2.trace()
    c = torch.linalg.eigvals(sigma1 @ sigma2).sqrt().real.sum(dim=-1)
    return a + b - 2 * c


def np_eigvals_form(mu1, sigma1, mu2, sigma2):
    diff = mu1 - mu2
    c = np.sqrt(np.linalg.eigvals(sigma1 @ sigma2).astype(complex)).real.sum()
    return diff @ diff + np.trace(sigma1) + np.trace(sigma2) - 2 * c


def calls(m1, s1, m2, s2, threads=0):
    import torch

    import gausskl as gk

    p = (m1, s1)
    q = (m2, s2)
    tm = [torch.from_numpy(x) for x in (m1, s1, m2, s2)]
    return {
        "gausskl": lambda: float(gk.frechet_distance(gk.FullGaussian(p[0], covariance=p[1]),
                                                     gk.FullGaussian(q[0], covariance=q[1]),
                                                     threads=threads)),
        "sqrtm": lambda: float(sqrtm_form(m1, s1, m2, s2)),
        "np_eigvals": lambda: float(np_eigvals_form(m1, s1, m2, s2)),
        "eigvals": lambda: float(eigvals_form(*tm)),
    }


def run(quick: bool = False, threads: int = 0) -> list[dict]:
    """Rows: dict(d, method, threads, seconds, value, error), in this process."""
    if threads == 1:
        import torch

        torch.set_num_threads(1)
    warm = calls(*constructed_case(16)[:4], threads)
    for f in warm.values():
        f()
    rows = []
    for d in (QUICK_SIZES if quick else SIZES):
        m1, s1, m2, s2, exact = constructed_case(d)
        fs = calls(m1, s1, m2, s2, threads)
        best = {k: float("inf") for k in fs}
        value = {}
        rounds = 1 if d >= 2048 else 2
        for _ in range(rounds):
            for k, f in fs.items():  # in turns
                t = time.perf_counter()
                value[k] = f()
                best[k] = min(best[k], time.perf_counter() - t)
        for k in fs:
            rows.append(dict(d=d, method=k, threads=threads, seconds=best[k], value=value[k],
                             error=abs(value[k] - exact) / exact))
    return rows


ONE_THREAD = {k: "1" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def run_all(quick: bool = False) -> list[dict]:
    """Both settings of threads, each in a fresh process (this file's --worker)."""
    import json
    import os
    import subprocess
    import sys

    rows = []
    for threads in (0, 1):
        env = dict(os.environ, **(ONE_THREAD if threads == 1 else {}))
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", str(threads)]
                             + (["--quick"] if quick else []), env=env, check=True,
                             capture_output=True, text=True).stdout
        rows += json.loads(out.strip().splitlines()[-1])
    return rows


def report(rows, started, load_before, load_after, command) -> str:
    keys = sorted({(r["threads"], r["d"]) for r in rows})
    by = {(r["threads"], r["d"], r["method"]): r for r in rows}
    out = [f"FID of one pair, float64, this machine, {started} (load {load_before:.2f} before, "
           f"{load_after:.2f} after; `{command}`). Time (s) and, in brackets, "
           "|got - exact| / exact on S2 = T S1 T; then gausskl's speed-up over the faster of "
           "the sqrtm and np.linalg.eigvals forms, and over torch's eigvals.", "",
           "| threads | D | " + " | ".join(LABEL[m] for m in METHODS)
           + " | speed-up (sqrtm, np) | speed-up (torch eigvals) |",
           "|---|---|" + "---|" * (len(METHODS) + 2)]
    for th, d in keys:
        cells = [f"{by[th, d, m]['seconds']:.3g} [{by[th, d, m]['error']:.1e}]" for m in METHODS]
        own = by[th, d, "gausskl"]["seconds"]
        peer = min(by[th, d, m]["seconds"] for m in ("sqrtm", "np_eigvals"))
        out.append(f"| {'all (defaults)' if th == 0 else th} | {d} | " + " | ".join(cells)
                   + f" | {peer / own:.1f}x | {by[th, d, 'eigvals']['seconds'] / own:.1f}x |")
    return "\n".join(out)


if __name__ == "__main__":
    import datetime
    import os
    import sys

    quick = "--quick" in sys.argv
    if "--worker" in sys.argv:
        import json

        print(json.dumps(run(quick, int(sys.argv[sys.argv.index("--worker") + 1]))))
        sys.exit(0)
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    before = os.getloadavg()[0]
    rows = run_all(quick)
    print(report(rows, started, before, os.getloadavg()[0], "python bench/fid.py"))
