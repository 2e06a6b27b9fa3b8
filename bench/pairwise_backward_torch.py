"""Torch's side of bench_pairwise_backward.cpp: seed 000's pairwise KL of one batch mu, std [B, H]
as users write it without gausskl (the GEMM expansion, float32), forward + backward of
loss = kl.sum() by autograd, and the backward alone; min over repeats. Torch only.

    python bench/pairwise_backward_torch.py [--threads 2] [--repeats 50]
"""
import argparse
import time

import torch


def kl_expansion(mu, std):
    """2 KL_ij = [v_i + mu_i^2] . lam_j - 2 mu_i . (mu lam)_j + sum(mu^2 lam)_j + log|w_j| - log|v_i| - H."""
    v = std * std
    lam = 1.0 / v
    logv = torch.log(v).sum(1)
    quad = (v + mu * mu) @ lam.T - 2.0 * (mu @ (mu * lam).T) + (mu * mu * lam).sum(1)[None, :]
    return 0.5 * (quad + logv[None, :] - logv[:, None] - mu.shape[1])


def best(fn, repeats):
    """min wall time and min CPU time of all threads (the machine is shared) over repeats."""
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for b in (100, 1024):
        h = 256
        gen = torch.Generator().manual_seed(0)
        mu = (torch.rand(b, h, generator=gen) * 4 - 2).requires_grad_()
        std = (torch.rand(b, h, generator=gen) * 1.5 + 0.5).requires_grad_()

        def step():
            mu.grad = std.grad = None
            kl_expansion(mu, std).sum().backward()

        def backward_only():
            mu.grad = std.grad = None
            loss = kl_expansion(mu, std).sum()
            t0, c0 = time.perf_counter(), time.process_time()
            loss.backward()
            return time.perf_counter() - t0, time.process_time() - c0

        for _ in range(3):
            step()
        wall, cpu = best(step, args.repeats)
        back = [backward_only() for _ in range(args.repeats)]
        print(f"B={b:5d} H={h}: torch expansion forward+backward wall {wall * 1e3:8.3f} ms "
              f"(CPU {cpu * 1e3:8.3f} ms); backward alone wall "
              f"{min(t[0] for t in back) * 1e3:8.3f} ms (CPU {min(t[1] for t in back) * 1e3:8.3f} ms)")


if __name__ == "__main__":
    main()
