"""gk.divergence: every kind against mpmath at 50 digits (diagonal near-duplicates relative to
the value itself), the option's errors, torch inputs and diagonal gradients (gradcheck)."""

import math

import mpmath
import numpy as np
import pytest

import gausskl as gk
from conftest import HAS_TORCH, needs_torch

mp = mpmath.mp
KINDS = [("jeffreys", None), ("bhattacharyya", None), ("hellinger", None),
         ("wasserstein2", None), ("renyi", 0.5), ("renyi", 0.05), ("renyi", 1.5), ("kl", None)]


def _mp_divergence(kind, alpha, m1, S1, m2, S2):
    """The textbook formulas in mpmath (S1, S2 mpmath matrices; m1, m2 lists)."""
    d = len(m1)
    delta = mpmath.matrix([mpmath.mpf(a) - mpmath.mpf(b) for a, b in zip(m1, m2)])

    def quad(S):
        return (delta.T * mpmath.lu_solve(S, delta))[0]

    def kl(A, B):
        tr = sum((mpmath.inverse(B) * A)[i, i] for i in range(d))
        return (tr + quad(B) - d + mpmath.log(mpmath.det(B)) - mpmath.log(mpmath.det(A))) / 2

    if kind == "kl":
        return kl(S1, S2)
    if kind == "jeffreys":
        return kl(S1, S2) + kl(S2, S1)
    if kind in ("bhattacharyya", "hellinger"):
        S = (S1 + S2) / 2
        b = quad(S) / 8 + mpmath.log(mpmath.det(S) / mpmath.sqrt(mpmath.det(S1) * mpmath.det(S2))) / 2
        return b if kind == "bhattacharyya" else -mpmath.expm1(-b)
    if kind == "renyi":
        a = mpmath.mpf(alpha)
        S = a * S2 + (1 - a) * S1
        ratio = mpmath.det(S) / (mpmath.det(S1) ** (1 - a) * mpmath.det(S2) ** a)
        return a / 2 * quad(S) - mpmath.log(ratio) / (2 * (a - 1))
    root = mpmath.sqrtm(S2)
    cross = mpmath.sqrtm(root * S1 * root)
    tr = sum(S1[i, i] + S2[i, i] - 2 * cross[i, i] for i in range(d))
    return (delta.T * delta)[0] + mpmath.re(tr)


def _diag_mp(kind, alpha, m1, s1, m2, s2):
    S1 = mpmath.diag([mpmath.mpf(x) ** 2 for x in s1])
    S2 = mpmath.diag([mpmath.mpf(x) ** 2 for x in s2])
    m1, m2 = [mpmath.mpf(float(x)) for x in m1], [mpmath.mpf(float(x)) for x in m2]
    return _mp_divergence(kind, alpha, m1, S1, m2, S2)


@pytest.mark.parametrize("kind,alpha", KINDS)
def test_diagonal_against_mpmath(rng, kind, alpha):
    mp.dps = 50
    n, d = 4, 3
    m1, m2 = rng.normal(size=(n, d)) + 1e3, rng.normal(size=(n, d)) + 1e3
    s1 = rng.uniform(0.5, 2, (n, d))
    s2 = s1 * rng.uniform(0.9, 1.3, (n, d))  # q wider: renyi of order 1.5 stays finite
    got = gk.divergence(gk.DiagGaussian(m1, std=s1), gk.DiagGaussian(m2, std=s2), kind, alpha)
    for i in range(n):
        exact = _diag_mp(kind, alpha, m1[i], s1[i], m2[i], s2[i])
        assert abs(got[i] - exact) <= 1e-12 * (abs(exact) + 1), (i, got[i], exact)


def _as_param(param, s):
    return {"std": s, "var": s**2, "logvar": np.log(s**2), "precision": 1 / s**2}[param]


def _sigma(param, x):
    """sigma in mpmath from the parameter as given (float64), exactly."""
    x = mpmath.mpf(float(x))
    return {"std": x, "var": mpmath.sqrt(x), "logvar": mpmath.exp(x / 2),
            "precision": 1 / mpmath.sqrt(x)}[param]


@pytest.mark.parametrize("means", ["moved", "equal"])
@pytest.mark.parametrize("param", ["std", "var", "logvar", "precision"])
@pytest.mark.parametrize("kind,alpha", KINDS)
def test_diagonal_near_duplicates_relative(rng, kind, alpha, param, means):
    """Near-duplicates (relative 1e-8 on the scales, on the means too or not, scales up to 1e3):
    small values keep their digits, relative to themselves."""
    mp.dps = 50
    n, d = 3, 4
    m1, s1 = rng.normal(size=(n, d)) + 1e3, np.exp(rng.uniform(-7, 7, (n, d)))
    m2 = m1 * (1 + 1e-8 * rng.uniform(-1, 1, (n, d))) if means == "moved" else m1
    x1 = _as_param(param, s1)
    x2 = x1 * (1 + 1e-8 * rng.uniform(-1, 1, (n, d)))
    got = gk.divergence(gk.DiagGaussian(m1, **{param: x1}), gk.DiagGaussian(m2, **{param: x2}),
                        kind, alpha)
    for i in range(n):
        exact = _diag_mp(kind, alpha, m1[i], [_sigma(param, x) for x in x1[i]], m2[i],
                         [_sigma(param, x) for x in x2[i]])
        # relative to the value itself (tiny here); renyi of order 0.05 loses up to 1 / alpha
        bound = 1e-12 / (alpha if alpha is not None and alpha < 1 else 1)
        assert abs(got[i] - exact) <= bound * abs(exact), (i, got[i], exact)


@pytest.mark.parametrize("kind,alpha", KINDS)
@pytest.mark.parametrize("family", ["full", "low_rank"])
def test_other_families_against_mpmath(rng, kind, alpha, family):
    mp.dps = 50
    n, d = 3, 3
    a = rng.normal(size=(n, d, d)) / 3
    c1 = a @ a.transpose(0, 2, 1) + np.eye(d)
    c2 = 1.5 * c1 + 0.2 * np.eye(d)  # q wider: renyi of order 1.5 stays finite
    m1, m2 = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    p = gk.FullGaussian(m1, covariance=c1)
    if family == "full":
        q = gk.FullGaussian(m2, covariance=c2)
        q_cov = c2
    else:
        w = rng.normal(size=(n, d, 2)) * 0.5
        diag = np.full((n, d), 2.0)
        q = gk.LowRankGaussian(m2, cov_factor=w, cov_diag=diag)
        q_cov = w @ w.transpose(0, 2, 1) + 2.0 * np.eye(d)
    got = gk.divergence(p, q, kind, alpha)
    for i in range(n):
        exact = _mp_divergence(kind, alpha, m1[i], mpmath.matrix(c1[i].tolist()), m2[i],
                               mpmath.matrix(q_cov[i].tolist()))
        assert abs(got[i] - exact) <= 1e-12 * (abs(exact) + 1), (i, got[i], exact)


@pytest.mark.parametrize("kind,alpha", KINDS)
def test_identical_is_zero_and_symmetric_kinds_swap(rng, kind, alpha):
    c = rng.normal(size=(4, 3, 3))
    c = c @ c.transpose(0, 2, 1) + np.eye(3)
    p = gk.FullGaussian(rng.normal(size=(4, 3)) + 1e3, covariance=c)
    np.testing.assert_array_equal(gk.divergence(p, p, kind, alpha), np.zeros(4))
    q = gk.DiagGaussian(rng.normal(size=(4, 3)), var=rng.uniform(1, 2, (4, 3)))
    if kind in ("jeffreys", "bhattacharyya", "hellinger", "wasserstein2"):
        np.testing.assert_array_equal(gk.divergence(p, q, kind), gk.divergence(q, p, kind))


def test_float32_in_float32_out(rng):
    p = gk.DiagGaussian(rng.normal(size=(5, 2)).astype(np.float32),
                        std=np.ones((5, 2), np.float32))
    out = gk.divergence(p, p, "hellinger")
    assert out.dtype == np.float32 and not out.any()


@pytest.mark.parametrize(
    "kind,alpha,error,message",
    [
        ("jeff", None, ValueError, "[divergence] kind must be one of kl, jeffreys, bhattacharyya, "
         "hellinger, wasserstein2, renyi, found 'jeff'"),
        ("renyi", None, ValueError, "[divergence] kind='renyi' needs alpha, the order"),
        ("renyi", 1.0, ValueError, "must be finite and in (0, 1) or (1, inf), found 1.0"),
        ("renyi", math.inf, ValueError, "found inf"),
        ("renyi", "0.5", TypeError, "found str"),
        ("hellinger", 0.5, ValueError, "[divergence] alpha is the order of the renyi divergence; "
         "kind='hellinger' takes none"),
    ],
)
def test_option_errors(kind, alpha, error, message):
    p = gk.DiagGaussian(np.zeros(2), std=np.ones(2))
    with pytest.raises(error) as e:
        gk.divergence(p, p, kind, alpha)
    assert message in str(e.value)


def test_renyi_infinite_names_the_row():
    p = gk.DiagGaussian(np.zeros((2, 2)), std=np.array([[1.0, 1.0], [1.0, 3.0]]))
    q = gk.DiagGaussian(np.zeros((2, 2)), std=np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"\[divergence\] the renyi divergence is infinite at row 1"):
        gk.divergence(p, q, "renyi", 2.0)


def test_library_validation_applies():
    p = gk.DiagGaussian(np.zeros(2), std=np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"\[divergence\] p.scale \(std\) must be positive"):
        gk.divergence(p, p, "jeffreys")


@needs_torch
@pytest.mark.parametrize("kind,alpha", KINDS)
def test_torch_values_and_gradients(rng, kind, alpha):
    import torch

    m1 = torch.tensor(rng.normal(size=(3, 2)), requires_grad=True)
    s1 = torch.tensor(rng.uniform(0.5, 1.5, (3, 2)), requires_grad=True)
    m2 = torch.tensor(rng.normal(size=(3, 2)), requires_grad=True)
    lv2 = torch.tensor(rng.uniform(0.5, 1.0, (3, 2)), requires_grad=True)  # q wider

    def f(a, b, c, e):
        return gk.divergence(gk.DiagGaussian(a, std=b), gk.DiagGaussian(c, logvar=e), kind, alpha)

    value = f(m1, s1, m2, lv2)
    assert isinstance(value, torch.Tensor) and value.dtype == torch.float64
    exact = gk.divergence(gk.DiagGaussian(m1.detach().numpy(), std=s1.detach().numpy()),
                          gk.DiagGaussian(m2.detach().numpy(), logvar=lv2.detach().numpy()),
                          kind, alpha)
    np.testing.assert_array_equal(value.detach().numpy(), exact)  # the library's values
    assert torch.autograd.gradcheck(f, (m1, s1, m2, lv2), eps=1e-6, atol=1e-8)


@needs_torch
def test_torch_gradients_of_other_families():
    """Every family pair has gradients (tests/python/test_divergence_grad.py checks them)."""
    import torch

    c = torch.eye(2, dtype=torch.float64).expand(3, 2, 2)
    m = torch.zeros(3, 2, dtype=torch.float64, requires_grad=True)
    p = gk.FullGaussian(m, covariance=c)
    out = gk.divergence(p, p, "bhattacharyya")
    assert not out.detach().any()  # p = q: exactly 0, and so is the gradient
    assert not torch.autograd.grad(out.sum(), m)[0].any()
    # Without gradients: the library's values, as torch tensors.
    out = gk.divergence(gk.FullGaussian(m.detach(), covariance=c), p.__class__(m.detach(),
                        covariance=c), "bhattacharyya")
    assert isinstance(out, torch.Tensor) and not out.any()
    # torch.func.vmap: the operator of gausskl._compile (tests/python/test_compile_kinds.py)
    out = torch.func.vmap(lambda x: gk.divergence(gk.FullGaussian(x, covariance=c),
                                                  gk.FullGaussian(x, covariance=c),
                                                  "bhattacharyya"))(m.detach()[None])
    assert out.shape == (1, 3) and not out.any()


assert HAS_TORCH or True
