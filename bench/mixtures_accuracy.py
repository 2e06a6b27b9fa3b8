"""The accuracy of the mixture KL methods (docs/mixtures.md's tables): each method's error
against a reference KL, and the width of the guaranteed bounds.

References: adaptive quadrature (scipy) in one dimension; in D = 8, gausskl's own Monte Carlo
with 10^7 samples (its standard error is in the table: errors below it are not resolved).
Mixtures: C = 4 and K = 6 diagonal components, means N(0, 2^2 I) per coordinate, standard
deviations uniform in [0.3, 2], Dirichlet(1) weights.

    python bench/mixtures_accuracy.py [--pairs N] [--samples S]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import integrate
from scipy.stats import norm

import gausskl as gk

METHODS = ("variational", "product", "matched", "unscented")


def random_mixture(rng, c, d):
    mu = rng.normal(size=(c, d)) * 2
    sd = rng.uniform(0.3, 2.0, (c, d))
    w = rng.dirichlet(np.ones(c))
    return gk.GaussianMixture(gk.DiagGaussian(mu, std=sd), weights=w), (mu, sd, w)


def quadrature_kl(fp, gp):
    def dens(x, p):
        mu, sd, w = p
        return float((w * norm.pdf(x, mu[:, 0], sd[:, 0])).sum())

    def integrand(x):
        a, b = dens(x, fp), dens(x, gp)
        return 0.0 if a == 0 else a * (math.log(a) - math.log(b))

    pts = sorted(np.concatenate([fp[0][:, 0], gp[0][:, 0]]))
    return integrate.quad(integrand, pts[0] - 40, pts[-1] + 40, points=pts, limit=400,
                          epsabs=1e-13, epsrel=1e-11)[0]


def run(pairs: int, samples: int):
    rows = {}
    for d in (1, 8):
        rng = np.random.default_rng(38 + d)
        errs = {m: [] for m in METHODS}
        width, rel_width, below, se_max = [], [], 0, 0.0
        for _ in range(pairs):
            f, fp = random_mixture(rng, 4, d)
            g, gp = random_mixture(rng, 6, d)
            if d == 1:
                ref, se = quadrature_kl(fp, gp), 0.0
            else:
                ref, se = (float(x) for x in gk.mixture_kl_mc(f, g, samples=samples, seed=1))
            se_max = max(se_max, se)
            for m in METHODS:
                errs[m].append(float(gk.mixture_kl(f, g, m)) - ref)
            lo, hi = (float(x) for x in gk.mixture_kl_bounds(f, g))
            width.append(hi - lo)
            rel_width.append((hi - lo) / max(ref, 1e-12))
            below += lo - 3 * se <= ref <= hi + 3 * se
        rows[d] = dict(errs=errs, width=width, rel_width=rel_width, held=below, pairs=pairs,
                       se=se_max)
    return rows


def report(rows, samples):
    out = ["| D | reference | method | mean error | mean abs. error | max abs. error |",
           "|---|---|---|---|---|---|"]
    for d, r in rows.items():
        ref = "quadrature" if d == 1 else f"Monte Carlo, {samples:.0e} samples (SE <= {r['se']:.1e})"
        for m in METHODS:
            e = np.array(r["errs"][m])
            out.append(f"| {d} | {ref} | {m} | {e.mean():+.3f} | {np.abs(e).mean():.3f} | "
                       f"{np.abs(e).max():.3f} |")
    out += ["", "| D | pairs | bounds held | mean width (nats) | median width / KL |",
            "|---|---|---|---|---|"]
    for d, r in rows.items():
        out.append(f"| {d} | {r['pairs']} | {r['held']} / {r['pairs']} | "
                   f"{np.mean(r['width']):.3f} | {np.median(r['rel_width']):.2f} |")
    return "\n".join(out)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--samples", type=int, default=10_000_000)
    a = ap.parse_args()
    print(report(run(a.pairs, a.samples), a.samples))
