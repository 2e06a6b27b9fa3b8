"""Issue 12's accuracy table: the library path and the torch path (CPU tensors, forced) on the
hard cases, against mpmath (tests/python/test_torch_path_exact.py has the references and
asserts the bounds). Run: .venv/bin/python bench/torch_path_accuracy.py (about a minute)."""
import sys, numpy as np, torch, mpmath, gausskl as gk
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[1] / 'tests' / 'python'))
from test_torch_path_exact import mp_kl_diag, mp_kl_tril, random_rotation, rel_err
from conftest import mp_kl_low_rank
t = torch.as_tensor
rows = []
# 1 spread means, near-dup q
mpmath.mp.dps = 40
rng = np.random.default_rng(12); n, d = 8, 6
mu = 1e4 * rng.normal(size=(n, d)); nu = mu + 1e-3 * rng.normal(size=(n, d))
sp, sq = rng.uniform(0.5, 2, (n, d)), rng.uniform(0.5, 2, (n, d))
ex = np.array([[mp_kl_diag(mu[i], sp[i]**2, nu[j], sq[j]**2) for j in range(n)] for i in range(n)])
r = [rel_err(gk.pairwise_kl(gk.DiagGaussian(t(mu), std=t(sp)), gk.DiagGaussian(t(nu), std=t(sq)), torch_path=tp), ex) for tp in (False, True)]
rows.append(("pairwise, means spread 1e4, q_i within 1e-3 of p_i (N = M = 8, D = 6)", *r))
# 2 ill-conditioned
mpmath.mp.dps = 60
rng = np.random.default_rng(3); n, d = 4, 8
covs = []
for _ in range(2 * n):
    u = random_rotation(rng, d); covs.append((u * np.logspace(0, 10, d)) @ u.T)
ls = np.linalg.cholesky(np.array(covs)); means = rng.normal(size=(2 * n, d))
ex = np.array([[mp_kl_tril(means[i], ls[i], means[n + j], ls[n + j]) for j in range(n)] for i in range(n)])
p = gk.FullGaussian(t(means[:n]), scale_tril=t(ls[:n])); q = gk.FullGaussian(t(means[n:]), scale_tril=t(ls[n:]))
rows.append(("pairwise, scale_tril both sides, eigenvalues 1..1e10 (N = M = 4, D = 8)", *[rel_err(gk.pairwise_kl(p, q, torch_path=tp), ex) for tp in (False, True)]))
# 3 low-rank p ~ q negatives
neg = {False: 0, True: 0}
for seed in range(200):
    rng = np.random.default_rng(seed)
    mean = rng.normal(size=(2, 6)); w = rng.normal(size=(2, 6, 2)); dg = rng.uniform(0.5, 2, (2, 6))
    w2 = w * (1 + 1e-8 * rng.normal(size=w.shape))
    for tp in (False, True):
        a = gk.LowRankGaussian(t(mean), cov_factor=t(w), cov_diag=t(dg)); b = gk.LowRankGaussian(t(mean), cov_factor=t(w2), cov_diag=t(dg))
        neg[tp] += int((gk.pairwise_kl(a, b, torch_path=tp) < 0).sum())
rows.append(("low rank p ~ q (1e-8), 200 seeds: negative entries", neg[False], neg[True]))
# 4 tiny low-rank
for level in (1e-8, 1e-12):
    for diag_too in (False, True):
        worst = {False: 0, True: 0}; zeros = {False: 0, True: 0}
        for seed in range(200 if level == 1e-8 and diag_too else 30):
            rng = np.random.default_rng(seed)
            mean = rng.normal(size=(1, 6)); w = rng.normal(size=(1, 6, 2)); dg = rng.uniform(0.5, 2, (1, 6))
            w2 = w * (1 + level * rng.normal(size=w.shape)); dg2 = dg * (1 + level * rng.normal(size=dg.shape)) if diag_too else dg
            ex = float(mp_kl_low_rank(mean[0], w[0], dg[0], mean[0], w2[0], dg2[0]))
            for tp in (False, True):
                got = float(gk.kl(gk.LowRankGaussian(t(mean), cov_factor=t(w), cov_diag=t(dg)), gk.LowRankGaussian(t(mean), cov_factor=t(w2), cov_diag=t(dg2)), torch_path=tp)[0])
                worst[tp] = max(worst[tp], abs(got - ex) / ex); zeros[tp] += got == 0
        rows.append((f"tiny low-rank KL, factor{' and diagonal' if diag_too else ''} perturbed {level:g}: max rel error (zeros)", f"{worst[False]:.2g} ({zeros[False]})", f"{worst[True]:.2g} ({zeros[True]})"))
print("| case | library path | torch path (CPU, forced) |\n|---|---:|---:|")
for r in rows:
    print("| " + " | ".join(x if isinstance(x, str) else (f"{x:.2g}" if isinstance(x, float) else str(x)) for x in r) + " |")
