"""The seeds' own cases (000-003; bench/README.md says what each is), gausskl against the code the
users have, for bench/peers.py: each case builds its inputs and gives two zero-argument
callables, theirs and gausskl's, computing the same thing (forward, or forward + backward as a
training step does it: gradients set to None, the loss summed, backward). Construction of the
gausskl batches is inside the timed call, as in a training step.

Cases and their peers:

* seed 000, pairwise KL of one batch (mu, std [B, H]), B = 100 and 1024, H = 256, float32: the
  GEMM expansion in torch as users write it (bench/peers.py torch_gemm; two matmuls, means not
  centred, inexact). For B = 1024 also the time of one float64 [B, 2H] x [2H, B] matmul, the
  work any method exact at the default tolerance needs (float32 sums cannot certify 1e-7).
* seed 001, the blog's full-covariance KL, batch 5, d = 3, float32: its two-triangular-solve
  function on scale_tril tensors (ours builds both FullGaussian), and the blog's own
  parameterization, packed factors with log diagonals, built into L by its
  form_cholesky_tril_from_elements (ours: packed_scale_tril=, log_diagonal=True).
  With gradients: batch 256, d = 16.
* seeds 002/003, the VAE's KL terms, B = 128, D = 32, float32: the prior term
  -0.5 * (1 + lv - mu^2 - exp(lv)).sum(-1) against gk.kl_standard_normal, and a learned prior
  (logvar || logvar) written as users do against gk.kl, the prior per row [B, D] or shared by
  the batch [D].
* lower bounds, timed in the same run (LOWER): for each case that misses its target, the
  bare work any implementation needs, so that the note can say whether the target is possible.
* the per-call cost: tiny row-wise calls (N = 5, D = 3; N = 8, D = 8) from NumPy and torch,
  beside the same calls from C++ (bench/bench_calls.cpp).

bench/peers.py times a case's methods (theirs, gausskl's, the floor's) in turns in one worker
process, with the C++ program run as a child once per round (time_interleaved), so that a ratio
compares times from the same minutes.
"""

from __future__ import annotations

import math

# name: (label, peer label, fwd+bwd?)
CASES = {
    "000_b100": ("seed 000: pairwise, B = 100, H = 256, forward", "GEMM expansion", False),
    "000_b100_grad": ("seed 000: pairwise, B = 100, H = 256, forward + backward",
                      "GEMM expansion, autograd", True),
    "000_b1024": ("seed 000: pairwise, B = 1024, H = 256, forward", "GEMM expansion", False),
    "000_b1024_grad": ("seed 000: pairwise, B = 1024, H = 256, forward + backward",
                       "GEMM expansion, autograd", True),
    "000_b100_grad_weighted": ("seed 000: the same, B = 100, a weighted loss sum(W * KL)",
                               "GEMM expansion, autograd", True),
    "000_b1024_grad_weighted": ("seed 000: the same, B = 1024, a weighted loss sum(W * KL)",
                                "GEMM expansion, autograd", True),
    "001_b5": ("seed 001: full covariance row-wise, batch 5, d = 3 (scale_tril; building both "
               "distributions included)", "two triangular solves", False),
    "001_b5_packed": ("seed 001: the same from the blog's packed factors (log diagonal)",
                      "form L from elements + two solves", False),
    "001_b256_grad": ("full covariance row-wise, batch 256, d = 16, forward + backward "
                      "(scale_tril)", "two triangular solves, autograd", True),
    "001_b256_packed_grad": ("the same from packed factors (log diagonal), forward + backward",
                             "form L + two solves, autograd", True),
    "vae": ("seeds 002/003: VAE prior term, B = 128, D = 32, forward", "torch one-liner", False),
    "vae_grad": ("seeds 002/003: VAE prior term, B = 128, D = 32, forward + backward",
                 "torch one-liner, autograd", True),
    "prior": ("learned prior (logvar || logvar), B = 128, D = 32, forward", "torch one-liner",
              False),
    "prior_grad": ("learned prior (logvar || logvar), B = 128, D = 32, forward + backward",
                   "torch one-liner, autograd", True),
    "prior_shared_grad": ("the same, one prior [D] shared by the batch, forward + backward",
                          "torch one-liner, autograd", True),
    "tiny_numpy": ("row-wise kl, N = 5, D = 3, NumPy (batches built in the call)", None, False),
    "tiny_numpy_built": ("row-wise kl, N = 5, D = 3, NumPy, batches built before", None, False),
    "tiny_torch_built": ("row-wise kl, N = 5, D = 3, torch, batches built before", None, False),
    "tiny8_numpy_built": ("row-wise kl, N = 8, D = 8, NumPy, batches built before", None, False),
    "tiny8_torch_built": ("row-wise kl, N = 8, D = 8, torch, batches built before", None, False),
}

# Lower bounds: case -> (what is timed, C++ benchmarks whose times add to it). The time of
# `lower` (seeds.build's third callable) plus those C++ times is the floor of the case.
LOWER = {
    "000_b100": ("one float64 [B, 512] x [512, B] matmul in torch (the work an exact method "
                 "needs)", ()),
    "000_b1024": ("one float64 [B, 512] x [512, B] matmul in torch (the work an exact method "
                  "needs)", ()),
    "000_b100_grad_weighted": (
        "float64 matmuls in torch: [B, 512] x [512, B] (forward), G [B, B] and G^T x [B, 512] "
        "(the backward's products, accumulated in double as exact gradients need)", ()),
    "000_b1024_grad_weighted": (
        "float64 matmuls in torch: [B, 512] x [512, B] (forward), G [B, B] and G^T x [B, 512] "
        "(the backward's products, accumulated in double as exact gradients need)", ()),
    "vae_grad": ("a training step through an autograd.Function that computes nothing (torch's C "
                 "apply, as gausskl calls it) + the library's share of the step from C++ (the "
                 "values with their gradients, which sum(KL) takes as they are)",
                 ("BM_kl_standard_normal_with_gradients/N:128/D:32",)),
    "prior_grad": ("a training step through an autograd.Function that computes nothing (torch's "
                   "C apply) + the library's share of the step from C++ (the values with their "
                   "gradients, which sum(KL) takes as they are)",
                   ("BM_kl_diag_with_gradients/N:128/D:32",)),
}

# The same calls from C++ (bench/bench_calls.cpp), for the per-call cost of the Python layer.
CPP = {
    "000_b100": "BM_pairwise_self/N:100/D:256/real_time",
    "000_b1024": "BM_pairwise_self/N:1024/D:256/real_time",
    "001_b5": "BM_kl_full/N:5/D:3",
    "vae": "BM_kl_standard_normal/N:128/D:32",
    "prior": "BM_kl_diag/N:128/D:32/logvar:1",
    "tiny_numpy_built": "BM_kl_diag/N:5/D:3/logvar:0",
    "tiny_torch_built": "BM_kl_diag/N:5/D:3/logvar:0",
    "tiny8_numpy_built": "BM_kl_diag/N:8/D:8/logvar:0",
    "tiny8_torch_built": "BM_kl_diag/N:8/D:8/logvar:0",
}

# Targets of issue 11, as (case, minimum speed-up of gausskl over the peer).
TARGETS = [
    ("001_b5", 3.0, "≥ 3× faster than the blog's two-solve function (building both included)"),
    ("vae", 1.5, "≥ 1.5× faster than the torch one-liner"),
    ("vae_grad", 2.0, "≥ 2× faster than its autograd"),
    ("prior", 1.5, "≥ 1.5× faster than the torch one-liner"),
    ("prior_grad", 2.0, "≥ 2× faster than its autograd"),
    ("001_b256_grad", 2.0, "≥ 2× faster than the two-solve function's autograd"),
    ("000_b100", 1.0, "faster than the GEMM expansion (default tolerance, exact)"),
    ("000_b1024", 1.0, "faster than the GEMM expansion (default tolerance, exact)"),
    ("000_b100_grad", 1.0, "no slower than the GEMM expansion's autograd"),
    ("000_b1024_grad", 1.0, "no slower than the GEMM expansion's autograd"),
    ("000_b100_grad_weighted", 1.0, "no slower than the GEMM expansion's autograd"),
    ("000_b1024_grad_weighted", 1.0, "no slower than the GEMM expansion's autograd"),
]


def two_solves(mean1, scale_tril1, mean2, scale_tril2):
    """Seed 001's two-triangular-solve function (a blog post's), verbatim but for d taken from
    the inputs."""
    import torch
    d = mean1.shape[-1]
    y = torch.linalg.solve_triangular(
        scale_tril2, (mean2 - mean1).unsqueeze(-1), upper=False).squeeze(-1)
    y2 = y.square().sum(-1)
    M = torch.linalg.solve_triangular(scale_tril2, scale_tril1, upper=False)
    M2 = M.square().flatten(-2, -1).sum(-1)
    return 0.5 * (y2 + M2 - 2 * (
        scale_tril1.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        - scale_tril2.diagonal(dim1=-2, dim2=-1).log().sum(-1)) - d)


def form_cholesky_tril_from_elements(d, scale_tril_elems):
    """Seed 001's builder of L from packed elements (a blog post's), verbatim but for the dtype."""
    import torch
    batch_size = scale_tril_elems.size(0)
    device = scale_tril_elems.device
    i, j = torch.tril_indices(d, d, device=device)
    l_mat = torch.zeros(batch_size, d, d, device=device, dtype=scale_tril_elems.dtype)
    l_mat[:, i, j] = scale_tril_elems
    l_mat_diag = l_mat.diagonal(dim1=1, dim2=2)
    l_mat_diag.copy_(l_mat_diag.exp())
    return l_mat


def torch_gemm(mu_p, std_p, mu_q, std_q):
    """2 KL = A lam^T - 2 mu (nu lam)^T + c_j - s_i - D, as a torch user writes it."""
    import torch
    var_p, var_q = std_p**2, std_q**2
    lam = 1 / var_q
    a = var_p + mu_p**2
    c = (mu_q**2 * lam).sum(-1) + torch.log(var_q).sum(-1)
    s = torch.log(var_p).sum(-1)
    d = mu_p.shape[-1]
    return 0.5 * (a @ lam.T - 2 * mu_p @ (mu_q * lam).T + c[None, :] - s[:, None] - d)


def _step(loss_fn, leaves):
    """A training step's share: gradients cleared, loss, backward."""
    def step():
        for x in leaves:
            x.grad = None
        loss_fn().backward()
    return step


def _empty_step(leaves):
    """A training step through an autograd.Function that computes nothing: [B] values out,
    uninitialised gradients back, applied through torch's C apply as gausskl applies its own
    (gausskl._autograd): the cost any kernel outside torch's own operations pays."""
    import torch

    class Empty(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *tensors):
            ctx.save_for_backward(*tensors)
            return tensors[0].new_empty(tensors[0].shape[0])

        @staticmethod
        def backward(ctx, grad):
            return tuple(torch.empty_like(t) for t in ctx.saved_tensors)

    c_apply = torch._C._FunctionBase.__dict__["apply"].__get__(None, Empty)
    return _step(lambda: c_apply(*leaves).sum(), leaves)


def _packed(rng, n, d):
    import numpy as np
    k = d * (d + 1) // 2
    e = 0.3 * rng.standard_normal((n, k))
    e[:, [r * (r + 1) // 2 + r for r in range(d)]] *= 0.5  # log diagonals in about [-0.5, 0.5]
    return e.astype(np.float32)


def build(case: str, seed: int = 0, tiny: bool = False):
    """(theirs, ours, lower_bound): zero-argument callables for the case (theirs and
    lower_bound None where there is none); tiny: small sizes, for a warm-up."""
    import numpy as np
    import torch

    import gausskl as gk

    rng = np.random.default_rng(seed)
    f32 = np.float32
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a, f32))  # noqa: E731
    grad = CASES[case][2]
    lower = None

    if case.startswith("000"):
        b = 8 if tiny else (100 if "b100" in case else 1024)
        mu, std = t(rng.standard_normal((b, 256))), t(rng.uniform(0.5, 2.0, (b, 256)))
        if grad:
            mu.requires_grad_()
            std.requires_grad_()
            # sum(KL) gives the backward a uniform upstream gradient (closed forms, O(B H));
            # a weighted loss, as a contrastive one, the general [B, B] one (GEMM-shaped).
            w = t(rng.uniform(0, 1, (b, b))) if case.endswith("weighted") else None
            loss = (lambda kl: kl.sum()) if w is None else (lambda kl: (w * kl).sum())
            theirs = _step(lambda: loss(torch_gemm(mu, std, mu, std)), [mu, std])
            ours = _step(lambda: loss(gk.pairwise_kl(gk.DiagGaussian(mu, std=std))), [mu, std])
            if w is not None:
                f64 = torch.float64
                x, y = torch.randn(b, 512, dtype=f64), torch.randn(512, b, dtype=f64)
                g, z = w.to(f64), torch.randn(b, 512, dtype=f64)

                def lower():
                    x @ y
                    g @ z
                    g.T @ z
        else:
            theirs = lambda: torch_gemm(mu, std, mu, std)  # noqa: E731
            ours = lambda: gk.pairwise_kl(gk.DiagGaussian(mu, std=std))  # noqa: E731
            x, y = torch.randn(b, 512, dtype=torch.float64), torch.randn(512, b,
                                                                         dtype=torch.float64)
            lower = lambda: x @ y  # noqa: E731
        return theirs, ours, lower

    if case.startswith("001"):
        n, d = (5, 3) if "b5" in case else (256, 16)
        if tiny:
            n = 4
        m1, m2 = t(rng.standard_normal((n, d))), t(rng.standard_normal((n, d)))
        e1, e2 = t(_packed(rng, n, d)), t(_packed(rng, n, d))
        if "packed" not in case:
            l1 = form_cholesky_tril_from_elements(d, e1)
            l2 = form_cholesky_tril_from_elements(d, e2)
            leaves = [m1, l1, m2, l2]
            if grad:
                for x in leaves:
                    x.requires_grad_()
                return (_step(lambda: two_solves(m1, l1, m2, l2).sum(), leaves),
                        _step(lambda: gk.kl(gk.FullGaussian(m1, scale_tril=l1),
                                            gk.FullGaussian(m2, scale_tril=l2)).sum(), leaves),
                        None)
            return (lambda: two_solves(m1, l1, m2, l2),
                    lambda: gk.kl(gk.FullGaussian(m1, scale_tril=l1),
                                  gk.FullGaussian(m2, scale_tril=l2)), None)

        def theirs_fn():
            return two_solves(m1, form_cholesky_tril_from_elements(d, e1), m2,
                              form_cholesky_tril_from_elements(d, e2))

        def ours_fn():
            return gk.kl(gk.FullGaussian(m1, packed_scale_tril=e1, log_diagonal=True),
                         gk.FullGaussian(m2, packed_scale_tril=e2, log_diagonal=True))

        if grad:
            leaves = [m1, e1, m2, e2]
            for x in leaves:
                x.requires_grad_()
            return (_step(lambda: theirs_fn().sum(), leaves),
                    _step(lambda: ours_fn().sum(), leaves), None)
        return theirs_fn, ours_fn, None

    if case.startswith(("vae", "prior")):
        n, d = (4, 8) if tiny else (128, 32)
        mu, lv = t(rng.standard_normal((n, d))), t(0.3 * rng.standard_normal((n, d)))
        prior = (d,) if "shared" in case else (n, d)
        mu2, lv2 = t(rng.standard_normal(prior)), t(0.3 * rng.standard_normal(prior))
        if case.startswith("vae"):
            def theirs_fn():
                return -0.5 * (1 + lv - mu**2 - lv.exp()).sum(-1)

            def ours_fn():
                return gk.kl_standard_normal(gk.DiagGaussian(mu, logvar=lv))
            leaves = [mu, lv]
        else:
            def theirs_fn():
                return 0.5 * (lv2 - lv + (lv.exp() + (mu - mu2) ** 2) / lv2.exp() - 1).sum(-1)

            def ours_fn():
                return gk.kl(gk.DiagGaussian(mu, logvar=lv), gk.DiagGaussian(mu2, logvar=lv2))
            leaves = [mu, lv, mu2, lv2]
        if grad:
            for x in leaves:
                x.requires_grad_()
            return (_step(lambda: theirs_fn().sum(), leaves),
                    _step(lambda: ours_fn().sum(), leaves), _empty_step(leaves))
        return theirs_fn, ours_fn, None

    # The per-call cost cases: gausskl alone.
    n, d = (8, 8) if case.startswith("tiny8") else (5, 3)
    m, s = rng.standard_normal((n, d)).astype(f32), rng.uniform(0.5, 2, (n, d)).astype(f32)
    m2, s2 = rng.standard_normal((n, d)).astype(f32), rng.uniform(0.5, 2, (n, d)).astype(f32)
    if "torch" in case:
        m, s, m2, s2 = (torch.from_numpy(a) for a in (m, s, m2, s2))
    if case.endswith("built"):
        p, q = gk.DiagGaussian(m, std=s), gk.DiagGaussian(m2, std=s2)
        return None, lambda: gk.kl(p, q), None
    return None, lambda: gk.kl(gk.DiagGaussian(m, std=s), gk.DiagGaussian(m2, std=s2)), None


def check(case: str) -> float | None:
    """max |ours - theirs| / (|theirs| + 1) of the forward on the case's data (float64 peers
    where the peer is inexact in float32 is not the point here: a sanity check that both
    compute the same quantity)."""
    import numpy as np
    import torch

    if case.startswith("tiny") or CASES[case][2]:
        return None
    theirs, ours, _ = build(case)
    with torch.no_grad():
        a, b = theirs(), ours()
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / (np.abs(a) + 1)))


def time_interleaved(fns: dict, budget: float, cpp=None, rounds: int = 10,
                     settle: float = 0.01) -> tuple[dict, dict, dict, dict]:
    """The minimum time per call of each callable in fns, timed in turns: `rounds` rounds, each
    giving every callable a slot of budget / rounds seconds (samples of several calls each, each
    sample at least ~0.2 ms, so that the clock's cost does not count), then running cpp() (the
    same calls from C++: a dict name -> time) when given. On a shared machine a call's time
    moves by 1.5x over seconds to minutes; timed in turns, every method sees the same phases, and
    a ratio of two minimums compares like with like. Each slot starts after `settle` seconds of
    sleep, so that thread pools spinning after the previous method's call (torch's OpenMP) have
    parked: cost ~10% of gausskl's next call at B = 1024 (bench/README.md). A callable that
    raises leaves the rotation, and its error is returned instead of its time.
    Returns (best time per call, calls made, errors, best C++ time per name)."""
    import time

    live, per_sample, errors = dict(fns), {}, {}

    def failed(name, e):
        errors[name] = f"{type(e).__name__}: {e}"
        live.pop(name, None)

    for name, fn in list(live.items()):
        one = math.inf
        try:
            for _ in range(2):  # the faster of two calls: the first may pay for first-touch memory
                t0 = time.perf_counter()
                fn()
                one = min(one, time.perf_counter() - t0)
        except Exception as e:  # noqa: BLE001  (reported in the table, the others go on)
            failed(name, e)
            continue
        per_sample[name] = max(1, min(1000, int(2e-4 / max(one, 1e-7))))
    best, calls, cpp_best = dict.fromkeys(live, math.inf), dict.fromkeys(live, 0), {}
    slot = budget / rounds
    for _ in range(rounds):
        for name, fn in list(live.items()):
            time.sleep(settle)
            k, samples, start = per_sample[name], 0, time.perf_counter()
            try:
                while samples < 2 or time.perf_counter() - start < slot:
                    t0 = time.perf_counter()
                    for _ in range(k):
                        fn()
                    best[name] = min(best[name], (time.perf_counter() - t0) / k)
                    calls[name] += k
                    samples += 1
            except Exception as e:  # noqa: BLE001
                failed(name, e)
        if cpp is not None:
            time.sleep(settle)
            for key, t in cpp().items():
                cpp_best[key] = min(cpp_best.get(key, math.inf), t)
    return ({n: t for n, t in best.items() if n not in errors}, calls, errors, cpp_best)


def cpp_names(case: str) -> list[str]:
    """The C++ benchmarks (bench/bench_calls.cpp) a case's row uses: the same call, and the
    parts of its floor."""
    return ([CPP[case]] if case in CPP else []) + list(LOWER.get(case, ("", ()))[1])
