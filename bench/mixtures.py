"""Gaussian mixtures at the users' sizes (issue 38, item 7), for bench/peers.py (``--only
mixtures``; part of the full run), or alone: ``python bench/mixtures.py [--quick]``.

Each case times gausskl and the torch broadcast its users write, in one process, in turns (the
minimum of the rounds of each), and checks that the two agree:

* ``vampprior``: B = 100 diagonal posteriors, D = 40, a VampPrior of K = 500 diagonal
  components (uniform weights), float32, the single-Gaussian upper bound ``-log sum_b pi_b
  exp(-KL(f || g_b))`` (``gk.mixture_kl(f, g, "upper_bound")``), forward and backward; the
  broadcast builds KL(f_i || g_b) over [B, K, D].
* ``gmvae``: the same with K = 10 components, D = 64, B = 64.
* ``monte carlo``: KL between two overlapping mixtures of 8 diagonal components in D = 8 (means
  N(0, 0.3^2)), to a standard
  error of 1e-3: ``gk.mixture_kl_mc`` against the estimator users write with
  torch.distributions (``MixtureSameFamily.sample``, the mean of ``log_prob`` differences).
  Each method's sample count is its own: a pilot run of 20,000 samples gives its standard
  deviation per sample; then each is timed at the count that reaches 1e-3.
* ``speech``: all pairs of N GMMs of 16 diagonal components, D = 39, float64, the variational
  KL (Hershey & Olsen 2007), forward only; the broadcast forms the [N, N, 16, 16, D] terms in
  row blocks of 8 mixtures (1.3 GB at N = 200).
"""

from __future__ import annotations

import math
import time

import numpy as np


def _torch():
    import torch

    return torch


def diag_kl_broadcast(mu1, lv1, mu2, lv2):
    """KL(N(mu1, e^lv1) || N(mu2, e^lv2)) over broadcast axes, summed over the last (what a
    VAE's code writes)."""
    return 0.5 * ((lv1 - lv2).exp() + (mu1 - mu2) ** 2 / lv2.exp() - 1 + lv2 - lv1).sum(-1)


def prior_case(B, D, K, rounds):
    torch, gk = _torch(), __import__("gausskl")
    g = torch.Generator().manual_seed(38)
    mu = torch.randn(B, D, generator=g).requires_grad_()
    lv = (0.3 * torch.randn(B, D, generator=g)).requires_grad_()
    pm = torch.randn(K, D, generator=g).requires_grad_()
    plv = (0.3 * torch.randn(K, D, generator=g)).requires_grad_()
    w = torch.full((K,), 1.0 / K)

    def ours():
        f = gk.DiagGaussian(mu, logvar=lv)
        prior = gk.GaussianMixture(gk.DiagGaussian(pm, logvar=plv), weights=w)
        return gk.mixture_kl(f, prior, "upper_bound")

    def broadcast():
        kl = diag_kl_broadcast(mu[:, None], lv[:, None], pm[None], plv[None])
        return -torch.logsumexp(w.log() - kl, -1)

    return _timed({"gausskl": ours, "torch broadcast": broadcast}, rounds, backward=True,
                  params=(mu, lv, pm, plv))


def speech_case(N, rounds, C=16, D=39):
    torch, gk = _torch(), __import__("gausskl")
    rng = np.random.default_rng(39)
    mu = torch.tensor(rng.normal(size=(N, C, D)))
    lv = torch.tensor(0.3 * rng.normal(size=(N, C, D)))
    w = torch.tensor(rng.dirichlet(np.ones(C), size=N))

    def ours():
        f = gk.GaussianMixture(_with_axis(gk, mu, lv, 1), weights=w[:, None])
        h = gk.GaussianMixture(_with_axis(gk, mu, lv, 0), weights=w[None])
        return gk.mixture_kl(f, h, "variational")

    def broadcast():
        lw = w.log()
        own = diag_kl_broadcast(mu[:, :, None], lv[:, :, None], mu[:, None], lv[:, None])
        num = torch.logsumexp(lw[:, None, :] - own, -1)  # [N, C]
        out = torch.empty(N, N, dtype=mu.dtype)
        for i0 in range(0, N, 8):
            i1 = min(N, i0 + 8)
            kl = diag_kl_broadcast(mu[i0:i1, None, :, None], lv[i0:i1, None, :, None],
                                   mu[None, :, None], lv[None, :, None])  # [b, N, C, K]
            den = torch.logsumexp(lw[None, :, None, :] - kl, -1)
            out[i0:i1] = (w[i0:i1, None] * (num[i0:i1, None] - den)).sum(-1)
        return out

    return _timed({"gausskl": ours, "torch broadcast": broadcast}, rounds, backward=False)


def mc_case(rounds, target=1e-3, C=8, D=8):
    torch, gk = _torch(), __import__("gausskl")
    rng = np.random.default_rng(40)
    # Overlapping mixtures (means N(0, 0.3^2)): a log-ratio spread that 1e-3 needs about 10^5
    # samples for, as a training loss's Monte Carlo term would.
    arrays = [(0.3 * rng.normal(size=(C, D)), rng.uniform(0.5, 1.5, (C, D)),
               rng.dirichlet(np.ones(C))) for _ in range(2)]
    f, g = (gk.GaussianMixture(gk.DiagGaussian(m, std=s), weights=w) for m, s, w in arrays)
    td = torch.distributions
    tf, tg = (td.MixtureSameFamily(td.Categorical(torch.tensor(w)),
                                   td.Independent(td.Normal(torch.tensor(m), torch.tensor(s)), 1))
              for m, s, w in arrays)

    def torch_estimate(n):
        torch.manual_seed(0)
        x = tf.sample((n,))
        r = tf.log_prob(x) - tg.log_prob(x)
        return r.mean(), r.std() / math.sqrt(n)

    pilot = 20_000
    n_ours = math.ceil((float(gk.mixture_kl_mc(f, g, samples=pilot)[1]) / target) ** 2 * pilot)
    n_torch = math.ceil((float(torch_estimate(pilot)[1]) / target) ** 2 * pilot)
    r = _timed({"gausskl": lambda: torch.as_tensor(gk.mixture_kl_mc(f, g, samples=n_ours)[0]),
                "torch broadcast": lambda: torch_estimate(n_torch)[0]}, rounds, backward=False)
    r["samples"] = (n_ours, n_torch)
    return r


def _with_axis(gk, mu, lv, axis):
    """The N mixtures' components with a unit batch axis inserted (N, 1, C) or (1, N, C)."""
    return gk.DiagGaussian(mu.unsqueeze(axis), logvar=lv.unsqueeze(axis))


def _timed(calls: dict, rounds: int, backward: bool, params=()):
    best = {name: math.inf for name in calls}
    outs = {}
    for _ in range(rounds):
        for name, fn in calls.items():
            for p in params:
                p.grad = None
            t = time.perf_counter()
            out = fn()
            if backward:
                out.sum().backward()
            best[name] = min(best[name], time.perf_counter() - t)
            outs[name] = out.detach().double()
    ref = outs["torch broadcast"]
    err = float(((outs["gausskl"] - ref).abs() / (ref.abs() + 1)).max())
    return {"times": best, "agree": err}


CASES = [
    ("vampprior", "B = 100, D = 40, K = 500, float32, upper bound, forward + backward",
     lambda q: prior_case(100 if not q else 10, 40, 500 if not q else 50, 7 if not q else 2)),
    ("gmvae", "B = 64, D = 64, K = 10, float32, upper bound, forward + backward",
     lambda q: prior_case(64, 64, 10, 7 if not q else 2)),
    ("monte carlo", "C = K = 8 diagonal, D = 8, float64, to a standard error of 1e-3 "
     "(each its own sample count)", lambda q: mc_case(3 if not q else 1, 1e-3 if not q else 1e-2)),
    ("speech", "N = 200 GMMs x 16 diagonal components, D = 39, float64, variational, all pairs",
     lambda q: speech_case(200 if not q else 12, 3 if not q else 1)),
]


def run_all(quick: bool = False) -> list[dict]:
    rows = []
    for name, what, fn in CASES:
        r = fn(quick)
        if "samples" in r:
            what += f"; samples: {r['samples'][0]:,} and {r['samples'][1]:,}"
        rows.append({"case": name, "what": what, **r})
    return rows


def report(rows, started, load_before, load_after, command) -> str:
    lines = [f"### Gaussian mixtures (issue 38), {started}, `{command}`", "",
             f"Load average {load_before:.1f} before, {load_after:.1f} after. One process, the "
             "methods in turns, the minimum of the rounds; `agree` is the largest |gausskl - "
             "broadcast| / (|broadcast| + 1) (for Monte Carlo, two estimates' difference: "
             "about their standard errors).", "",
             "| case | sizes | gausskl | torch broadcast | broadcast / gausskl | agree |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        t = r["times"]
        lines.append(f"| {r['case']} | {r['what']} | {t['gausskl'] * 1e3:.2f} ms | "
                     f"{t['torch broadcast'] * 1e3:.2f} ms | "
                     f"{t['torch broadcast'] / t['gausskl']:.2f}x | {r['agree']:.1e} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse
    import datetime
    import os

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    before = os.getloadavg()[0]
    rows = run_all(a.quick)
    print(report(rows, started, before, os.getloadavg()[0],
                 "bench/mixtures.py" + (" --quick" if a.quick else "")))
