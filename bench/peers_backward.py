#!/usr/bin/env python3
"""PyTorch autograd on the shapes of bench_rowwise.cpp's BM_backward_* and BM_vae_*, to read the
C++ backward against in the same sitting.

    .venv/bin/python bench/peers_backward.py [--threads N]

For each case: torch's forward alone (no_grad) and forward + backward (autograd.grad of
sum_i grad_i KL_i with respect to every input, as a training step does), float32, the minimum
over repeats of one call, in microseconds:

* vae: KL(N(mu, exp(logvar)) || N(0, I)) = -1/2 sum(1 + logvar - mu^2 - exp(logvar)), the VAE
  term as users write it, B x D = 128 x 32 and 4096 x 256;
* diag: the direct formula between two std batches, 4096 x 32 and 4096 x 256;
* full: the blog post's two-triangular-solve function (seed 001's own code), B x d = 5 x 3 and
  256 x 16, gradients of all four tensors and of p's only.
"""

import argparse
import time

import torch


def best_us(f, seconds=1.0, min_repeats=20):
    f()
    best, spent, n = float("inf"), 0.0, 0
    while spent < seconds or n < min_repeats:
        t = time.perf_counter()
        f()
        dt = time.perf_counter() - t
        best, spent, n = min(best, dt), spent + dt, n + 1
    return best * 1e6


def vae_kl(mu, logvar):
    return -0.5 * (1 + logvar - mu.square() - logvar.exp()).sum(-1)


def diag_kl(mu_p, std_p, mu_q, std_q):
    vp, vq = std_p.square(), std_q.square()
    return 0.5 * ((vp + (mu_p - mu_q).square()) / vq - 1 - vp.log() + vq.log()).sum(-1)


def blog_kl(mean1, scale_tril1, mean2, scale_tril2):
    d = mean1.shape[-1]
    y = torch.linalg.solve_triangular(
        scale_tril2, (mean2 - mean1).unsqueeze(-1), upper=False).squeeze(-1)
    m = torch.linalg.solve_triangular(scale_tril2, scale_tril1, upper=False)
    return 0.5 * (y.square().sum(-1) + m.square().flatten(-2, -1).sum(-1) - 2 * (
        scale_tril1.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        - scale_tril2.diagonal(dim1=-2, dim2=-1).log().sum(-1)) - d)


def tril(b, d, gen):
    off = (torch.rand(b, d, d, generator=gen) - 0.5) * 0.6
    diag = torch.rand(b, d, generator=gen) + 0.5
    return torch.tril(off, -1) + torch.diag_embed(diag)


def case(name, fn, inputs, wrt):
    grad = torch.rand(inputs[0].shape[0]) + 0.5

    def forward():
        with torch.no_grad():
            fn(*inputs)

    def step():
        out = fn(*inputs)
        torch.autograd.grad(out, [inputs[k] for k in wrt], grad)

    print(f"{name:<34} forward {best_us(forward):9.1f} us   forward+backward {best_us(step):9.1f} us")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32")
    gen = torch.Generator().manual_seed(0)

    def rand(*shape, lo=-2.0, hi=2.0):
        return (torch.rand(*shape, generator=gen) * (hi - lo) + lo).requires_grad_()

    for b, d in ((128, 32), (4096, 256)):
        case(f"vae {b} x {d}", vae_kl, [rand(b, d), rand(b, d, lo=-3, hi=1)], [0, 1])
    for b, d in ((4096, 32), (4096, 256)):
        inputs = [rand(b, d), rand(b, d, lo=0.5, hi=2), rand(b, d), rand(b, d, lo=0.5, hi=2)]
        case(f"diag {b} x {d}", diag_kl, inputs, [0, 1, 2, 3])
    for b, d in ((5, 3), (256, 16)):
        inputs = [rand(b, d), tril(b, d, gen).requires_grad_(), rand(b, d),
                  tril(b, d, gen).requires_grad_()]
        case(f"full {b} x {d}, all gradients", blog_kl, inputs, [0, 1, 2, 3])
        case(f"full {b} x {d}, p's gradients", blog_kl, inputs, [0, 1])


if __name__ == "__main__":
    main()
