"""Gaussian mixtures (gk.GaussianMixture, gk.log_overlap, gk.mixture_kl_bounds, gk.mixture_kl,
gk.mixture_divergence) against independent references: mpmath's log N(mu_a; mu_b, Sigma_a +
Sigma_b), scipy's adaptive quadrature of the densities in one dimension, and a large Monte Carlo
in three."""

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate
from scipy.stats import multivariate_normal, norm

import gausskl as gk

torch = pytest.importorskip("torch")

METHODS = ("variational", "upper_bound", "lower_bound", "product", "matched", "unscented")


def mixture_1d(rng, c, offset=0.0):
    mu = rng.normal(size=c) * 2 + offset
    sd = rng.uniform(0.3, 2.0, c)
    w = rng.dirichlet(np.ones(c))
    m = gk.GaussianMixture(gk.DiagGaussian(mu[:, None], std=sd[:, None]), weights=w)
    return m, (mu, sd, w)


def density(x, parts):
    mu, sd, w = parts
    return float(sum(wi * norm.pdf(x, mi, si) for mi, si, wi in zip(mu, sd, w)))


def quad(fn, parts):
    """The integral over the real line, split at the components' means (scipy's quad)."""
    mu = np.concatenate([p[0] for p in parts])
    lo, hi = mu.min() - 40, mu.max() + 40
    pts = sorted(mu)
    return integrate.quad(fn, lo, hi, points=pts, limit=400, epsabs=1e-13, epsrel=1e-11)[0]


def kl_quadrature(fp, gp):
    def integrand(x):
        a, b = density(x, fp), density(x, gp)
        return 0.0 if a == 0 else a * (math.log(a) - math.log(b))

    return quad(integrand, (fp, gp))


def log_overlap_mpmath(m1, S1, m2, S2):
    mp.mp.dps = 40
    M = mp.matrix((np.asarray(S1) + np.asarray(S2)).tolist())
    d = mp.matrix((np.asarray(m1) - np.asarray(m2)).tolist())
    D = len(m1)
    return float(-(d.T * M**-1 * d)[0] / 2 - D * mp.log(2 * mp.pi) / 2 - mp.log(mp.det(M)) / 2)


# -- the type -------------------------------------------------------------------------------------
def test_mixture_moments_against_numpy():
    rng = np.random.default_rng(0)
    mu = rng.normal(size=(4, 3)) + 1e3
    L = np.tril(rng.normal(size=(4, 3, 3)), -1) + 2 * np.eye(3)
    w = rng.dirichlet(np.ones(4))
    f = gk.GaussianMixture(gk.FullGaussian(mu, scale_tril=L), weights=w)
    m = (w[:, None] * mu).sum(0)
    S = sum(w[a] * (L[a] @ L[a].T + np.outer(mu[a] - m, mu[a] - m)) for a in range(4))
    np.testing.assert_allclose(f.mean, m, rtol=1e-15)
    np.testing.assert_allclose(f.covariance, S, rtol=1e-12)
    assert f.batch_shape == () and f.n_components == 4 and f.d == 3


@pytest.mark.parametrize("weights, message", [
    (np.array([0.5, 0.6]), "weights must sum to 1 over the components"),
    (np.array([1.5, -0.5]), "weights must be non-negative, found -0.5 at index [1]"),
    (np.array([np.nan, 1.0]), "weights must be finite, found nan at index [0]"),
    (np.array([1.0]), "weights must have the C = 2 components on its last axis"),
    (np.ones((3, 2)) / 2, "weights of shape (3, 2) does not broadcast with the components' batch shape (2, 2)"),
])
def test_mixture_weight_rules(weights, message):
    comps = gk.DiagGaussian(np.zeros((2, 2, 1)), std=np.ones((2, 2, 1)))
    with pytest.raises(ValueError, match=r"^\[GaussianMixture\] " + _re(message)):
        gk.GaussianMixture(comps, weights=weights)


def _re(text):
    import re

    return re.escape(text)


def test_mixture_argument_rules():
    comps = gk.DiagGaussian(np.zeros((2, 1)), std=np.ones((2, 1)))
    with pytest.raises(TypeError, match="exactly one of weights= and logits="):
        gk.GaussianMixture(comps)
    with pytest.raises(TypeError, match="exactly one of weights= and logits="):
        gk.GaussianMixture(comps, np.ones(2) / 2, logits=np.zeros(2))
    with pytest.raises(ValueError, match="must have a batch axis indexing the components"):
        gk.GaussianMixture(gk.DiagGaussian(np.zeros(1), std=np.ones(1)), weights=np.ones(1))
    with pytest.raises(ValueError, match=r"logits must be finite, found inf at index \[1\]"):
        gk.GaussianMixture(comps, logits=np.array([0.0, np.inf]))
    f = gk.GaussianMixture(comps, logits=np.array([0.0, math.log(3.0)]))
    np.testing.assert_allclose(f.weights, [0.25, 0.75], rtol=1e-15)


# -- the log-overlap ------------------------------------------------------------------------------
def _families(rng, d, offset):
    mu = rng.normal(size=d) + offset
    A = rng.normal(size=(d, d))
    S = A @ A.T + 0.3 * np.eye(d)
    L = np.linalg.cholesky(S)
    W, dg = rng.normal(size=(d, 2)), rng.uniform(0.5, 2, d)
    sd = rng.uniform(0.5, 2, d)
    rows, cols = np.tril_indices(d)
    return [
        (gk.DiagGaussian(mu, std=sd), np.diag(sd**2)),
        (gk.DiagGaussian(mu, logvar=2 * np.log(sd)), np.diag(sd**2)),
        (gk.FullGaussian(mu, covariance=S), S),
        (gk.FullGaussian(mu, precision_matrix=np.linalg.inv(S)), S),
        (gk.FullGaussian(mu, scale_tril=L), S),
        (gk.FullGaussian(mu, packed_scale_tril=L[rows, cols]), S),
        (gk.LowRankGaussian(mu, cov_factor=W, cov_diag=dg), W @ W.T + np.diag(dg)),
    ]


@pytest.mark.parametrize("offset", [0.0, 1e3])
def test_log_overlap_every_family_against_mpmath(offset):
    rng = np.random.default_rng(1)
    ps = _families(rng, 4, offset)
    qs = _families(rng, 4, offset)
    for p, Sp in ps:
        for q, Sq in qs:
            ref = log_overlap_mpmath(p.mean, Sp, q.mean, Sq)
            got = float(gk.log_overlap(p, q))
            assert abs(got - ref) <= 1e-12 * (abs(ref) + 1), (p, q, got, ref)


def test_log_overlap_at_d_2048_does_not_underflow():
    # exp of it is 0 in double; the value itself is about -3000, checked in long double.
    rng = np.random.default_rng(2)
    d = 2048
    m1, m2 = rng.normal(size=d), rng.normal(size=d)
    v1, v2 = rng.uniform(1e-3, 1e3, d) ** 2 / 1e3, rng.uniform(1e-3, 1e3, d) ** 2 / 1e3
    got = float(gk.log_overlap(gk.DiagGaussian(m1, var=v1), gk.DiagGaussian(m2, var=v2)))
    ld = np.longdouble
    s = v1.astype(ld) + v2.astype(ld)
    ref = float(-0.5 * np.sum((m1.astype(ld) - m2.astype(ld)) ** 2 / s + np.log(2 * ld(np.pi) * s)))
    assert math.isfinite(got) and abs(got - ref) <= 1e-12 * abs(ref)


def test_pairwise_log_overlap_is_the_rowwise_value_of_every_pair():
    rng = np.random.default_rng(3)
    p = gk.DiagGaussian(rng.normal(size=(5, 3)), std=rng.uniform(0.5, 2, (5, 3)))
    q = gk.FullGaussian(rng.normal(size=(4, 3)), scale_tril=np.eye(3) * rng.uniform(0.5, 2, (4, 1, 1)))
    M = gk.pairwise_log_overlap(p, q)
    assert M.shape == (5, 4)
    for i in range(5):
        for j in range(4):
            pi = gk.DiagGaussian(p.mean[i], std=p.scale[i])
            qj = gk.FullGaussian(q.mean[j], scale_tril=q.scale[j])
            assert abs(M[i, j] - gk.log_overlap(pi, qj)) <= 1e-13 * abs(M[i, j])
    S = gk.pairwise_log_overlap(p)
    ld = 2 * np.log(p.scale).sum(-1)
    np.testing.assert_allclose(np.diag(S), -1.5 * math.log(4 * math.pi) - 0.5 * ld, rtol=1e-15)


# -- KL between mixtures ----------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_bounds_hold_against_quadrature_in_one_dimension(seed):
    rng = np.random.default_rng(10 + seed)
    f, fp = mixture_1d(rng, 1 + seed % 3)
    g, gp = mixture_1d(rng, 2 + seed % 4, offset=seed * 0.5)
    kl = kl_quadrature(fp, gp)
    lo, hi = gk.mixture_kl_bounds(f, g)
    assert lo - 1e-9 <= kl <= hi + 1e-9, (float(lo), kl, float(hi))
    assert gk.mixture_kl(f, g, "lower_bound") == lo and gk.mixture_kl(f, g, "upper_bound") == hi


def test_bounds_hold_against_monte_carlo_in_three_dimensions():
    rng = np.random.default_rng(20)
    C, K, D = 3, 4, 3
    fm, gm = rng.normal(size=(C, D)), rng.normal(size=(K, D))
    fs, gs = rng.uniform(0.5, 1.5, (C, D)), rng.uniform(0.5, 1.5, (K, D))
    fw, gw = rng.dirichlet(np.ones(C)), rng.dirichlet(np.ones(K))
    f = gk.GaussianMixture(gk.DiagGaussian(fm, std=fs), weights=fw)
    g = gk.GaussianMixture(gk.DiagGaussian(gm, std=gs), weights=gw)
    n = 400_000
    comp = rng.choice(C, size=n, p=fw)
    x = fm[comp] + fs[comp] * rng.normal(size=(n, D))

    def logpdf(x, m, s, w):
        return np.logaddexp.reduce([np.log(w[a]) + multivariate_normal(m[a], np.diag(s[a] ** 2))
                                    .logpdf(x) for a in range(len(w))], axis=0)

    r = logpdf(x, fm, fs, fw) - logpdf(x, gm, gs, gw)
    est, se = r.mean(), r.std() / math.sqrt(n)
    lo, hi = gk.mixture_kl_bounds(f, g)
    assert lo <= est + 5 * se and est - 5 * se <= hi


def test_upper_bound_of_a_single_gaussian_is_the_elbo_bound():
    rng = np.random.default_rng(4)
    f = gk.FullGaussian(rng.normal(size=3), scale_tril=np.eye(3) * 0.7)
    comps = gk.DiagGaussian(rng.normal(size=(5, 3)), std=rng.uniform(0.5, 2, (5, 3)))
    w = rng.dirichlet(np.ones(5))
    kls = np.array([gk.kl(f, gk.DiagGaussian(comps.mean[b], std=comps.scale[b])) for b in range(5)])
    ref = -np.logaddexp.reduce(np.log(w) - kls)
    _, hi = gk.mixture_kl_bounds(f, gk.GaussianMixture(comps, weights=w))
    assert abs(hi - ref) <= 1e-13 * abs(ref)


@pytest.mark.parametrize("method", METHODS)
def test_single_components_and_equal_mixtures(method):
    rng = np.random.default_rng(5)
    p = gk.DiagGaussian(rng.normal(size=(6, 4)), std=rng.uniform(0.5, 2, (6, 4)))
    q = gk.FullGaussian(rng.normal(size=(6, 4)), scale_tril=np.eye(4) * 1.3)
    got = gk.mixture_kl(p, q, method)
    if method in ("variational", "matched", "upper_bound", "unscented"):
        np.testing.assert_allclose(got, gk.kl(p, q), rtol=1e-13)
    f, _ = mixture_1d(rng, 4)
    # The upper bound of f = g is its slack (> 0); matched's m(a) may pick another component
    # of f (Hershey & Olsen 2007 discuss it), so neither is 0 there.
    if method not in ("upper_bound", "matched"):
        assert gk.mixture_kl(f, f, method) == 0.0


def test_product_approximation_of_single_gaussians_is_the_overlap_ratio():
    rng = np.random.default_rng(6)
    p = gk.DiagGaussian(rng.normal(size=2), std=rng.uniform(0.5, 2, 2))
    q = gk.DiagGaussian(rng.normal(size=2), std=rng.uniform(0.5, 2, 2))
    Sp, Sq = np.diag(p.scale**2), np.diag(q.scale**2)
    ref = log_overlap_mpmath(p.mean, Sp, p.mean, Sp) - log_overlap_mpmath(p.mean, Sp, q.mean, Sq)
    assert abs(gk.mixture_kl(p, q, "product") - ref) <= 1e-13 * (abs(ref) + 1)


def test_method_rule():
    p = gk.DiagGaussian(np.zeros(1), std=np.ones(1))
    with pytest.raises(ValueError, match=r"^\[mixture_kl\] method must be one of variational"):
        gk.mixture_kl(p, p, "monte_carlo")
    with pytest.raises(ValueError, match=r"^\[mixture_kl\] f and g must have the same dimension"):
        gk.mixture_kl(p, gk.DiagGaussian(np.zeros(2), std=np.ones(2)))


# -- closed-form divergences ---------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_cauchy_schwarz_and_l2_against_quadrature(seed):
    rng = np.random.default_rng(30 + seed)
    f, fp = mixture_1d(rng, 3)
    g, gp = mixture_1d(rng, 2, offset=1.0)
    ff = quad(lambda x: density(x, fp) ** 2, (fp,))
    gg = quad(lambda x: density(x, gp) ** 2, (gp,))
    fg = quad(lambda x: density(x, fp) * density(x, gp), (fp, gp))
    cs = -math.log(fg) + 0.5 * math.log(ff) + 0.5 * math.log(gg)
    assert abs(gk.mixture_divergence(f, g) - cs) <= 1e-9 * (cs + 1)
    assert abs(gk.mixture_divergence(f, g, "l2") - (ff + gg - 2 * fg)) <= 1e-10
    assert gk.mixture_divergence(f, f) == 0.0 and gk.mixture_divergence(f, f, "l2") == 0.0
    with pytest.raises(ValueError, match=r"^\[mixture_divergence\] kind must be one of"):
        gk.mixture_divergence(f, g, "kl")


# -- batches, frameworks, gradients --------------------------------------------------------------
def _batch(rng, shape, c, d, torch_=False):
    mu = rng.normal(size=(*shape, c, d))
    sd = rng.uniform(0.5, 2, (*shape, c, d))
    w = rng.dirichlet(np.ones(c), size=shape) if shape else rng.dirichlet(np.ones(c))
    if torch_:
        mu, sd, w = (torch.tensor(a) for a in (mu, sd, w))
    return gk.GaussianMixture(gk.DiagGaussian(mu, std=sd), weights=w)


def _one(m, i):
    c = m.components
    return gk.GaussianMixture(gk.DiagGaussian(c.mean[i], std=c.scale[i]), weights=m.weights[i])


@pytest.mark.parametrize("method", METHODS)
def test_batches_of_mixtures_are_each_mixture(method):
    rng = np.random.default_rng(7)
    f, g = _batch(rng, (3,), 4, 2), _batch(rng, (3,), 5, 2)
    shared = _batch(rng, (), 6, 2)
    got, got_shared = gk.mixture_kl(f, g, method), gk.mixture_kl(f, shared, method)
    assert got.shape == (3,) and got_shared.shape == (3,)
    for i in range(3):
        assert abs(got[i] - gk.mixture_kl(_one(f, i), _one(g, i), method)) <= 1e-13 * (got[i] + 1)
        ref = gk.mixture_kl(_one(f, i), shared, method)
        assert abs(got_shared[i] - ref) <= 1e-13 * (ref + 1)


def test_torch_equals_numpy_and_float32_stays_float32():
    f, g = _batch(np.random.default_rng(8), (2,), 3, 2), _batch(np.random.default_rng(9), (), 4, 2)
    ft = _batch(np.random.default_rng(8), (2,), 3, 2, True)
    gt = _batch(np.random.default_rng(9), (), 4, 2, True)
    for method in METHODS:
        a, b = gk.mixture_kl(f, g, method), gk.mixture_kl(ft, gt, method)
        assert isinstance(b, torch.Tensor) and b.dtype == torch.float64
        np.testing.assert_allclose(b.numpy(), a, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gk.mixture_divergence(ft, gt).numpy(), gk.mixture_divergence(f, g),
                               rtol=1e-12)
    f32 = gk.GaussianMixture(gk.DiagGaussian(np.zeros((2, 1), np.float32),
                                             std=np.ones((2, 1), np.float32)),
                             weights=np.array([0.5, 0.5], np.float32))
    assert gk.mixture_kl(f32, f32).dtype == np.float32
    p32 = gk.DiagGaussian(np.zeros((3, 1), np.float32), std=np.ones((3, 1), np.float32))
    for method in METHODS:
        assert gk.mixture_kl(p32, f32, method).dtype == np.float32
        assert gk.mixture_kl(p32, p32, method).dtype == np.float32
    assert gk.mixture_kl_bounds(p32, f32)[1].dtype == np.float32
    assert gk.mixture_divergence(p32, f32).dtype == np.float32


def test_gradcheck_bounds_variational_and_log_overlap():
    rng = np.random.default_rng(9)
    mu = torch.tensor(rng.normal(size=(3, 2)), requires_grad=True)
    logstd = torch.tensor(rng.normal(size=(3, 2)) * 0.2, requires_grad=True)
    logits = torch.tensor(rng.normal(size=3), requires_grad=True)
    gmu = torch.tensor(rng.normal(size=(2, 2)), requires_grad=True)
    # The factors packed (log of the diagonal): gradcheck perturbs every entry, and a
    # scale_tril must be 0 above its diagonal.
    L = torch.tensor(rng.normal(size=(2, 3)) * 0.2, requires_grad=True)

    def run(method):
        def fn(mu, logstd, logits, gmu, L):
            f = gk.GaussianMixture(gk.DiagGaussian(mu, std=logstd.exp()), logits=logits)
            g = gk.GaussianMixture(gk.FullGaussian(gmu, packed_scale_tril=L, log_diagonal=True),
                                   weights=torch.tensor([0.3, 0.7], dtype=torch.float64))
            if method == "log_overlap":
                return gk.pairwise_log_overlap(f.components, g.components)
            return gk.mixture_kl(f, g, method)
        return fn

    for method in ("variational", "upper_bound", "lower_bound", "product", "unscented",
                   "log_overlap"):
        assert torch.autograd.gradcheck(run(method), (mu, logstd, logits, gmu, L))


# -- densities, samples, Monte Carlo -----------------------------------------------------------------
def _full_mixture(rng, c=3, d=2, offset=0.0):
    mu = rng.normal(size=(c, d)) + offset
    A = rng.normal(size=(c, d, d))
    S = A @ np.swapaxes(A, -1, -2) + 0.2 * np.eye(d)
    w = rng.dirichlet(np.ones(c))
    return gk.GaussianMixture(gk.FullGaussian(mu, covariance=S), weights=w), (mu, S, w)


def test_log_prob_against_scipy_and_torch():
    rng = np.random.default_rng(40)
    f, (mu, S, w) = _full_mixture(rng, offset=1e3)
    x = rng.normal(size=(7, 2)) + 1e3
    ref = np.log(sum(w[a] * multivariate_normal(mu[a], S[a]).pdf(x) for a in range(3)))
    np.testing.assert_allclose(f.log_prob(x), ref, rtol=1e-12)
    td = torch.distributions
    mix = td.MixtureSameFamily(td.Categorical(torch.tensor(w)),
                               td.MultivariateNormal(torch.tensor(mu),
                                                     covariance_matrix=torch.tensor(S)))
    np.testing.assert_allclose(f.log_prob(x), mix.log_prob(torch.tensor(x)).numpy(), rtol=1e-12)
    batch = _batch(rng, (4,), 3, 2)
    assert batch.log_prob(rng.normal(size=(6, 4, 2))).shape == (6, 4)
    assert batch.log_prob(rng.normal(size=(6, 1, 2))).shape == (6, 4)
    with pytest.raises(ValueError, match=r"^\[GaussianMixture.log_prob\] x must have D = 2"):
        batch.log_prob(np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"does not broadcast with the batch shape \(4,\)"):
        batch.log_prob(np.zeros((6, 3, 2)))


def test_samples_have_the_moments_and_are_seeded():
    rng = np.random.default_rng(41)
    f, _ = _full_mixture(rng)
    x = f.sample(400_000, seed=3)
    assert x.shape == (400_000, 2)
    np.testing.assert_allclose(x.mean(0), f.mean, atol=0.02)
    np.testing.assert_allclose(np.cov(x.T), f.covariance, atol=0.05)
    np.testing.assert_array_equal(f.sample(10, seed=3), f.sample(10, seed=3))
    assert not np.array_equal(f.sample(10, seed=3), f.sample(10, seed=4))


def test_monte_carlo_agrees_with_quadrature_and_is_reproducible():
    rng = np.random.default_rng(42)
    f, fp = mixture_1d(rng, 3)
    g, gp = mixture_1d(rng, 2)
    kl = kl_quadrature(fp, gp)
    est, se = gk.mixture_kl_mc(f, g, samples=200_000, seed=7)
    assert abs(est - kl) <= 5 * se and se < 0.01
    # The same values whatever the memory budget (the blocks are the unit of the generator).
    again = gk.mixture_kl_mc(f, g, samples=200_000, seed=7, memory_budget=1)
    assert again[0] == est and again[1] == se
    assert gk.mixture_kl_mc(f, f, samples=1000) == (0.0, 0.0)


def test_monte_carlo_gradients_are_reparameterized():
    # f = N(mu, 1), g = N(0, 1): log f(x) - log g(x) = mu^2 / 2 + mu z at x = mu + z, so the
    # reparameterized gradient is mu + mean(z), within 5 / sqrt(n) of dKL/dmu = mu.
    mu = torch.tensor([[0.7]], dtype=torch.float64, requires_grad=True)
    f = gk.GaussianMixture(gk.DiagGaussian(mu, std=torch.ones(1, 1, dtype=torch.float64)),
                           weights=torch.ones(1, dtype=torch.float64))
    g = gk.DiagGaussian(torch.zeros(1, dtype=torch.float64), std=torch.ones(1, dtype=torch.float64))
    n = 40_000
    est, _ = gk.mixture_kl_mc(f, g, samples=n, seed=1)
    est.backward()
    assert abs(mu.grad.item() - 0.7) <= 5 / math.sqrt(n)


def test_monte_carlo_rules():
    p = gk.DiagGaussian(np.zeros(1), std=np.ones(1))
    with pytest.raises(ValueError, match=r"^\[mixture_kl_mc\] samples must be an integer >= 2"):
        gk.mixture_kl_mc(p, p, samples=1)


def test_readme_mixture_snippet_runs_as_pasted():
    from conftest import run_readme_python

    namespace = run_readme_python("## Gaussian mixtures", "## FID from features")
    assert tuple(namespace["kl"].shape) == (100,) and namespace["mu"].grad.shape == (100, 40)


@pytest.mark.parametrize("method", ["upper_bound", "variational", "lower_bound"])
def test_compiles_with_fullgraph(method):
    torch._dynamo.reset()
    g = torch.Generator().manual_seed(0)
    mu = torch.randn(8, 4, generator=g, requires_grad=True)
    pm, lg = torch.randn(5, 4, generator=g), torch.zeros(5, requires_grad=True)

    def step(mu, pm, lg):
        f = gk.DiagGaussian(mu, logvar=torch.zeros_like(mu))
        if method != "upper_bound":  # batches of mixtures: the general path
            f = gk.GaussianMixture(gk.DiagGaussian(mu.reshape(2, 4, 4), std=torch.ones(2, 4, 4)),
                                   logits=torch.zeros(2, 4))
        prior = gk.GaussianMixture(gk.DiagGaussian(pm, logvar=torch.zeros_like(pm)), logits=lg)
        return gk.mixture_kl(f, prior, method).sum()

    compiled = torch.compile(step, fullgraph=True)
    got, want = compiled(mu, pm, lg), step(mu, pm, lg)
    assert torch.allclose(got, want, rtol=1e-6)
    got.backward()
    assert lg.grad is not None and mu.grad is not None


def test_weights_are_checked_when_a_compiled_step_runs():
    torch._dynamo.reset()

    def step(w):
        comps = gk.DiagGaussian(torch.zeros(2, 1), std=torch.ones(2, 1))
        f = gk.DiagGaussian(torch.zeros(1), std=torch.ones(1))
        return gk.mixture_kl(f, gk.GaussianMixture(comps, weights=w), "upper_bound")

    compiled = torch.compile(step, fullgraph=True)
    compiled(torch.tensor([0.5, 0.5]))
    with pytest.raises(Exception, match=r"weights must be non-negative"):
        compiled(torch.tensor([1.5, -0.5]))


@pytest.mark.parametrize("method", METHODS)
def test_all_pairs_by_broadcasting_in_slices_within_a_memory_budget(method):
    rng = np.random.default_rng(50)
    mu, sd = rng.normal(size=(6, 3, 2)), rng.uniform(0.5, 2, (6, 3, 2))
    w = rng.dirichlet(np.ones(3), size=6)
    f = gk.GaussianMixture(gk.DiagGaussian(mu[:, None], std=sd[:, None]), weights=w[:, None])
    g = gk.GaussianMixture(gk.DiagGaussian(mu[None], std=sd[None]), weights=w[None])
    whole = gk.mixture_kl(f, g, method)
    assert whole.shape == (6, 6)
    if method != "unscented":
        sliced = gk.mixture_kl(f, g, method, memory_budget=3 * 3 * 8 * 8 * 6)  # a row at a time
        np.testing.assert_allclose(sliced, whole, rtol=1e-14, atol=1e-15)
    for i in (0, 4):
        for j in (1, 5):
            one = gk.mixture_kl(_one(_row(mu, sd, w), i), _one(_row(mu, sd, w), j), method)
            assert abs(whole[i, j] - one) <= 1e-12 * (abs(one) + 1)


def _row(mu, sd, w):
    return gk.GaussianMixture(gk.DiagGaussian(mu, std=sd), weights=w)


def test_memory_budget_rule():
    p = gk.DiagGaussian(np.zeros(1), std=np.ones(1))
    with pytest.raises(ValueError, match=r"^\[mixture_kl\] memory_budget must be a number of "):
        gk.mixture_kl(p, p, memory_budget=-1)


@pytest.mark.parametrize("family", ["covariance", "precision_matrix", "low_rank"])
def test_gradcheck_other_parameterizations(family):
    # A covariance or precision matrix must be symmetric: gradcheck perturbs its 3 free entries
    # (a, b, c as [[a, b], [b, c]]), not each of the 4.
    rng = np.random.default_rng(11)
    S = torch.tensor(np.array([[1.2, 0.1, 0.9], [0.8, -0.2, 1.1]]), requires_grad=True)
    W = torch.tensor(rng.normal(size=(2, 2, 1)) * 0.5, requires_grad=True)
    dg = torch.tensor(rng.uniform(0.5, 1.5, (2, 2)), requires_grad=True)
    gmu = torch.tensor(rng.normal(size=(2, 2)), requires_grad=True)
    fmu = torch.tensor(rng.normal(size=(3, 2)))
    f = gk.GaussianMixture(gk.DiagGaussian(fmu, std=torch.ones(3, 2, dtype=torch.float64)),
                           weights=torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64))

    def fn(gmu, S, W, dg):
        if family == "low_rank":
            comps = gk.LowRankGaussian(gmu, cov_factor=W, cov_diag=dg)
        else:
            M = torch.stack([torch.stack([S[:, 0], S[:, 1]], -1),
                             torch.stack([S[:, 1], S[:, 2]], -1)], -2)
            comps = gk.FullGaussian(gmu, **{family: M})
        g = gk.GaussianMixture(comps, weights=torch.tensor([0.4, 0.6], dtype=torch.float64))
        lo, hi = gk.mixture_kl_bounds(f, g)
        return lo + hi + gk.mixture_kl(f, g) + gk.mixture_divergence(f, g)

    assert torch.autograd.gradcheck(fn, (gmu, S, W, dg))


def test_bad_components_are_named_by_the_operation_and_the_mixture():
    bad = gk.GaussianMixture(gk.DiagGaussian(np.zeros((3, 2)),
                                             std=np.array([[1.0, 1.0], [1.0, -2.0], [1.0, 1.0]])),
                             weights=np.ones(3) / 3)
    p = gk.DiagGaussian(np.zeros(2), std=np.ones(2))
    rule = r"scale \(std\) must be positive and finite, found -2 at row 1, column 1"
    with pytest.raises(ValueError, match=r"^\[mixture_kl_mc\] g\." + rule):
        gk.mixture_kl_mc(p, bad)
    with pytest.raises(ValueError, match=r"^\[mixture_kl_mc\] f\." + rule):
        gk.mixture_kl_mc(bad, p)
    with pytest.raises(ValueError, match=r"^\[reduce_mixture\] f\." + rule):
        gk.reduce_mixture(bad, 2)
    with pytest.raises(ValueError, match=r"^\[mixture_kl\] g\." + rule):
        gk.mixture_kl(p, bad, "unscented")
