"""torch.compile: losses calling gausskl compile with fullgraph=True (the operations are torch
custom operators there, with fake implementations and registered autograd) and give the eager
values and gradients."""

import numpy as np
import pytest

import gausskl as gk
from conftest import gaussian, make_arrays, needs_torch

pytestmark = needs_torch


@pytest.fixture(scope="module")
def torch():
    import torch as t

    return t


@pytest.fixture(autouse=True)
def fresh_compile_cache(torch):
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def leaves(torch, *arrays):
    return [torch.from_numpy(np.asarray(a, np.float32)).requires_grad_() for a in arrays]


def eager_and_compiled(torch, fn, inputs):
    """fn(*inputs) and its gradients, eager and under torch.compile(fullgraph=True)."""
    results = []
    for f in (fn, torch.compile(fn, fullgraph=True)):
        xs = [x.detach().clone().requires_grad_() for x in inputs]
        out = f(*xs)
        out.backward()
        results.append((out.detach(), [x.grad for x in xs]))
    return results


def assert_same(torch, eager, compiled):
    (v1, g1), (v2, g2) = eager, compiled
    torch.testing.assert_close(v2, v1, rtol=1e-6, atol=0)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(b, a, rtol=1e-6, atol=1e-7)


def test_vae_loss_with_kl_standard_normal(torch, rng):
    encoder = torch.nn.Linear(10, 2 * 4)

    def loss(x):
        mu, logvar = encoder(x).chunk(2, dim=-1)
        return gk.kl_standard_normal(gk.DiagGaussian(mu, logvar=logvar)).sum()

    x = leaves(torch, rng.normal(size=(16, 10)))
    eager, compiled = eager_and_compiled(torch, loss, x)
    assert_same(torch, eager, compiled)
    # The encoder's weights got the same gradients both ways too.
    by_hand = lambda x: (-0.5 * (1 + (lv := encoder(x).chunk(2, -1))[1]  # noqa: E731
                                 - lv[0] ** 2 - lv[1].exp())).sum()
    torch.testing.assert_close(eager[0], by_hand(x[0]).detach(), rtol=1e-5, atol=0)


def test_seed_000_pairwise_loss(torch, rng):
    def loss(mu, std):
        kl = gk.pairwise_kl(gk.DiagGaussian(mu, std=std))
        return (kl * kl.new_tensor(0.01)).mean()

    inputs = leaves(torch, rng.normal(size=(12, 6)), rng.uniform(0.5, 2.0, size=(12, 6)))
    assert_same(torch, *eager_and_compiled(torch, loss, inputs))


def test_learned_prior_and_batch_axes(torch, rng):
    def loss(mu, logvar, prior_mu, prior_logvar):
        p = gk.DiagGaussian(mu, logvar=logvar)
        q = gk.DiagGaussian(prior_mu, logvar=prior_logvar)
        return gk.kl(p, q).mean()

    inputs = leaves(torch, rng.normal(size=(4, 5, 3)), rng.normal(size=(4, 5, 3)),
                    rng.normal(size=3), rng.normal(size=3))
    assert_same(torch, *eager_and_compiled(torch, loss, inputs))


def test_full_covariance_and_packed_factors(torch, rng):
    d = 3
    k = d * (d + 1) // 2

    def loss(m1, e1, m2, e2):
        p = gk.FullGaussian(m1, packed_scale_tril=e1, log_diagonal=True)
        q = gk.FullGaussian(m2, packed_scale_tril=e2, log_diagonal=True)
        return gk.kl(p, q).sum()

    inputs = leaves(torch, rng.normal(size=(5, d)), 0.3 * rng.normal(size=(5, k)),
                    rng.normal(size=(5, d)), 0.3 * rng.normal(size=(5, k)))
    assert_same(torch, *eager_and_compiled(torch, loss, inputs))


def test_other_families_compile_too(torch, rng):
    a = make_arrays(rng, "low_rank", "cov_factor", 4, 3)

    def loss(mean, w, dg):
        p = gk.LowRankGaussian(mean, cov_factor=w, cov_diag=dg)
        return gk.pairwise_kl(p).sum() + gk.kl_standard_normal(p).sum()

    inputs = leaves(torch, a["mean"], a["cov_factor"], a["cov_diag"])
    assert_same(torch, *eager_and_compiled(torch, loss, inputs))


def test_knn_values_compile(torch, rng):
    def loss(mu, std):
        _, values = gk.knn_kl(gk.DiagGaussian(mu, std=std), k=3, exclude_self=True)
        return values.sum()

    inputs = leaves(torch, rng.normal(size=(10, 4)), rng.uniform(0.5, 2.0, size=(10, 4)))
    assert_same(torch, *eager_and_compiled(torch, loss, inputs))


def test_the_operators_are_registered(torch):
    for name in ("kl", "kl_backward", "pairwise_kl", "pairwise_kl_backward", "knn_kl"):
        assert hasattr(torch.ops.gausskl, name)


def test_validation_errors_reach_the_caller(torch):
    def loss(mu, std):
        return gk.kl_standard_normal(gk.DiagGaussian(mu, std=std)).sum()

    f = torch.compile(loss, fullgraph=True)
    with pytest.raises(Exception, match=r"\[kl_standard_normal\] p.scale \(std\) must be "
                                        r"positive and finite, found -1 at row 1, column 0"):
        f(torch.zeros(2, 2), torch.tensor([[1.0, 1.0], [-1.0, 1.0]]))
