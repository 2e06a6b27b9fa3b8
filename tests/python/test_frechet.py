"""gk.frechet_distance and wasserstein2 between full covariances (symmetric factorizations,
src/cpu/divergence/w2_trace.hpp): against mpmath at 50 digits, positive semi-definite covariances
of integers (exactly representable) against mpmath, the indefinite error, the details, and the
torch path (forced on CPU) with gradients."""

import mpmath
import numpy as np
import pytest

import gausskl as gk
from conftest import force_torch_path, needs_torch

mp = mpmath.mp


def _mp_w2(m1, S1, m2, S2):
    """|m1 - m2|^2 + tr(S1 + S2 - 2 (S1^1/2 S2 S1^1/2)^1/2) in mpmath, from the float64 inputs
    (the square roots through mpmath's eigendecomposition of symmetric matrices, which accepts
    singular ones)."""
    A, B = mpmath.matrix(S1.tolist()), mpmath.matrix(S2.tolist())

    def sqrt_psd(X):
        E, Q = mpmath.eigsy(X)
        return Q * mpmath.diag([mpmath.sqrt(max(e, 0)) for e in E]) * Q.T

    r = sqrt_psd(A)
    cross = sqrt_psd(r * B * r)
    d = len(m1)
    tr = sum(A[i, i] + B[i, i] - 2 * cross[i, i] for i in range(d))
    return sum((mpmath.mpf(float(a)) - mpmath.mpf(float(b))) ** 2 for a, b in zip(m1, m2)) + tr


def _spd(rng, d, k, shift):
    a = rng.normal(size=(d, k))
    return a @ a.T / k + shift * np.eye(d)


@pytest.mark.parametrize("d", [20, 32])
def test_full_against_mpmath(rng, d):
    mp.dps = 50
    m1, m2 = rng.normal(size=(2, d)), rng.normal(size=(2, d))
    S1 = np.stack([_spd(rng, d, d + 2, 0.1) for _ in range(2)])
    S2 = np.stack([_spd(rng, d, 2 * d, 0.3) for _ in range(2)])
    p, q = gk.FullGaussian(m1, covariance=S1), gk.FullGaussian(m2, covariance=S2)
    got = gk.frechet_distance(p, q)
    np.testing.assert_array_equal(got, gk.divergence(p, q, "wasserstein2"))
    for i in range(2):
        exact = _mp_w2(m1[i], S1[i], m2[i], S2[i])
        assert abs(got[i] - exact) <= 1e-12 * (abs(exact) + 1), (i, got[i], exact)


def test_known_answer_and_float32_inputs(rng):
    """S2 = T S1 T (T symmetric positive definite) has W2^2 = |dm|^2 + tr((T - I) S1 (T - I));
    float32 inputs are computed in float64 (the result in float32)."""
    d = 150
    S1, T = _spd(rng, d, d, 0.1), _spd(rng, d, d, 0.5)
    S2 = T @ S1 @ T
    S2 = (S2 + S2.T) / 2
    m = rng.normal(size=d)
    E = T - np.eye(d)
    want = np.trace(E @ S1 @ E) + d * 0.01**2
    p, q = gk.FullGaussian(m, covariance=S1), gk.FullGaussian(m + 0.01, covariance=S2)
    got = float(gk.frechet_distance(p, q))
    assert abs(got - want) <= 1e-9 * want
    f32 = gk.frechet_distance(gk.FullGaussian(m.astype(np.float32), covariance=S1.astype(np.float32)),
                              gk.FullGaussian((m + 0.01).astype(np.float32),
                                              covariance=S2.astype(np.float32)))
    assert f32.dtype == np.float32 and f32 >= 0


def _integer_rank_deficient(rng, d, r):
    a = rng.integers(-3, 4, size=(d, r)).astype(np.float64)
    return a @ a.T  # integers: exactly representable, rank r


@pytest.mark.parametrize("d,r", [(8, 3), (24, 10), (32, 31)])
def test_positive_semi_definite_is_exact(rng, d, r):
    """A sample covariance of N <= D rows is singular: accepted, and its zero eigenvalues
    contribute zero (within 1e-10 of mpmath, not sqrt(eps))."""
    mp.dps = 50
    S1 = _integer_rank_deficient(rng, d, r)
    S2 = _integer_rank_deficient(rng, d, max(1, r - 1)) + S1
    m1, m2 = rng.integers(-2, 3, size=(2, d)).astype(np.float64)
    p, q = gk.FullGaussian(m1, covariance=S1), gk.FullGaussian(m2, covariance=S2)
    got = float(gk.frechet_distance(p, q))
    exact = _mp_w2(m1, S1, m2, S2)
    assert abs(got - exact) <= 1e-10 * abs(exact), (got, exact)
    assert float(gk.frechet_distance(q, p)) == got
    assert float(gk.frechet_distance(p, p)) == 0.0
    # A sample covariance of fewer rows than dimensions.
    x = rng.normal(size=(5, d))
    c = np.cov(x, rowvar=False)
    v = gk.frechet_distance(gk.FullGaussian(x.mean(0), covariance=c),
                            gk.FullGaussian(np.zeros(d), covariance=np.eye(d)))
    assert np.isfinite(v) and v > 0


def test_indefinite_is_an_error_naming_the_eigenvalue():
    good = np.stack([2 * np.eye(3)] * 4)
    bad = good.copy()
    bad[3] = [[1, 2, 0], [2, 1, 0], [0, 0, 1]]  # eigenvalues 3, 1, -1
    p = gk.FullGaussian(np.zeros((4, 3)), covariance=good)
    q = gk.FullGaussian(np.zeros((4, 3)), covariance=bad)
    with pytest.raises(gk.InputError) as e:
        gk.frechet_distance(p, q)
    # (gk.divergence appends the jitter hint to this, as to every such error.)
    assert str(e.value).startswith(
        "[divergence] q.scale (covariance) is not positive semi-definite at distribution 3: "
        "eigenvalue -1 is negative beyond rounding (the largest is 3); to regularize, add eps "
        "to the diagonal only: C + eps * I; jitter=EPS does that for each such matrix")
    assert e.value.index == 3 and e.value.side == "q"
    # Other kinds keep refusing a singular covariance, with their message.
    sing = good.copy()
    sing[1] = [[1, 1, 0], [1, 1, 0], [0, 0, 1]]
    s = gk.FullGaussian(np.zeros((4, 3)), covariance=sing)
    with pytest.raises(gk.NotPositiveDefiniteError, match=r"is not positive definite at "
                       r"distribution 1: pivot 1 is"):
        gk.divergence(s, p, "bhattacharyya")
    got = gk.frechet_distance(s, p)
    assert abs(got[1] - (5 - 2 * np.sqrt(2))) <= 1e-14


def test_details(rng):
    d = 30
    S1, S2 = _spd(rng, d, d, 0.2), _spd(rng, d, 3, 0.0)  # q of rank 3
    m1, m2 = rng.normal(size=d), rng.normal(size=d)
    p, q = gk.FullGaussian(m1, covariance=S1), gk.FullGaussian(m2, covariance=S2)
    value, info = gk.frechet_distance(p, q, details=True)
    assert float(value) == float(gk.frechet_distance(p, q))
    assert abs(info["mean_term"] - np.sum((m1 - m2) ** 2)) <= 1e-12 * info["mean_term"]
    assert abs(info["mean_term"] + info["trace_term"] - value) <= 1e-10 * value
    assert info["zero_eigenvalues"] == d - 3
    assert info["rank_p"] == d and info["rank_q"] == 3
    assert info["smallest_eigenvalues"].shape == (5,)


def test_cli_alias_is_documented():
    import inspect

    assert "wasserstein2" in inspect.getdoc(gk.frechet_distance)
    assert "frechet_distance" in gk.__all__


@needs_torch
def test_torch_path_same_method_with_gradients(monkeypatch, rng):
    import torch

    d = 24
    S1 = np.stack([_spd(rng, d, d + 2, 0.1) for _ in range(2)])
    S2 = np.stack([_spd(rng, d, 2 * d, 0.3) for _ in range(2)])
    m1, m2 = rng.normal(size=(2, d)), rng.normal(size=(2, d))
    want = gk.frechet_distance(gk.FullGaussian(m1, covariance=S1), gk.FullGaussian(m2, covariance=S2))
    force_torch_path(monkeypatch)
    t = [torch.from_numpy(a) for a in (m1, S1, m2, S2)]
    got = gk.frechet_distance(gk.FullGaussian(t[0], covariance=t[1]),
                              gk.FullGaussian(t[2], covariance=t[3]))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-11)

    # gradcheck in float64 at a small D above the polar form's range (17), through symmetric
    # parameterizations of the covariances.
    dd = 17
    a = torch.tensor(rng.normal(size=(dd, dd)), requires_grad=True)
    b = torch.tensor(rng.normal(size=(dd, dd)), requires_grad=True)
    mu = torch.tensor(rng.normal(size=dd), requires_grad=True)
    eye = torch.eye(dd, dtype=torch.float64)

    def f(a, b, mu):
        c1 = a @ a.T / dd + 0.5 * eye
        c2 = b @ b.T / dd + 0.5 * eye
        return gk.frechet_distance(gk.FullGaussian(mu, covariance=c1),
                                   gk.FullGaussian(torch.zeros(dd, dtype=torch.float64),
                                                   covariance=c2))

    assert torch.autograd.gradcheck(f, (a, b, mu))
