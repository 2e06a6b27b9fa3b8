"""torch.distributions' conventions exactly: a Normal is univariate, gk.kl returns what
torch.distributions.kl_divergence returns (shape, dtype, value) over a generated matrix of
shapes, parameterizations and dtypes; Python scalars do not promote; size-1 events broadcast
where torch broadcasts them; positions in messages are batch indices; the jitter hint once.

The reference for pairs torch has no KL for (Independent against MultivariateNormal, ...) is
torch's own MultivariateNormal KL of the same distributions written as dense covariances."""

import itertools

import numpy as np
import pytest

import gausskl as gk
from conftest import needs_torch

pytestmark = needs_torch

torch = pytest.importorskip("torch")
D = torch.distributions

DTYPES = (torch.float32, torch.float64)


def _spd(batch, d, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(*batch, d, d, generator=g, dtype=torch.float64) / d ** 0.5
    return (a @ a.transpose(-1, -2) + 0.5 * torch.eye(d, dtype=torch.float64)).to(dtype)


def _randn(shape, dtype, seed, scale=1.0, positive=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64) * scale
    return (x.abs() + 0.5 if positive else x).to(dtype)


def distributions(dtype, seed):
    """(name, distribution) of every kind torch has, batch shapes (), [4], [2, 4], event 3
    (a Normal's batch is its shape; its event is ())."""
    out = []
    d = 3
    for batch in ((), (4,), (2, 4)):
        s = seed + 17 * len(batch)
        loc = _randn((*batch, d), dtype, s)
        scale = _randn((*batch, d), dtype, s + 1, positive=True)
        out.append((f"Independent(Normal){batch}", D.Independent(D.Normal(loc, scale), 1)))
        out.append((f"Normal{batch + (d,)}", D.Normal(loc, scale)))
        cov = _spd(batch, d, dtype, s + 2)
        out.append((f"MVN(scale_tril){batch}",
                    D.MultivariateNormal(loc, scale_tril=torch.linalg.cholesky(cov))))
        out.append((f"MVN(covariance){batch}", D.MultivariateNormal(loc, covariance_matrix=cov)))
        out.append((f"MVN(precision){batch}",
                    D.MultivariateNormal(loc, precision_matrix=torch.linalg.inv(cov))))
        w = _randn((*batch, d, 2), dtype, s + 3, 0.5)
        out.append((f"LowRankMVN{batch}", D.LowRankMultivariateNormal(loc, w, scale)))
    # Univariate Normals with scalar parameters, and a prior as torch users write it.
    out.append(("Normal(0., 1.)", D.Normal(torch.tensor(0.0, dtype=dtype), 1.0)))
    out.append(("Normal[4, 3] scalar scale", D.Normal(_randn((4, 3), dtype, seed + 9), 1.0)))
    out.append(("Normal[3] scalar loc", D.Normal(0.0, _randn((3,), dtype, seed + 8,
                                                             positive=True))))
    out.append(("Independent(Normal[1])", D.Independent(
        D.Normal(torch.zeros(1, dtype=dtype), torch.ones(1, dtype=dtype)), 1)))
    return out


def dense(dist):
    """dist as a MultivariateNormal over its event (a Normal: event of size 1)."""
    if isinstance(dist, D.MultivariateNormal):
        return D.MultivariateNormal(dist.loc, covariance_matrix=dist.covariance_matrix)
    if isinstance(dist, D.LowRankMultivariateNormal):
        return D.MultivariateNormal(dist.loc, covariance_matrix=dist.covariance_matrix)
    if isinstance(dist, D.Independent):
        loc, scale = torch.broadcast_tensors(dist.base_dist.loc, dist.base_dist.scale)
        return D.MultivariateNormal(loc, covariance_matrix=torch.diag_embed(scale ** 2))
    loc, scale = torch.broadcast_tensors(dist.loc, dist.scale)
    return D.MultivariateNormal(loc[..., None], covariance_matrix=(scale ** 2)[..., None, None])


def reference(p, q):
    """torch's KL; where torch has none (NotImplementedError) or cannot mix the dtypes
    (RuntimeError), its MultivariateNormal KL of both written densely in float64, in the
    promoted dtype."""
    try:
        return D.kl_divergence(p, q)
    except (NotImplementedError, RuntimeError):
        dp, dq = dense(p), dense(q)
        wide = [D.MultivariateNormal(d.loc.double(), covariance_matrix=d.covariance_matrix.double())
                for d in (dp, dq)]
        return D.kl_divergence(*wide).to(result_type(p, q))


def result_type(p, q):
    """The rule: the parameters' type promotion, in which 0-d tensors do not promote."""
    return torch.result_type(p.mean, q.mean)


def _torch_dtype_artifact(p, q):
    """torch's MultivariateNormal KL of an unbatched float64 side against a batched float32 one
    is float32 (a 0-d intermediate, the unbatched side's log-determinant, does not promote),
    though Independent(Normal)'s of the same shapes is float64; gausskl promotes by the rule."""
    mv = (D.MultivariateNormal, D.LowRankMultivariateNormal)
    return isinstance(p, mv) and isinstance(q, mv) and p.mean.dtype != q.mean.dtype


def _event(dist):
    return tuple(dist.event_shape)


def _compatible(p, q):
    """Whether gausskl should accept the pair: batch shapes broadcast and events agree (equal, or
    a size-1 diagonal event against any other diagonal one)."""
    try:
        torch.broadcast_shapes(p.batch_shape, q.batch_shape)
    except RuntimeError:
        return False
    ep, eq = _event(p) or (1,), _event(q) or (1,)
    if ep == eq:
        return True
    # A univariate Normal against D > 1 is an error (torch has no KL for it either); two
    # Independent(Normal) broadcast a size-1 event, as torch's KL does.
    return (isinstance(p, D.Independent) and isinstance(q, D.Independent)
            and (ep == (1,) or eq == (1,)))


def _pairs():
    for dp, dq in itertools.product(DTYPES, DTYPES):
        ps, qs = distributions(dp, 1), distributions(dq, 2)
        for (np_, p), (nq, q) in itertools.product(ps, qs):
            yield f"{np_}|{nq}|{dp}|{dq}".replace("torch.", ""), p, q


PAIRS = list(_pairs())


def test_matrix_size():
    # The closing note's count: every pair of the generated distributions in four dtype pairs.
    assert len(PAIRS) == 4 * 22 * 22


@pytest.mark.parametrize("name,p,q", PAIRS, ids=[n for n, _, _ in PAIRS])
def test_kl_as_torch(name, p, q):
    if not _compatible(p, q):
        with pytest.raises((ValueError, RuntimeError)):
            gk.kl(p, q)
        return
    want = reference(p, q)
    got = gk.kl(p, q)
    assert got.shape == want.shape, name
    if _torch_dtype_artifact(p, q):
        assert got.dtype == result_type(p, q) == torch.float64, name
        want = want.to(got.dtype)
    assert got.dtype == want.dtype, name
    # torch computes a float32 input's terms in float32 (gausskl in double, whatever the input)
    tol = 2e-5 if torch.float32 in (p.mean.dtype, q.mean.dtype) else 1e-10
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)


# -- pairwise and knn on torch objects ----------------------------------------------------------

def test_pairwise_rows_are_the_batch():
    loc, scale = torch.randn(6, dtype=torch.float64), torch.rand(6, dtype=torch.float64) + 0.5
    got = gk.pairwise_kl(D.Normal(loc, scale))
    want = D.kl_divergence(D.Normal(loc[:, None], scale[:, None]), D.Normal(loc, scale))
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    idx, val = gk.knn_kl(D.Normal(loc, scale), k=2)
    torch.testing.assert_close(val, torch.sort(want, dim=1).values[:, :2], rtol=1e-12, atol=1e-12)
    ind = D.Independent(D.Normal(loc.reshape(2, 3), scale.reshape(2, 3)), 1)
    assert gk.pairwise_kl(ind).shape == (2, 2)


@pytest.mark.parametrize("op", ["pairwise_kl", "knn_kl", "pairwise", "knn"])
def test_pairwise_of_a_normal_with_two_batch_axes_is_ambiguous(op):
    normal = D.Normal(torch.randn(4, 3), 1.0)
    kw = {"k": 1} if op.startswith("knn") else {}
    with pytest.raises(ValueError, match=rf"^\[{op}\] p is a torch Normal of batch shape "
                                         r"\(4, 3\).*Independent\(Normal\(loc, scale\), 1\)"):
        getattr(gk, op)(normal, **kw)
    ind = D.Independent(normal, 1)
    with pytest.raises(ValueError, match=rf"^\[{op}\] q is a torch Normal"):
        getattr(gk, op)(ind, normal, **kw)


def test_univariate_against_multivariate_says_how_to_write_a_diagonal():
    p = D.Normal(torch.randn(4, 3), 1.0)
    q = D.MultivariateNormal(torch.zeros(3), torch.eye(3))
    for op in (gk.kl, lambda a, b: gk.divergence(a, b, "jeffreys")):
        with pytest.raises(ValueError, match=r"p and q have D = 1 and D = 3; D must match; p is "
                                             r"a torch Normal, univariate as in "
                                             r"torch.distributions"):
            op(p, q)


# -- promotion: Python scalars and 0-d arrays keep the arrays' precision -------------------------

SCALES = [("std", 1.5), ("var", 2.0), ("logvar", 0.25), ("precision", 0.5)]


@pytest.mark.parametrize("param,value", SCALES)
@pytest.mark.parametrize("how", ["python", "numpy0d", "torch0d"])
def test_scalars_do_not_promote(param, value, how):
    scalar = {"python": value, "numpy0d": np.array(value),
              "torch0d": torch.tensor(value, dtype=torch.float64)}[how]
    mean32 = torch.randn(4, 3)
    p = gk.DiagGaussian(mean32, **{param: scalar})
    assert p.dtype == "float32"
    out = gk.kl_standard_normal(p)
    assert out.dtype == torch.float32 and out.shape == (4,)
    full = gk.DiagGaussian(mean32, **{param: torch.full((4, 3), value)})
    torch.testing.assert_close(out, gk.kl_standard_normal(full))
    m = np.asarray(mean32.numpy())
    pn = gk.DiagGaussian(m, **{param: scalar if how != "torch0d" else value})
    assert gk.kl_standard_normal(pn).dtype == np.float32


def test_low_rank_scalar_diag_does_not_promote():
    g = gk.LowRankGaussian(torch.zeros(2, 3), cov_factor=torch.ones(2, 3, 1), cov_diag=1.0)
    assert g.dtype == "float32" and gk.kl_standard_normal(g).dtype == torch.float32


def test_dimensioned_arrays_still_promote():
    p = gk.DiagGaussian(torch.zeros(4, 3), std=torch.ones(3, dtype=torch.float64))
    assert gk.kl_standard_normal(p).dtype == torch.float64


def test_a_zero_d_scale_keeps_its_gradient():
    s = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    gk.kl_standard_normal(gk.DiagGaussian(torch.zeros(4, 3), std=s)).sum().backward()
    # d/ds of 12 * (s^2 - 1 - 2 log s) / 2 in float64 of the float32 batch
    torch.testing.assert_close(s.grad, torch.tensor(6 * (2 * 1.5 - 2 / 1.5), dtype=torch.float64),
                               rtol=1e-6, atol=1e-6)


# -- size-1 events ------------------------------------------------------------------------------

def test_scalar_prior_broadcasts():
    m = torch.randn(4, 3)
    got = gk.kl(D.Normal(m, 1.0), D.Normal(0.0, 1.0))
    torch.testing.assert_close(got, D.kl_divergence(D.Normal(m, 1.0), D.Normal(0.0, 1.0)))
    p = D.Independent(D.Normal(m, 1.0), 1)
    prior = D.Independent(D.Normal(torch.zeros(1), torch.ones(1)), 1)
    torch.testing.assert_close(gk.kl(p, prior), D.kl_divergence(p, prior))


def test_size_one_diagonal_event_broadcasts_for_gausskl_batches():
    rng = np.random.default_rng(3)
    m, s = rng.normal(size=(5, 4)), rng.uniform(0.5, 2, (5, 4))
    p = gk.DiagGaussian(m, std=s)
    one = gk.DiagGaussian(np.array([0.5]), std=np.array([2.0]))
    wide = gk.DiagGaussian(np.full(4, 0.5), std=np.full(4, 2.0))
    # float64 reference: the closed form per dimension, summed
    want = 0.5 * (((s / 2.0) ** 2 + ((m - 0.5) / 2.0) ** 2 - 1 - 2 * np.log(s / 2.0)).sum(-1))
    np.testing.assert_allclose(gk.kl(p, one), want, rtol=1e-13)
    np.testing.assert_array_equal(gk.kl(p, one), gk.kl(p, wide))
    with pytest.raises(ValueError, match=r"^\[pairwise_kl\] p and q have D = 4 and D = 1"):
        gk.pairwise_kl(p, one)  # all pairs: no torch convention to follow; D must match
    np.testing.assert_array_equal(gk.divergence(one, p, "jeffreys"),
                                  gk.divergence(wide, p, "jeffreys"))
    std1 = gk.DiagGaussian(m, std=np.array([2.0]))  # a std of shape [1] over D
    np.testing.assert_array_equal(gk.kl_standard_normal(std1),
                                  gk.kl_standard_normal(gk.DiagGaussian(m, std=np.full(4, 2.0))))


def test_full_covariance_events_do_not_broadcast():
    p = gk.FullGaussian(np.zeros((2, 3)), covariance=np.eye(3))
    q = gk.FullGaussian(np.zeros(1), covariance=np.eye(1))
    with pytest.raises(ValueError, match=r"^\[kl\] p and q have D = 3 and D = 1; D must match$"):
        gk.kl(p, q)


# -- positions as batch indices ------------------------------------------------------------------

def _nan_at(shape, where):
    m = torch.zeros(*shape, dtype=torch.float64)
    m[where] = float("nan")
    return m


@pytest.mark.parametrize("path", ["library", "torch_path", "grad"])
def test_positions_are_batch_indices(path):
    mean = _nan_at((2, 3, 4), (1, 2, 3))
    if path == "grad":
        mean.requires_grad_()
    p = gk.DiagGaussian(mean, std=torch.ones(2, 3, 4, dtype=torch.float64))
    kw = {"torch_path": True} if path == "torch_path" else {}
    with pytest.raises(ValueError, match=r"^\[kl_standard_normal\] p.mean must be finite, found "
                                         r"nan at batch index \(1, 2\), element 3$") as e:
        gk.kl_standard_normal(p, **kw)
    assert e.value.batch_index == (1, 2)


def test_positions_of_matrices_are_batch_indices():
    cov = torch.eye(3, dtype=torch.float64).repeat(2, 2, 1, 1)
    cov[0, 1, 2, 2] = -1.0
    p = gk.FullGaussian(torch.zeros(2, 2, 3, dtype=torch.float64), covariance=cov)
    with pytest.raises(ValueError, match=r"not positive definite at batch index \(0, 1\)"):
        gk.kl_standard_normal(p)
    q = gk.DiagGaussian(torch.zeros(3, 3, dtype=torch.float64), std=1.0)
    with pytest.raises(ValueError, match=r"^\[kl\] q.*at row 2, column 0") as e:
        gk.kl(gk.DiagGaussian(torch.zeros(3, 3), std=1.0),
              gk.DiagGaussian(_nan_at((3, 3), (2, 0)), std=1.0))
    assert not hasattr(e.value, "batch_index")  # one batch axis: rows are batch indices
    del q


# -- the jitter hint appears once ----------------------------------------------------------------

KINDS = ("kl", "jeffreys", "bhattacharyya", "hellinger", "wasserstein2", "renyi")


@pytest.mark.parametrize("op", ["divergence", "pairwise", "knn"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_jitter_hint_once(op, kind, framework):
    cov = np.stack([np.eye(3), np.diag([1.0, 1.0, -1.0])])
    if framework == "torch":
        cov = torch.from_numpy(cov)
    p = gk.FullGaussian(np.zeros((2, 3)) if framework == "numpy" else torch.zeros(2, 3,
                                                                                  dtype=torch.float64),
                        covariance=cov)
    q = gk.FullGaussian(np.zeros(3), covariance=np.eye(3))
    alpha = {"alpha": 0.5} if kind == "renyi" else {}
    call = {"divergence": lambda: gk.divergence(p, q, kind, **alpha),
            "pairwise": lambda: gk.pairwise(p, q, kind, **alpha),
            "knn": lambda: gk.knn(p, q, 1, kind=kind, **alpha)}[op]
    with pytest.raises(ValueError) as e:
        call()
    assert str(e.value).count("jitter=EPS does that for each such matrix") == 1, str(e.value)


# -- k as the third argument ---------------------------------------------------------------------

def test_knn_takes_k_third():
    rng = np.random.default_rng(0)
    p = gk.DiagGaussian(rng.normal(size=(5, 2)), std=np.ones((5, 2)))
    q = gk.DiagGaussian(rng.normal(size=(7, 2)), std=np.ones((7, 2)))
    for a, b in ((gk.knn(p, q, 3), gk.knn(p, q, k=3)), (gk.knn_kl(p, q, 3), gk.knn_kl(p, q, k=3)),
                 (gk.knn(p, q, 3, kind="wasserstein2"), gk.knn(p, q, k=3, kind="wasserstein2"))):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    with pytest.raises(TypeError, match=r"^\[knn\] q must be a batch of Gaussians or None, found "
                                        r"an int; k is the third argument: knn\(p, q, k\) or "
                                        r"knn\(p, k=5\)$"):
        gk.knn(p, 5)
    with pytest.raises(TypeError, match=r"^\[knn_kl\] k is required"):
        gk.knn_kl(p, q)
