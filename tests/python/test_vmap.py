"""torch.func.vmap over gausskl's operations: the values (and torch.autograd's gradients through
them) of a Python loop over the vmapped axis, for every in_dims the rules handle, and vmap of
torch.func.grad."""

import pytest

import gausskl as gk
from conftest import needs_torch

pytestmark = needs_torch


@pytest.fixture(scope="module")
def torch():
    import torch as t

    return t


@pytest.fixture
def batch(torch):
    """V = 4 independent batches of 5 diagonal Gaussians in D = 3, float64."""
    g = torch.Generator().manual_seed(7)
    mu = torch.randn(4, 5, 3, generator=g, dtype=torch.float64) * 3
    logvar = torch.randn(4, 5, 3, generator=g, dtype=torch.float64)
    return mu, logvar


def diag(mu, logvar):
    return gk.DiagGaussian(mu, logvar=logvar)


def test_kl_standard_normal(torch, batch):
    mu, logvar = batch
    got = torch.func.vmap(lambda m, v: gk.kl_standard_normal(diag(m, v)))(mu, logvar)
    want = torch.stack([gk.kl_standard_normal(diag(mu[i], logvar[i])) for i in range(4)])
    assert got.shape == (4, 5)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_kl_in_dims(torch, batch):
    mu, logvar = batch
    q = diag(mu[0, 0] + 1, logvar[0, 0] * 0.5)  # one distribution, paired with every row
    got = torch.func.vmap(lambda m: gk.kl(diag(m, logvar[:, 0]), q), in_dims=1)(mu)
    want = torch.stack([gk.kl(diag(mu[:, j], logvar[:, 0]), q) for j in range(5)])
    assert got.shape == (5, 4)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    # p fixed, q vmapped
    got = torch.func.vmap(lambda m, v: gk.kl(diag(mu[0], logvar[0]), diag(m, v)))(mu, logvar)
    want = torch.stack([gk.kl(diag(mu[0], logvar[0]), diag(mu[i], logvar[i])) for i in range(4)])
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_pairwise_kl(torch, batch):
    mu, logvar = batch
    got = torch.func.vmap(lambda m, v: gk.pairwise_kl(diag(m, v)))(mu, logvar)
    want = torch.stack([gk.pairwise_kl(diag(mu[i], logvar[i])) for i in range(4)])
    assert got.shape == (4, 5, 5)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert torch.all(torch.diagonal(got, dim1=1, dim2=2) == 0)
    # only q vmapped: out[v] = pairwise_kl(p, q_v)
    p = diag(mu[0, :2], logvar[0, :2])
    got = torch.func.vmap(lambda m, v: gk.pairwise_kl(p, diag(m, v)))(mu, logvar)
    want = torch.stack([gk.pairwise_kl(p, diag(mu[i], logvar[i])) for i in range(4)])
    assert got.shape == (4, 2, 5)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_knn_kl(torch, batch):
    mu, logvar = batch
    idx, val = torch.func.vmap(lambda m, v: gk.knn_kl(diag(m, v), k=2, exclude_self=True))(
        mu, logvar)
    assert idx.shape == val.shape == (4, 5, 2)
    for i in range(4):
        wi, wv = gk.knn_kl(diag(mu[i], logvar[i]), k=2, exclude_self=True)
        assert torch.equal(idx[i], wi)
        torch.testing.assert_close(val[i], wv, rtol=0, atol=0)


def test_autograd_through_vmap(torch, batch):
    """loss.backward() of a vmapped call: the gradients of the loop's loss."""
    mu, logvar = batch
    grads = []
    for vmapped in (True, False):
        m, v = mu.clone().requires_grad_(), logvar.clone().requires_grad_()
        if vmapped:
            out = torch.func.vmap(lambda a, b: gk.pairwise_kl(diag(a, b)))(m, v)
        else:
            out = torch.stack([gk.pairwise_kl(diag(m[i], v[i])) for i in range(4)])
        w = torch.linspace(0, 1, out.numel(), dtype=out.dtype).reshape(out.shape)
        (w * out).sum().backward()
        grads.append((m.grad, v.grad))
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-12, atol=1e-12)


def test_vmap_of_grad(torch, batch):
    """torch.func.vmap(torch.func.grad(loss)): each batch's gradients (gausskl._compile's
    _UnderGrad; every kind and op in tests/python/test_compile_kinds.py)."""
    mu, logvar = batch

    def loss(m, v):
        return gk.kl_standard_normal(diag(m, v)).sum()

    got = torch.func.vmap(torch.func.grad(loss))(mu, logvar)
    torch.testing.assert_close(got, mu, rtol=1e-12, atol=1e-12)
    # torch.func.grad alone keeps working (torch operations)
    g = torch.func.grad(loss)(mu[0], logvar[0])
    torch.testing.assert_close(g, mu[0], rtol=1e-12, atol=1e-12)


def test_errors_inside_vmap_keep_the_library_message(torch, batch):
    mu, logvar = batch
    bad = mu.clone()
    bad[2, 1, 0] = float("nan")
    with pytest.raises(ValueError, match=r"^\[kl_standard_normal\] p.mean must be finite"):
        torch.func.vmap(lambda m, v: gk.kl_standard_normal(diag(m, v)))(bad, logvar)


def test_tensors_that_outlived_their_transform(torch, batch):
    """A torch.func.grad wrapper kept past its transform (appended to a list inside the function)
    holds its tensor: gausskl reads that tensor, as torch's own operations do. A batched tensor
    kept from inside vmap is a clear error, as torch's own operations refuse it."""
    mu, logvar = batch
    leaked = []

    def keep(m):
        leaked.append(m)
        return m.sum()

    torch.func.grad(keep)(mu[0])
    w = leaked.pop()
    assert torch._C._functorch.is_functorch_wrapped_tensor(w)
    p, want = diag(w, logvar[0]), diag(mu[0], logvar[0])
    torch.testing.assert_close(gk.kl_standard_normal(p), gk.kl_standard_normal(want),
                               rtol=0, atol=0)
    torch.testing.assert_close(gk.kl(p, want), torch.zeros(5, dtype=torch.float64),
                               rtol=0, atol=0)
    torch.testing.assert_close(gk.pairwise_kl(p), gk.pairwise_kl(want), rtol=0, atol=0)
    torch.func.vmap(keep)(mu)
    with pytest.raises(RuntimeError, match=r"^\[kl_standard_normal\] a tensor escaped from "
                       r"inside torch.func.vmap after its transform exited"):
        gk.kl_standard_normal(diag(leaked.pop(), logvar[0]))
