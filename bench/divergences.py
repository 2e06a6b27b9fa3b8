"""The other divergences (issue 15) side by side with their peers, for bench/peers.py
(``--only divergences``; part of the full run).

Jobs (kinds), each (method, size) in its own worker process as the rest of peers.py:

* ``div_pairs``: diagonal all pairs, float32, q != p (means N(0, 1), std uniform [0.5, 2]):
  ``gk.pairwise(p, q, kind)`` for jeffreys, bhattacharyya and wasserstein2, and
  ``gk.pairwise_kl`` (KL's kernel, for the ratio), against the broadcasts users write to
  [N, M, D]: Jeffreys as the forum's ``kl_div`` both ways, Bhattacharyya's textbook form, W2 as
  the squared difference of (mu, sigma), and W2 as ``torch.cdist`` of the rows [mu, sigma],
  squared (GEMM-based, cancels).
* ``div_rows``: full covariance, row-wise, float32 covariance matrices (what POT takes):
  ``gk.divergence(kind)`` and ``gk.kl`` against POT's
  ``ot.gaussian.bures_wasserstein_distance(..., paired=True)`` (NumPy and torch backends; it
  returns the distance, squared here), torch.distributions' MultivariateNormal KL both ways
  (Jeffreys) and the Cholesky form of Bhattacharyya in torch.
* ``div_fullpairs``: full covariance all pairs, W2: ``gk.pairwise`` against POT's
  ``bures_wasserstein_distance(..., paired=False)`` (which builds [N, M, D, D]).
* ``div_acc`` / ``div_accrow``: errors on the adversarial set (diagonal as peers.py's accuracy
  job; full: below) against float64 NumPy references in stable forms written here (not
  gausskl's), themselves checked against mpmath at 40 digits on a sample (``reference:*``).

``peers`` is the bench/peers.py module (its timing, memory and formatting helpers).
"""

from __future__ import annotations

import math

JOB_KINDS = ("div_pairs", "div_rows", "div_fullpairs", "div_acc", "div_accrow")

METHODS = {
    "div_pairs": ["gausskl:kl", "gausskl:jeffreys", "forum2:jeffreys", "gausskl:bhattacharyya",
                  "torch:bhattacharyya", "gausskl:wasserstein2", "torch:wasserstein2",
                  "cdist:wasserstein2"],
    "div_rows": ["gausskl:kl", "gausskl:jeffreys", "td_mvn2:jeffreys", "gausskl:bhattacharyya",
                 "torch:bhattacharyya", "gausskl:wasserstein2", "pot_numpy:wasserstein2",
                 "pot_torch:wasserstein2"],
    "div_fullpairs": ["gausskl:kl", "gausskl:wasserstein2", "pot_numpy:wasserstein2",
                      "pot_torch:wasserstein2"],
    "div_acc": ["reference:jeffreys", "gausskl:jeffreys", "forum2:jeffreys",
                "reference:bhattacharyya", "gausskl:bhattacharyya", "torch:bhattacharyya",
                "reference:hellinger", "gausskl:hellinger", "torch:hellinger",
                "reference:wasserstein2", "gausskl:wasserstein2", "torch:wasserstein2",
                "cdist:wasserstein2"],
    "div_accrow": ["reference:jeffreys", "gausskl:jeffreys", "td_mvn2:jeffreys",
                   "reference:bhattacharyya", "gausskl:bhattacharyya", "torch:bhattacharyya",
                   "reference:wasserstein2", "gausskl:wasserstein2", "pot_numpy:wasserstein2",
                   "pot_torch:wasserstein2"],
}

LABEL = {
    "gausskl:kl": "gausskl pairwise_kl (KL's kernel)",
    "forum2:jeffreys": "forum kl_div both ways, broadcast",
    "torch:bhattacharyya": "torch broadcast, textbook form",
    "torch:hellinger": "1 − exp(−torch broadcast)",
    "torch:wasserstein2": "torch broadcast",
    "cdist:wasserstein2": "torch.cdist([μ, σ])²",
    "td_mvn2:jeffreys": "td MultivariateNormal, KL both ways",
    "pot_numpy:wasserstein2": "POT bures_wasserstein_distance², NumPy",
    "pot_torch:wasserstein2": "POT bures_wasserstein_distance², torch",
}
ROW_LABEL = {"gausskl:kl": "gausskl kl", "torch:bhattacharyya": "torch Cholesky form"}


def label(kind, method):
    impl, div = method.split(":")
    if kind in ("div_rows", "div_accrow") and method in ROW_LABEL:
        return ROW_LABEL[method]
    if impl == "gausskl" and div != "kl":
        op = "divergence" if kind in ("div_rows", "div_accrow") else "pairwise"
        return f"gausskl {op}(kind=\"{div}\")"
    if impl == "reference":
        return "float64 reference vs mpmath (40 digits)"
    return LABEL[method]


# Before a broadcast has been measured at a size where its costs dominate (peers.predict).
STATIC_MODEL = {
    ("div_pairs", "forum2:jeffreys"): dict(mem_per_nmd=20.0, sec_per_nmd=40e-9),
    ("div_pairs", "torch:bhattacharyya"): dict(mem_per_nmd=16.0, sec_per_nmd=40e-9),
    ("div_pairs", "torch:wasserstein2"): dict(mem_per_nmd=16.0, sec_per_nmd=20e-9),
    ("div_pairs", "gausskl:bhattacharyya"): dict(mem_per_nm=8.0, sec_per_nmd=70e-9),
}
BROADCASTS = {"forum2:jeffreys", "torch:bhattacharyya", "torch:wasserstein2"}


def plan(quick: bool):
    if quick:
        sizes = {"div_pairs": [(100, 100, 64)], "div_rows": [(16, 8)],
                 "div_fullpairs": [(16, 16, 8)], "div_acc": [(64, 64, 256)],
                 "div_accrow": [(32, 8)]}
    else:
        sizes = {"div_pairs": [(100, 100, 256), (1024, 1024, 256), (4096, 4096, 64)],
                 "div_rows": [(256, 16), (256, 64)], "div_fullpairs": [(128, 128, 16)],
                 "div_acc": [(256, 256, 1024)], "div_accrow": [(256, 16)]}
    import importlib.util
    no_pot = importlib.util.find_spec("ot") is None
    return [dict(kind=k, method=m, size=s,
                 **({"skipped": "POT not installed (pip install pot; make bench-peers does)"}
                    if no_pot and m.startswith("pot") else {}))
            for k in JOB_KINDS for s in sizes[k] for m in METHODS[k]]


# ----------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------

def full_inputs(n, m, d, seed=0):
    """Means N(0, 1), covariances L L^T with L as peers.py builds factors, float32."""
    import numpy as np
    rng = np.random.default_rng(seed)

    def cov(k):
        low = np.tril(rng.standard_normal((k, d, d)), -1) * (0.5 / math.sqrt(d))
        ell = low + np.einsum("ij,ki->kij", np.eye(d), np.exp(0.3 * rng.standard_normal((k, d))))
        return symmetric(ell @ np.swapaxes(ell, -1, -2)).astype(np.float32)

    f32 = np.float32
    return (rng.standard_normal((n, d)).astype(f32), cov(n),
            rng.standard_normal((m, d)).astype(f32), cov(m))


def full_adversarial(b, d, seed=2):
    """Row-wise full-covariance adversarial set, float32: means 1e3 + N(0, 1); L = diag(s) (I +
    0.5/sqrt(d) strictly-lower N(0, 1)) with s log-uniform over 1e-1 .. 1e1 (covariance
    eigenvalues spread over ~1e4, what float32 covariance matrices can still hold positive
    definite); q_i an exact copy of p_i for i = 0 mod 4, a near-duplicate (mean and L each
    perturbed by a relative uniform(-1e-4, 1e-4)) for i = 2 mod 4, independent for odd i."""
    import numpy as np
    rng = np.random.default_rng(seed)

    def factor(k):
        s = 10.0 ** rng.uniform(-1, 1, (k, d))
        low = np.tril(rng.standard_normal((k, d, d)), -1) * (0.5 / math.sqrt(d))
        return s[:, :, None] * (low + np.eye(d))

    m1, l1 = 1e3 + rng.standard_normal((b, d)), factor(b)
    m2, l2 = 1e3 + rng.standard_normal((b, d)), factor(b)
    rows = np.arange(b)
    near = rows % 4 == 2
    m2[rows % 4 == 0], l2[rows % 4 == 0] = m1[rows % 4 == 0], l1[rows % 4 == 0]
    m2[near] = m1[near] * (1 + 1e-4 * rng.uniform(-1, 1, (near.sum(), d)))
    l2[near] = l1[near] * (1 + 1e-4 * rng.uniform(-1, 1, (near.sum(), d, d)))
    f32 = np.float32
    return (m1.astype(f32), symmetric(l1 @ np.swapaxes(l1, -1, -2)).astype(f32),
            m2.astype(f32), symmetric(l2 @ np.swapaxes(l2, -1, -2)).astype(f32))


def symmetric(c):
    import numpy as np
    return 0.5 * (c + np.swapaxes(c, -1, -2))


def build_inputs(peers, kind, size):
    """(NumPy arrays, torch tensors) of (mean_p, scale_p, mean_q, scale_q): std for the diagonal
    kinds, covariance matrices for the full ones."""
    import torch
    if kind == "div_pairs":
        arrays = peers.diag_inputs(*size)
    elif kind == "div_acc":
        arrays = peers.adversarial_inputs(*size)
    elif kind == "div_rows":
        arrays = full_inputs(size[0], size[0], size[1])
    elif kind == "div_fullpairs":
        arrays = full_inputs(*size)
    else:
        arrays = full_adversarial(*size)
    return arrays, tuple(torch.from_numpy(a) for a in arrays)


def tiny_size(kind, size):
    if kind in ("div_pairs", "div_acc"):
        return (4, 4, 8)
    return (4, size[1]) if len(size) == 2 else (4, 4, size[2])


# ----------------------------------------------------------------------------------------------
# What users write
# ----------------------------------------------------------------------------------------------

def torch_diag(peers, kind, impl, mp, sp, mq, sq):
    """[N, M] of the kind by the broadcast users write (float32 throughout)."""
    import torch
    a, b = (mp[:, None, :], sp[:, None, :]), (mq[None, :, :], sq[None, :, :])
    if impl == "forum2":  # symmetric KL as KL(p || q) + KL(q || p), the forum's function
        return peers.forum_kl_div(*a, *b) + peers.forum_kl_div(*b, *a)
    if impl == "cdist":
        return torch.cdist(torch.cat([mp, sp], -1), torch.cat([mq, sq], -1)) ** 2
    if kind == "wasserstein2":
        return ((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2).sum(-1)
    # Bhattacharyya: 1/8 d^T S^-1 d + 1/2 ln(det S / sqrt(det S_p det S_q)), S the mean variance.
    vp, vq = sp**2, sq**2
    var = 0.5 * (vp[:, None, :] + vq[None, :, :])
    logdet_p, logdet_q = torch.log(vp).sum(-1), torch.log(vq).sum(-1)
    bh = (0.125 * ((a[0] - b[0]) ** 2 / var).sum(-1)
          + 0.5 * (torch.log(var).sum(-1) - 0.5 * (logdet_p[:, None] + logdet_q[None, :])))
    return -torch.expm1(-bh) if kind == "hellinger" else bh


def torch_full_rows(kind, impl, m1, c1, m2, c2):
    """Row-wise full-covariance peers on float32 covariance tensors."""
    import torch
    if impl == "td_mvn2":
        from torch.distributions import MultivariateNormal, kl_divergence
        p = MultivariateNormal(m1, covariance_matrix=c1)
        q = MultivariateNormal(m2, covariance_matrix=c2)
        return kl_divergence(p, q) + kl_divergence(q, p)
    # Bhattacharyya by Cholesky factors, as torch users write it.
    chol = torch.linalg.cholesky

    def logdet(c):
        return 2 * torch.log(torch.diagonal(chol(c), dim1=-2, dim2=-1)).sum(-1)

    s = 0.5 * (c1 + c2)
    ls = chol(s)
    z = torch.linalg.solve_triangular(ls, (m1 - m2).unsqueeze(-1), upper=False).squeeze(-1)
    return (0.125 * (z**2).sum(-1)
            + 0.5 * (2 * torch.log(torch.diagonal(ls, dim1=-2, dim2=-1)).sum(-1)
                     - 0.5 * (logdet(c1) + logdet(c2))))


def pot_w2(impl, paired, arrays, tensors):
    """POT's Bures-Wasserstein distance, squared: POT returns W2, gausskl W2^2."""
    import ot
    m1, c1, m2, c2 = arrays if impl == "pot_numpy" else tensors
    return ot.gaussian.bures_wasserstein_distance(m1, m2, c1, c2, paired=paired) ** 2


def make_call(peers, kind, method, arrays, tensors):
    import gausskl as gk
    impl, div = method.split(":")
    mp, sp, mq, sq = tensors
    if impl == "gausskl":
        if kind in ("div_pairs", "div_acc"):
            if div == "kl":
                return lambda: gk.pairwise_kl(gk.DiagGaussian(mp, std=sp),
                                              gk.DiagGaussian(mq, std=sq))
            return lambda: gk.pairwise(gk.DiagGaussian(mp, std=sp), gk.DiagGaussian(mq, std=sq),
                                       div)

        def full():
            return gk.FullGaussian(mp, covariance=sp), gk.FullGaussian(mq, covariance=sq)
        if kind == "div_fullpairs":
            return (lambda: gk.pairwise_kl(*full())) if div == "kl" else \
                (lambda: gk.pairwise(*full(), div))
        return lambda: gk.divergence(*full(), div)
    if kind in ("div_pairs", "div_acc"):
        return lambda: torch_diag(peers, div, impl, mp, sp, mq, sq)
    if impl.startswith("pot"):
        return lambda: pot_w2(impl, kind != "div_fullpairs", arrays, tensors)
    return lambda: torch_full_rows(div, impl, mp, sp, mq, sq)


# ----------------------------------------------------------------------------------------------
# References: float64 NumPy in forms that do not cancel, independent of gausskl's
# ----------------------------------------------------------------------------------------------

def reference_diag(kind, mp, sp, mq, sq, rows=None, block=16):
    """[N, M] (or the given rows) in float64. On float32 inputs s1 - s2 is exact in float64."""
    import numpy as np
    mp, sp, mq, sq = (np.asarray(x, dtype=np.float64) for x in (mp, sp, mq, sq))
    if rows is not None:
        mp, sp = mp[rows], sp[rows]
    out = np.empty((mp.shape[0], mq.shape[0]))
    for i0 in range(0, mp.shape[0], block):
        i1 = min(i0 + block, mp.shape[0])
        d2 = (mp[i0:i1, None, :] - mq[None]) ** 2
        s1, s2 = sp[i0:i1, None, :], sq[None]
        ds = s1 - s2
        if kind == "jeffreys":  # r + 1/r - 2 = (r - 1)^2 / r, r - 1 = (s1 - s2)(s1 + s2) / s2^2
            r1 = ds * (s1 + s2) / (s2 * s2)
            t = 0.5 * (d2 * (1 / (s1 * s1) + 1 / (s2 * s2)) + r1 * r1 / ((s1 / s2) ** 2))
        elif kind in ("bhattacharyya", "hellinger"):
            # (s1^2 + s2^2) / (2 s1 s2) = 1 + (s1 - s2)^2 / (2 s1 s2)
            t = 0.25 * d2 / (s1 * s1 + s2 * s2) + 0.5 * np.log1p(ds * ds / (2 * s1 * s2))
        else:
            t = d2 + ds * ds
        out[i0:i1] = t.sum(-1)
    return -np.expm1(-out) if kind == "hellinger" else out


def reference_full(kind, m1, c1, m2, c2):
    """Row-wise in float64, from the eigenvalues mu of E = L2^-1 S1 L2^-T - I = N + N^T + N N^T,
    N = L2^-1 (L1 - L2) (small and exact relative to itself on near-duplicates), and for
    wasserstein2 ||d||^2 + ||L1 - L2 U||_F^2 with U the polar factor of L2^T L1 (from an SVD)."""
    import numpy as np
    m1, c1, m2, c2 = (np.asarray(x, dtype=np.float64) for x in (m1, c1, m2, c2))
    d = m1 - m2
    l1, l2 = np.linalg.cholesky(c1), np.linalg.cholesky(c2)

    def t(x):
        return np.swapaxes(x, -1, -2)

    def quad(ell):  # d^T (L L^T)^-1 d
        z = np.linalg.solve(ell, d[..., None])[..., 0]
        return (z * z).sum(-1)

    if kind == "wasserstein2":
        w, _, vt = np.linalg.svd(t(l2) @ l1)
        r = l1 - l2 @ (w @ vt)
        return (d * d).sum(-1) + (r * r).sum((-2, -1))
    n = np.linalg.solve(l2, l1 - l2)
    mu = np.linalg.eigvalsh(n + t(n) + n @ t(n))
    # lambda = 1 + mu from M M^T, M = L2^-1 L1 (same eigenvectors, same ascending order): exact
    # relative to itself where lambda is small and 1 + mu is not.
    m = np.linalg.solve(l2, l1)
    lam = np.linalg.eigvalsh(m @ t(m))
    if kind == "jeffreys":  # sum lambda + 1/lambda - 2 = sum mu^2 / lambda
        return 0.5 * ((mu * mu / lam).sum(-1) + quad(l1) + quad(l2))
    # ln((1 + lambda) / (2 sqrt lambda)) = log1p(s^2 / (2 (1 + s))), s = sqrt(lambda) - 1
    root = np.sqrt(lam)
    s = mu / (root + 1)
    bh = 0.125 * quad(np.linalg.cholesky(0.5 * (c1 + c2))) \
        + 0.5 * np.log1p(s * s / (2 * root)).sum(-1)
    return -np.expm1(-bh) if kind == "hellinger" else bh


def mp_diag(kind, m1, s1, m2, s2):
    """One entry by the textbook formula at 40 digits."""
    import mpmath as mp
    mp.mp.dps = 40
    total = mp.mpf(0)
    for a, x, b, y in zip(*(map(float, v) for v in (m1, s1, m2, s2))):
        a, x, b, y = mp.mpf(a), mp.mpf(x), mp.mpf(b), mp.mpf(y)
        d2, v1, v2 = (a - b) ** 2, x * x, y * y
        if kind == "jeffreys":
            total += (v1 / v2 + v2 / v1 - 2 + d2 * (1 / v1 + 1 / v2)) / 2
        elif kind in ("bhattacharyya", "hellinger"):
            v = (v1 + v2) / 2
            total += d2 / (8 * v) + mp.log(v / mp.sqrt(v1 * v2)) / 2
        else:
            total += d2 + (x - y) ** 2
    return -mp.expm1(-total) if kind == "hellinger" else total


def mp_full(kind, m1, c1, m2, c2):
    """One pair by the textbook formulas at 40 digits (W2 by the trace form, whose
    cancellation leaves ~30 digits here)."""
    import mpmath as mp
    mp.mp.dps = 40
    s1, s2 = mp.matrix(c1.astype(float).tolist()), mp.matrix(c2.astype(float).tolist())
    d = mp.matrix([mp.mpf(float(a)) - mp.mpf(float(b)) for a, b in zip(m1, m2)])
    n = s1.rows

    def tr(a):
        return mp.fsum(a[i, i] for i in range(n))

    if kind == "wasserstein2":
        e, v = mp.eigsy(s2)
        r2 = v * mp.diag([mp.sqrt(x) for x in e]) * v.T
        ev = mp.eigsy(r2 * s1 * r2, eigvals_only=True)
        return (d.T * d)[0] + tr(s1) + tr(s2) - 2 * mp.fsum(mp.sqrt(x) for x in ev)
    if kind == "jeffreys":
        i1, i2 = mp.inverse(s1), mp.inverse(s2)
        return (tr(i2 * s1) + tr(i1 * s2) - 2 * n + (d.T * (i1 + i2) * d)[0]) / 2
    s = (s1 + s2) / 2
    return ((d.T * mp.inverse(s) * d)[0] / 8
            + mp.log(mp.det(s) / mp.sqrt(mp.det(s1) * mp.det(s2))) / 2)


def sample_pairs(kind, size):
    """(i, j) entries for the mpmath check: exact copies, near-duplicates, far pairs."""
    if kind == "div_acc":
        return [(0, 0), (4, 4), (1, 1), (2, 2), (5, 5), (0, 1), (3, 7), (10, size[1] - 1)]
    return [(i, i) for i in (0, 4, 2, 6, 10, 1, 3, 5)]


def reference_check(kind, div, arrays, size):
    """max |ref64 - mpmath| / (|mpmath| + 1) and the largest relative error where mpmath != 0."""
    import numpy as np
    mp1, sp, mq, sq = arrays
    worst, worst_rel = 0.0, 0.0
    for i, j in sample_pairs(kind, size):
        if kind == "div_acc":
            got = reference_diag(div, mp1, sp, mq[j:j + 1], sq[j:j + 1], rows=[i])[0, 0]
            exact = mp_diag(div, mp1[i], sp[i], mq[j], sq[j])
        else:
            got = reference_full(div, mp1[i:i + 1], sp[i:i + 1], mq[i:i + 1], sq[i:i + 1])[0]
            exact = mp_full(div, mp1[i], sp[i], mq[i], sq[i])
        if all(np.array_equal(a[i], b[j]) for a, b in ((mp1, mq), (sp, sq))):
            exact = 0  # p = q: 0 by definition (the trace form leaves ~1e-38 at 40 digits)
        err = abs(float(got) - float(exact))
        worst = max(worst, err / (abs(float(exact)) + 1))
        if exact != 0:
            worst_rel = max(worst_rel, err / abs(float(exact)))
    return dict(err=worst, rel=worst_rel, entries=len(sample_pairs(kind, size)),
                negatives=0, nan=0, err_near=np.nan, err_far=np.nan)


def check(kind, method, arrays, out):
    """max |got - ref| / (|ref| + 1) on the benign timing data: 8 rows for all pairs."""
    import numpy as np
    div = method.split(":")[1]
    out = np.asarray(out, dtype=np.float64)
    if div == "kl" and kind == "div_pairs":
        return None  # peers.py's diag jobs check KL's kernel
    if kind == "div_pairs":
        rows = np.unique(np.linspace(0, arrays[0].shape[0] - 1, 8).astype(int))
        ref = reference_diag(div, *arrays, rows=rows)
        return float(np.max(np.abs(out[rows] - ref) / (np.abs(ref) + 1)))
    if div == "kl":
        return None
    if kind == "div_rows":
        ref = reference_full(div, *arrays)
        return float(np.max(np.abs(out - ref) / (np.abs(ref) + 1)))
    m1, c1, m2, c2 = arrays
    rows = [0, m1.shape[0] // 2, m1.shape[0] - 1]
    m = m2.shape[0]
    ref = reference_full(div, np.repeat(m1[rows], m, 0), np.repeat(c1[rows], m, 0),
                         np.tile(m2, (len(rows), 1)), np.tile(c2, (len(rows), 1, 1)))
    ref = ref.reshape(len(rows), m)
    return float(np.max(np.abs(out[rows] - ref) / (np.abs(ref) + 1)))


# ----------------------------------------------------------------------------------------------
# Worker
# ----------------------------------------------------------------------------------------------

def accuracy(kind, method, size, arrays, tensors, peers):
    import numpy as np
    impl, div = method.split(":")
    if impl == "reference":
        return reference_check(kind, div, arrays, size)
    try:
        out = peers.to_numpy(make_call(peers, kind, method, arrays, tensors)())
    except Exception as e:  # a peer failing on these data is a result, not a bench error
        if impl == "gausskl":
            raise
        return dict(failed=f"{type(e).__name__}: {str(e)[:80]}")
    out = out.astype(np.float64)
    if kind == "div_acc":
        ref = reference_diag(div, *arrays)
        n = min(size[0], size[1])
        i = np.arange(n)
        exact, near = i[i % 4 == 0], i[i % 4 != 0]
        far_mask = ~np.eye(*ref.shape, dtype=bool)
        pick = {"exact": (exact, exact), "near": (near, near), "far": far_mask}
    else:
        ref = reference_full(div, *arrays)
        i = np.arange(size[0])
        pick = {"exact": i % 4 == 0, "near": i % 4 == 2, "far": i % 2 == 1}
    err = np.abs(out - ref) / (np.abs(ref) + 1)
    finite = np.where(np.isnan(err), np.inf, err)
    near_rel = np.abs(out[pick["near"]] - ref[pick["near"]]) / np.abs(ref[pick["near"]])
    return dict(err=float(finite.max()), err_near=float(finite[pick["near"]].max()),
                err_far=float(finite[pick["far"]].max()),
                rel_near=float(np.where(np.isnan(near_rel), np.inf, near_rel).max()),
                at_pq=float(np.nanmax(np.abs(out[pick["exact"]]))),
                negatives=int((out < 0).sum()), nan=int(np.isnan(out).sum()))


def worker_job(job, quick, peers):
    kind, method, size = job["kind"], job["method"], tuple(job["size"])
    res = dict(job)
    arrays, tensors = build_inputs(peers, kind, size)
    if kind in ("div_acc", "div_accrow"):
        res.update(accuracy(kind, method, size, arrays, tensors, peers))
        return res, None
    tiny_arrays, tiny = build_inputs(peers, kind, tiny_size(kind, size))
    warm = make_call(peers, kind, method, tiny_arrays, tiny)
    import time
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < (0.05 if quick else 0.2):
        warm()
    del tiny, warm, tiny_arrays
    mem = peers.PeakMemory()
    out, times, reps = peers.run_timed(make_call(peers, kind, method, arrays, tensors), quick)
    res.update(time=min(times), times=times, reps=reps, mem=mem.extra(), mem_method=mem.method)
    got = peers.to_numpy(out)
    return res, (lambda: check(kind, method, arrays, got))


# ----------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------

def time_table(results, kind, head, peers):
    idx = peers.index(results)
    sizes = sorted({tuple(r["size"]) for r in results if r["kind"] == kind},
                   key=lambda s: math.prod(s))
    kl_what = "KL's kernel" if kind == "div_pairs" else "gk.kl" if kind == "div_rows" else \
        "pairwise_kl"
    lines = [f"| {head} | kind | method | time (min) | reps | peak extra memory "
             f"| gausskl speed-up | gausskl / {kl_what} | check err |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for s in sizes:
        kl = idx.get((kind, "gausskl:kl", s), {})
        for m in METHODS[kind]:
            r = idx.get((kind, m, s))
            if r is None:
                continue
            div = m.split(":")[1]
            g = idx.get((kind, f"gausskl:{div}", s), {})
            ok = "time" in r
            speedup = (peers.fmt_ratio(r["time"] / g["time"])
                       if ok and "time" in g and not m.startswith("gausskl") else "")
            vs_kl = (f"{r['time'] / kl['time']:.3g}×" if ok and "time" in kl
                     and m.startswith("gausskl") and div != "kl" else "")
            lines.append(f"| {', '.join(map(str, s))} | {div} | {label(kind, m)} | "
                         f"{peers.cell_time(r)} | {r.get('reps', '-')} | "
                         f"{peers.fmt_mem(r.get('mem')) if ok else '-'} | {speedup} | {vs_kl} | "
                         f"{peers.fmt_check(r)} |")
    return "\n".join(lines)


def acc_table(results, kind, head):
    lines = [f"| {head} | kind | method | max err | near-duplicates | far pairs "
             "| near-duplicates, relative | largest value at p = q | negatives | NaN |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]

    def e(x):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1e}"

    for r in results:
        if r["kind"] != kind:
            continue
        s, div = ", ".join(map(str, r["size"])), r["method"].split(":")[1]
        what = label(kind, r["method"])
        if r["method"].startswith("reference"):
            what += f", {r.get('entries', '?')} entries"
        if "err" not in r:
            why = ("skipped: " + r["skipped"] if "skipped" in r
                   else "failed: " + (r.get("failed") or r.get("error", "?")))
            lines.append(f"| {s} | {div} | {what} | {why} | | | | | | |")
            continue
        if r["method"].startswith("reference"):
            lines.append(f"| {s} | {div} | {what} | {e(r['err'])} | | | {e(r['rel'])} "
                         "(sampled) | | | |")
            continue
        lines.append(f"| {s} | {div} | {what} | {e(r['err'])} | {e(r['err_near'])} | "
                     f"{e(r['err_far'])} | {e(r['rel_near'])} | {r['at_pq']:.2g} | "
                     f"{r['negatives']} | {r['nan']} |")
    return "\n".join(lines)


def report(results, peers):
    return "\n".join([
        "#### Diagonal all pairs, float32 (q ≠ p; means N(0, 1), std uniform [0.5, 2])", "",
        time_table(results, "div_pairs", "N, M, D", peers), "",
        "#### Full covariance, row-wise (float32 covariance matrices)", "",
        time_table(results, "div_rows", "batch, D", peers), "",
        "#### Full covariance, all pairs (float32 covariance matrices)", "",
        time_table(results, "div_fullpairs", "N, M, D", peers), "",
        "#### Errors on the adversarial set (float32 inputs), "
        "`|got − ref| / (|ref| + 1)`", "",
        "Diagonal (peers.py's set: means 1e3 + N(0, 1), std log-uniform 1e-2 … 1e2, q_j a "
        "near-duplicate of p_j, 1e-4 relative, every fourth an exact copy):", "",
        acc_table(results, "div_acc", "N, M, D"), "",
        "Full covariance, row-wise (`full_adversarial` in bench/divergences.py):", "",
        acc_table(results, "div_accrow", "batch, D"),
    ])
