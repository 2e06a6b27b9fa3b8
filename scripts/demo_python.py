"""A short Python session with gausskl: the forum's pairwise matrix in one line, a VAE prior term
with gradients, the 10 nearest Gaussians by KL, and an error as users see it."""

import time

import torch

import gausskl as gk


def show(code, value):
    print(f">>> {code}")
    print(value)


def main():
    torch.manual_seed(0)
    B, H = 1024, 256
    mu, std = torch.randn(B, H), torch.rand(B, H) + 0.5
    print(f"gausskl {gk.__version__}, torch {torch.__version__}; mu, std: [{B}, {H}] float32\n")

    start = time.perf_counter()
    kl = gk.pairwise_kl(gk.DiagGaussian(mu, std=std))
    elapsed = time.perf_counter() - start
    show("kl = gk.pairwise_kl(gk.DiagGaussian(mu, std=std))   # the forum's [B, B]",
         f"{type(kl).__name__} {tuple(kl.shape)} {kl.dtype}, {elapsed * 1e3:.1f} ms, "
         f"diagonal all 0: {bool((kl.diagonal() == 0).all())}")

    p = gk.DiagGaussian(mu[:4].clone().requires_grad_(), logvar=torch.zeros(4, H))
    show("p = gk.DiagGaussian(mu[:4].requires_grad_(), logvar=torch.zeros(4, H)); p", p)
    prior = gk.kl_standard_normal(p).sum()
    prior.backward()
    show("gk.kl_standard_normal(p).sum().backward()   # the VAE prior term",
         f"loss {prior.item():.3f}, grad of mean equals mean: "
         f"{torch.allclose(p.mean.grad, p.mean.detach())}")

    queries = gk.DiagGaussian(mu[:3], std=std[:3])
    database = gk.DiagGaussian(mu, std=std)
    idx, dist = gk.knn_kl(queries, database, k=10)
    show("idx, dist = gk.knn_kl(queries, database, k=10); idx[:, :5], dist[:, :5]",
         f"{idx[:, :5]}\n{dist[:, :5]}")

    try:
        gk.kl(gk.DiagGaussian(mu[:2], std=-std[:2]), queries)
    except ValueError as e:
        show("gk.kl(gk.DiagGaussian(mu[:2], std=-std[:2]), queries)", f"ValueError: {e}")


if __name__ == "__main__":
    main()
