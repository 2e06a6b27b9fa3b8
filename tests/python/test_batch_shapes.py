"""Batch shapes as torch.distributions users expect them (and NumPy's broadcasting likewise):
any number of batch axes, arrays of one batch broadcasting against each other, p and q
broadcasting in the row-wise operations, 0-d results for single distributions, torch's
Independent(Normal, r) for any r, and no copy where the batch is one stride away from a single
axis. The reference is the float64 row-wise reference of conftest on the arrays broadcast and
flattened by NumPy (an independent computation of the same numbers)."""

import numpy as np
import pytest

import gausskl as gk
from gausskl import _ext
from conftest import covariance, gaussian, make_arrays, needs_torch, ref_kl, ref_kl_dense


def expanded(arrays, batch):
    """Every array broadcast to batch + its event shape, then flattened to [N, ...]."""
    ranks = {"mean": 1, "std": 1, "var": 1, "logvar": 1, "precision": 1, "cov_diag": 1,
             "scale_tril": 2, "covariance": 2, "precision_matrix": 2, "cov_factor": 2}
    out = {}
    for k, v in arrays.items():
        event = v.shape[v.ndim - ranks[k]:]
        out[k] = np.broadcast_to(v, (*batch, *event)).reshape(-1, *event)
    return out


def reshaped(arrays, lead):
    """The arrays of a flat batch of N = prod(lead) with the batch axes `lead`."""
    return {k: v.reshape(*lead, *v.shape[1:]) for k, v in arrays.items()}


FAMILIES = [("diag", "logvar"), ("diag", "std"), ("full", "scale_tril"), ("full", "covariance"),
            ("low_rank", "cov_factor")]


@pytest.mark.parametrize("fam,par", FAMILIES)
def test_latents_with_two_batch_axes(rng, fam, par):
    a, b = make_arrays(rng, fam, par, 12, 3), make_arrays(rng, "diag", "var", 12, 3)
    p, q = gaussian(reshaped(a, (4, 3))), gaussian(reshaped(b, (4, 3)))
    assert p.batch_shape == (4, 3) and p.event_shape == (3,) and p.n == 12
    out = gk.kl(p, q)
    assert out.shape == (4, 3)
    np.testing.assert_allclose(out.reshape(-1), ref_kl(a, b), rtol=1e-10)
    np.testing.assert_allclose(gk.kl_standard_normal(p).reshape(-1),
                               gk.kl_standard_normal(gaussian(a)), rtol=1e-14)


def test_unbatched_inputs_give_0d_results():
    p = gk.DiagGaussian(np.zeros(3), std=np.ones(3))
    q = gk.DiagGaussian(np.ones(3), var=np.full(3, 2.0))
    assert p.batch_shape == ()
    out = gk.kl(p, q)
    assert isinstance(out, np.ndarray) and out.shape == ()
    np.testing.assert_allclose(out, 1.5 * (0.5 + 0.5 - 1 + np.log(2)), rtol=1e-14)
    assert gk.kl_standard_normal(p).shape == ()
    assert gk.pairwise_kl(p, q).shape == ()  # batch () x ()
    idx, val = gk.knn_kl(p, q, k=1)
    assert idx.shape == val.shape == (1,)


@pytest.mark.parametrize("pb,qb", [((5, 3), (3,)), ((3,), (5, 3)), ((5, 1), (1, 3)), ((2, 1, 4), (3, 1)),
                                   ((), (4,)), ((4, 2), ())])
def test_p_and_q_broadcast_like_torch(rng, pb, qb):
    d = 3
    a = make_arrays(rng, "diag", "logvar", int(np.prod(pb)), d)
    b = make_arrays(rng, "full", "scale_tril", int(np.prod(qb)), d)
    pa, qa = reshaped(a, pb), reshaped(b, qb)
    batch = np.broadcast_shapes(pb, qb)
    out = gk.kl(gaussian(pa), gaussian(qa))
    assert out.shape == batch
    want = ref_kl(expanded(pa, batch), expanded(qa, batch)).reshape(batch)
    np.testing.assert_allclose(out, want, rtol=1e-10)


def test_arrays_of_one_batch_broadcast(rng):
    # MultivariateNormal(loc [5, 3, 2], scale_tril [3, 2, 2]): batch shape [5, 3]. No single
    # stride describes the factors' batch, so the library is called per index of the first axis.
    a = make_arrays(rng, "full", "scale_tril", 3, 2)
    loc = rng.normal(size=(5, 3, 2))
    p = gk.FullGaussian(loc, scale_tril=a["scale_tril"])
    assert p.batch_shape == (5, 3)
    out = gk.kl_standard_normal(p)
    assert out.shape == (5, 3)
    flat = expanded({"mean": loc, "scale_tril": a["scale_tril"]}, (5, 3))
    np.testing.assert_allclose(out.reshape(-1), ref_kl(flat, {"mean": np.zeros((1, 2)),
                                                              "var": np.ones((1, 2))}), rtol=1e-10)
    # A [D] prior broadcast over a batch, and a scale shared by every row.
    prior = gk.DiagGaussian(np.zeros(2), logvar=np.zeros(2))
    np.testing.assert_allclose(gk.kl(p, prior), out, rtol=1e-14)
    shared = gk.DiagGaussian(loc, std=np.array([0.5, 2.0]))
    assert shared.batch_shape == (5, 3)
    want = ref_kl(expanded({"mean": loc, "std": np.array([0.5, 2.0])}, (5, 3)),
                  {"mean": np.zeros((1, 2)), "var": np.ones((1, 2))})
    np.testing.assert_allclose(gk.kl_standard_normal(shared).reshape(-1), want, rtol=1e-12)


def test_a_batch_of_latents_is_not_copied(rng):
    mean = rng.normal(size=(4, 6, 3))
    logvar = rng.normal(size=(4, 6, 3))
    p = gk.DiagGaussian(mean, logvar=logvar)
    assert _ext.addresses(p._spec) == [mean.ctypes.data, logvar.ctypes.data]
    sliced = gk.DiagGaussian(mean[:, ::2], logvar=logvar[:, ::2])  # strided: still one library call
    np.testing.assert_allclose(gk.kl_standard_normal(sliced),
                               gk.kl_standard_normal(gk.DiagGaussian(mean[:, ::2].copy(),
                                                                     logvar=logvar[:, ::2].copy())),
                               rtol=0, atol=0)


def test_pairwise_and_knn_with_batch_axes(rng):
    a = make_arrays(rng, "diag", "std", 6, 4)
    b = make_arrays(rng, "full", "covariance", 10, 4)
    p, q = gaussian(reshaped(a, (2, 3))), gaussian(reshaped(b, (5, 2)))
    out = gk.pairwise_kl(p, q)
    assert out.shape == (2, 3, 5, 2)
    flat = gk.pairwise_kl(gaussian(a), gaussian(b))
    np.testing.assert_array_equal(out.reshape(6, 10), flat)
    self_pairs = gk.pairwise_kl(p)
    assert self_pairs.shape == (2, 3, 2, 3)
    np.testing.assert_array_equal(self_pairs.reshape(6, 6), gk.pairwise_kl(gaussian(a)))
    idx, val = gk.knn_kl(p, q, k=4)
    assert idx.shape == val.shape == (2, 3, 4)
    i2, v2 = gk.knn_kl(gaussian(a), gaussian(b), k=4)
    np.testing.assert_array_equal(idx.reshape(6, 4), i2)  # indices into q's batch in C order
    np.testing.assert_array_equal(val.reshape(6, 4), v2)


def test_pairwise_q_that_no_stride_describes_is_made_contiguous(rng):
    a = make_arrays(rng, "full", "scale_tril", 3, 2)
    loc = rng.normal(size=(4, 3, 2))
    q = gk.FullGaussian(loc, scale_tril=a["scale_tril"])  # batch (4, 3), factors broadcast
    p = gk.DiagGaussian(rng.normal(size=(5, 2)), std=np.ones((5, 2)))
    out = gk.pairwise_kl(p, q)
    assert out.shape == (5, 4, 3)
    flat = expanded({"mean": loc, "scale_tril": a["scale_tril"]}, (4, 3))
    np.testing.assert_array_equal(out.reshape(5, 12), gk.pairwise_kl(p, gaussian(flat)))


def test_positions_in_errors_are_batch_indices():
    std = np.ones((2, 3, 2))
    std[1, 0, 1] = -1.0
    with pytest.raises(ValueError, match=r"^\[kl_standard_normal\] p.scale \(std\) must be "
                                         r"positive and finite, found -1 at batch index \(1, 0\), "
                                         r"element 1$") as e:
        gk.kl_standard_normal(gk.DiagGaussian(np.zeros((2, 3, 2)), std=std))
    assert e.value.batch_index == (1, 0)


def test_errors_in_a_batch_slice_name_it(rng):
    L = np.repeat(np.eye(2)[None], 3, 0)
    L[2, 1, 1] = -1.0
    p = gk.FullGaussian(np.zeros((4, 3, 2)), scale_tril=L)  # sliced per index of the first axis
    with pytest.raises(ValueError, match=r"^\[kl_standard_normal\] p.scale \(scale_tril\) must "
                                         r"have a positive diagonal .* at batch index \(0, 2\), "
                                         r"row 1, column 1$"):
        gk.kl_standard_normal(p)
    # A later slice: the batch index counts from the whole batch, not the slice.
    mean = np.zeros((4, 3, 2))
    mean[2, 1, 0] = np.nan
    p = gk.FullGaussian(mean, scale_tril=np.repeat(np.eye(2)[None], 3, 0))
    with pytest.raises(ValueError, match=r"^\[kl_standard_normal\] p.mean must be finite, found "
                                         r"nan at batch index \(2, 1\), element 0$") as e:
        gk.kl_standard_normal(p)
    assert e.value.batch_index == (2, 1)


def test_batches_that_do_not_broadcast():
    p = gk.DiagGaussian(np.zeros((2, 3, 2)), std=np.ones((2, 3, 2)))
    q = gk.DiagGaussian(np.zeros((4, 2)), std=np.ones((4, 2)))
    with pytest.raises(ValueError, match=r"^\[kl\] p and q have batch shapes \(2, 3\) and "
                                         r"\(4,\), which do not broadcast$"):
        gk.kl(p, q)
    with pytest.raises(ValueError, match=r"^\[DiagGaussian\] std must be \[N, D\] like mean, "
                                         r"found shape \(3, 2\) \(mean has shape \(2, 2\); the "
                                         r"batch axes \(3,\) and \(2,\) do not broadcast\)$"):
        gk.DiagGaussian(np.zeros((2, 2)), std=np.ones((3, 2)))


def test_empty_batches(rng):
    p = gk.DiagGaussian(np.zeros((0, 3)), std=np.ones((0, 3)))
    assert gk.kl(p, p).shape == (0,)
    assert gk.kl_standard_normal(gk.DiagGaussian(np.zeros((2, 0, 3)),
                                                 std=np.ones((2, 0, 3)))).shape == (2, 0)
    q = gk.DiagGaussian(rng.normal(size=(3, 3)), std=np.ones((3, 3)))
    assert gk.pairwise_kl(p, q).shape == (0, 3)
    assert gk.pairwise_kl(q, p).shape == (3, 0)


# -- torch -------------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("r", [0, 1, 2, 3])
def test_independent_normal_over_any_number_of_axes(rng, r):
    import torch

    D = torch.distributions
    shape = (2, 3, 4, 2)
    p = D.Independent(D.Normal(torch.from_numpy(rng.normal(size=shape)),
                               torch.from_numpy(rng.uniform(0.5, 2, size=shape))), r)
    q = D.Independent(D.Normal(torch.from_numpy(rng.normal(size=shape)),
                               torch.from_numpy(rng.uniform(0.5, 2, size=shape))), r)
    want = D.kl_divergence(p, q)
    got = gk.kl(p, q)
    assert got.shape == want.shape == shape[:len(shape) - r]
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-14)


@needs_torch
def test_multivariate_normal_batches_like_torch(rng):
    import torch

    D = torch.distributions
    L = torch.from_numpy(np.linalg.cholesky(covariance(make_arrays(rng, "full", "covariance",
                                                                   3, 2))))
    loc = torch.from_numpy(rng.normal(size=(5, 3, 2)))
    p = D.MultivariateNormal(loc, scale_tril=L)
    q = D.MultivariateNormal(torch.zeros(2, dtype=torch.float64),
                             covariance_matrix=torch.eye(2, dtype=torch.float64) * 2)
    want = D.kl_divergence(p, q)
    got = gk.kl(p, q)
    assert got.shape == want.shape == (5, 3)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-14)
    # A 0-d result for one distribution each, as torch gives.
    one = D.MultivariateNormal(torch.zeros(2, dtype=torch.float64), scale_tril=L[0])
    assert gk.kl(one, q).shape == D.kl_divergence(one, q).shape == ()


@needs_torch
@needs_torch
@pytest.mark.parametrize("fam,par", FAMILIES)
@pytest.mark.parametrize("torch_path", [None, True])
def test_single_distributions_on_every_path(rng, fam, par, torch_path):
    """Unbatched p and q (batch ()), tensors with and without gradients, the library and the
    torch path: 0-d results of pairwise and the row-wise divergences, values of the conftest
    reference, gradients of torch.distributions' KL. (The torch path and the full-covariance
    gradients reshaped with an empty size list and failed with a TypeError.)"""
    import torch

    a, b = make_arrays(rng, fam, par, 1, 3), make_arrays(rng, fam, par, 1, 3)
    want = ref_kl(a, b)[0]
    for grad in (False, True):
        ta = {k: torch.from_numpy(v[0].copy()).requires_grad_(grad) for k, v in a.items()}
        tb = {k: torch.from_numpy(v[0].copy()) for k, v in b.items()}
        p, q = gaussian(ta), gaussian(tb)
        assert p.batch_shape == ()
        outs = [gk.pairwise_kl(p, q, torch_path=torch_path), gk.kl(p, q, torch_path=torch_path),
                gk.pairwise(p, q, kind="kl", torch_path=torch_path),
                gk.divergence(p, q, kind="kl", torch_path=torch_path)]
        for out in outs:
            assert out.shape == ()
            np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-10)
        assert gk.pairwise(p, q, kind="jeffreys", torch_path=torch_path).shape == ()
        for idx, val in (gk.knn_kl(p, q, k=1, torch_path=torch_path),
                         gk.knn(p, q, k=1, kind="jeffreys", torch_path=torch_path)):
            assert idx.shape == val.shape == (1,) and int(idx[0]) == 0
        if grad:
            sum(outs).backward()
            # d KL / d mean_p = T^-1 (mean_p - mean_q), T q's covariance; four calls above.
            cq = covariance(b)[0]
            g = 4 * np.linalg.solve(cq, a["mean"][0] - b["mean"][0])
            np.testing.assert_allclose(ta["mean"].grad.numpy(), g, rtol=1e-9, atol=1e-12)
            assert all(t.grad is not None and t.grad.shape == t.shape for t in ta.values())


@pytest.mark.parametrize("param", ["covariance", "precision_matrix"])
def test_symmetric_matrices_get_symmetric_gradients(rng, param):
    import torch

    a = make_arrays(rng, "full", param, 3, 3)
    m = torch.from_numpy(a[param]).requires_grad_()
    p = gk.FullGaussian(torch.from_numpy(a["mean"]), **{param: m})
    q = gk.DiagGaussian(torch.zeros(3, 3, dtype=torch.float64), var=torch.ones(3, 3,
                                                                            dtype=torch.float64))
    gk.kl(p, q).sum().backward()
    torch.testing.assert_close(m.grad, m.grad.transpose(-1, -2), rtol=0, atol=0)
    # torch's own gradient for the same distribution.
    kw = {"covariance_matrix" if param == "covariance" else param: m}
    m.grad = None
    mvn = torch.distributions.MultivariateNormal(torch.from_numpy(a["mean"]), **kw)
    torch.distributions.kl_divergence(
        mvn, torch.distributions.MultivariateNormal(torch.zeros(3, dtype=torch.float64),
                                                    torch.eye(3, dtype=torch.float64))
    ).sum().backward()
    want = m.grad.clone()
    m.grad = None
    gk.kl(p, q).sum().backward()
    torch.testing.assert_close(m.grad, want, rtol=1e-9, atol=1e-12)


@needs_torch
def test_torch_batches_and_gradients_through_broadcasting(rng):
    import torch

    mu = torch.from_numpy(rng.normal(size=(4, 6, 3))).requires_grad_()
    logvar = torch.from_numpy(rng.normal(size=(4, 6, 3))).requires_grad_()
    prior_mu = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    prior_lv = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    p = gk.DiagGaussian(mu, logvar=logvar)
    q = gk.DiagGaussian(prior_mu, logvar=prior_lv)
    out = gk.kl(p, q)
    assert out.shape == (4, 6)
    out.sum().backward()
    by_hand = 0.5 * (prior_lv - logvar + (logvar.exp() + (mu - prior_mu) ** 2)
                     / prior_lv.exp() - 1).sum(-1)
    grads = torch.autograd.grad(by_hand.sum(), [mu, logvar, prior_mu, prior_lv])
    for got, want in zip([mu.grad, logvar.grad, prior_mu.grad, prior_lv.grad], grads):
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


@needs_torch
def test_torch_path_takes_batch_shapes(rng, monkeypatch):
    import torch

    from conftest import force_torch_path

    a = make_arrays(rng, "diag", "logvar", 12, 3)
    b = make_arrays(rng, "full", "scale_tril", 3, 3)
    p = gaussian({k: torch.from_numpy(v.reshape(4, 3, *v.shape[1:])) for k, v in a.items()})
    q = gaussian({k: torch.from_numpy(v) for k, v in b.items()})
    want = gk.kl(p, q), gk.pairwise_kl(p, q), gk.knn_kl(p, q, k=2)
    force_torch_path(monkeypatch)
    got = gk.kl(p, q), gk.pairwise_kl(p, q), gk.knn_kl(p, q, k=2)
    torch.testing.assert_close(got[0], want[0], rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(got[1], want[1], rtol=1e-9, atol=1e-10)
    assert torch.equal(got[2][0], want[2][0])
