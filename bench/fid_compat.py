"""docs/frechet.md's compatibility table: gausskl's Fréchet distance against pytorch-fid's sqrtm
form and torchmetrics' eigvals form (bench/fid.py holds their lines), and all three against
mpmath at 40 digits on the same (rounded) inputs, on statistics where the formulas agree and
where they do not (float32, N < D, ill-conditioned).

    .venv/bin/python bench/fid_compat.py
"""

from __future__ import annotations

import time

import mpmath
import numpy as np
import torch

import gausskl as gk
from fid import eigvals_form, sqrtm_form

D = 48


def mp_frechet(m1, s1, m2, s2) -> float:
    mpmath.mp.dps = 40
    A = s1 if isinstance(s1, mpmath.matrix) else mpmath.matrix(s1.tolist())
    B = s2 if isinstance(s2, mpmath.matrix) else mpmath.matrix(s2.tolist())

    def sqrt_psd(X):
        E, Q = mpmath.eigsy(X)
        return Q * mpmath.diag([mpmath.sqrt(max(e, 0)) for e in E]) * Q.T

    r = sqrt_psd(A)
    c = sqrt_psd(r * B * r)
    tr = sum(A[i, i] + B[i, i] - 2 * c[i, i] for i in range(len(m1)))
    return float(sum((mpmath.mpf(float(a)) - mpmath.mpf(float(b))) ** 2
                     for a, b in zip(m1, m2)) + tr)


def sample_stats(rng, n, d, scale=None):
    x = rng.normal(size=(n, d))
    if scale is not None:
        x = x * scale
    return x.mean(0), np.cov(x, rowvar=False)


def mp_cov(x):
    """The sample covariance (n - 1) of the float64 rows x in mpmath: exactly of rank n - 1 when
    n <= D, as the user means it (np.cov's rounded matrix has tiny eigenvalues of either sign)."""
    mpmath.mp.dps = 40
    n, d = x.shape
    X = mpmath.matrix(x.tolist())
    m = [sum(X[i, j] for i in range(n)) / n for j in range(d)]
    return mpmath.matrix([[sum((X[k, i] - m[i]) * (X[k, j] - m[j]) for k in range(n)) / (n - 1)
                           for j in range(d)] for i in range(d)])


def cases():
    rng = np.random.default_rng(36)
    # Well-conditioned: two sample covariances of 2000 rows each (FID-like, near each other).
    m1, s1 = sample_stats(rng, 2000, D)
    m2, s2 = sample_stats(rng, 2000, D)
    yield "well-conditioned (N = 2000, float64)", m1, s1, m2, s2, np.float64, None
    yield "the same statistics in float32", m1, s1, m2, s2, np.float32, None
    # Fewer samples than dimensions: rank 29 and 39; the reference from the samples themselves.
    x1, x2 = rng.normal(size=(30, D)), rng.normal(size=(40, D))
    exact = mp_frechet(x1.mean(0), mp_cov(x1), x2.mean(0), mp_cov(x2))
    yield ("N < D (N = 30 and 40, singular; reference from the samples)", x1.mean(0),
           np.cov(x1, rowvar=False), x2.mean(0), np.cov(x2, rowvar=False), np.float64, exact)
    # Ill-conditioned: feature scales over 6 decades (covariance eigenvalues 1e-12 .. 1).
    scale = np.logspace(-6, 0, D)
    m1, s1 = sample_stats(rng, 4000, D, scale)
    m2, s2 = sample_stats(rng, 4000, D, scale)
    yield "ill-conditioned (eigenvalues 1e-12 .. 1)", m1, s1, m2, s2, np.float64, None


def run():
    rows = []
    for name, m1, s1, m2, s2, dtype, exact in cases():
        a = [np.asarray(x, dtype) for x in (m1, s1, m2, s2)]
        if exact is None:  # the exact value of the inputs as given
            exact = mp_frechet(*[x.astype(np.float64) for x in a])
        got = {}
        for method, f in (
                ("gausskl", lambda: float(gk.frechet_distance(
                    gk.FullGaussian(a[0], covariance=a[1]), gk.FullGaussian(a[2], covariance=a[3])))),
                ("sqrtm", lambda: float(sqrtm_form(*a))),
                ("eigvals", lambda: float(eigvals_form(*[torch.from_numpy(x) for x in a])))):
            try:
                t = time.perf_counter()
                got[method] = (f(), time.perf_counter() - t)
            except Exception as e:  # noqa: BLE001 (a peer's error is a result here)
                got[method] = (f"{type(e).__name__}: {e}"[:60], None)
        rows.append((name, exact, got))
    return rows


def table(rows) -> str:
    out = ["| statistics (D = 48) | mpmath (40 digits) | gausskl | sqrtm form (pytorch-fid) | "
           "eigvals form (torchmetrics) |", "|---|---|---|---|---|"]
    for name, exact, got in rows:
        cells = []
        for m in ("gausskl", "sqrtm", "eigvals"):
            v, _ = got[m]
            cells.append(v if isinstance(v, str) else f"{v:.10g} (err {abs(v - exact):.1e})")
        out.append(f"| {name} | {exact:.10g} | " + " | ".join(cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    print(table(run()))
