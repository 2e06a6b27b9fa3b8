"""Issue 11's VAE training step (B = 128, D = 32, float32) against the structures any
implementation could take, side by side in one process: torch's one-liner with autograd,
gausskl.kl_standard_normal, a minimal Python autograd.Function that only calls the extension's
forward and backward, an empty Function, and a C++ autograd node (autograd_node.cpp, built here
with g++ against the installed torch and build/libgausskl.a, when both are there).

    .venv/bin/python bench/vae_step/floors.py

Prints min and median of 30 x 200 steps (gradients cleared, loss summed, backward), in µs.
"""

import os
import subprocess
import sys
import time

import torch

import gausskl as gk
from gausskl import _autograd, _ext

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def build_node():
    """The C++ node's library, or None (no compiler, no libgausskl.a with -fPIC)."""
    lib = os.path.join(REPO, "build", "libgausskl.a")
    out = os.path.join(REPO, "build", "vae_step_node.so")
    if not os.path.exists(lib):
        return None
    root = os.path.dirname(torch.__file__)
    cmd = ["g++", "-O2", "-std=c++20", "-shared", "-fPIC",
           f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
           f"-I{root}/include", f"-I{root}/include/torch/csrc/api/include",
           f"-I{REPO}/include", os.path.join(HERE, "autograd_node.cpp"), "-o", out, lib,
           f"-L{root}/lib", "-ltorch_cpu", "-lc10", "-ltorch", "-lhwy", "-lpthread",
           f"-Wl,-rpath,{root}/lib"]
    if subprocess.run(cmd).returncode != 0:
        return None
    torch.ops.load_library(out)
    return torch.ops.gklp.kl_std


def main():
    torch.set_num_threads(2)
    g = torch.Generator().manual_seed(0)
    mu = torch.randn(128, 32, generator=g).requires_grad_()
    lv = (0.5 * torch.randn(128, 32, generator=g)).requires_grad_()
    code = gk.DiagGaussian(mu, logvar=lv)._spec[0]

    class Minimal(torch.autograd.Function):
        @staticmethod
        def forward(ctx, mu, lv):
            ctx.save_for_backward(mu, lv)
            return _ext.kl_standard_normal((code, mu, lv), 0, 0.0, 0, False, True)

        @staticmethod
        def backward(ctx, grad):
            mu, lv = ctx.saved_tensors
            return tuple(_ext.kl_backward((code, mu, lv), None, grad, (True, True), 0))

    class Empty(torch.autograd.Function):
        @staticmethod
        def forward(ctx, mu, lv):
            return mu.new_empty(mu.shape[0])

        @staticmethod
        def backward(ctx, grad):
            return None, None

    minimal = _autograd._C_APPLY.__get__(None, Minimal)
    empty = _autograd._C_APPLY.__get__(None, Empty)
    steps = {
        "torch one-liner": lambda: -0.5 * (1 + lv - mu**2 - lv.exp()).sum(-1),
        "gausskl.kl_standard_normal": lambda: gk.kl_standard_normal(
            gk.DiagGaussian(mu, logvar=lv)),
        "minimal Function + extension": lambda: minimal(mu, lv),
        "empty Function": lambda: empty(mu, lv),
    }
    node = build_node()
    if node is not None:
        steps["C++ autograd node + library"] = lambda: node(mu, lv)
    times = {k: [] for k in steps}
    for _ in range(30):
        for name, f in steps.items():
            t0 = time.perf_counter_ns()
            for _ in range(200):
                mu.grad = lv.grad = None
                f().sum().backward()
            times[name].append((time.perf_counter_ns() - t0) / 200 / 1e3)
    for name, v in times.items():
        v.sort()
        print(f"{name:32s} min {v[0]:7.1f} µs   median {v[len(v) // 2]:7.1f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
