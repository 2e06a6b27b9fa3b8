"""gk.kl and gk.kl_standard_normal through the C++ library, against a float64 reference."""

import numpy as np
import pytest

import gausskl as gk
from conftest import PARAMS, gaussian, make_arrays, ref_kl


@pytest.mark.parametrize("fp,pp", PARAMS)
@pytest.mark.parametrize("fq,pq", PARAMS)
def test_every_family_pair_matches_reference(rng, fp, pp, fq, pq):
    a = make_arrays(rng, fp, pp, 7, 4)
    b = make_arrays(rng, fq, pq, 7, 4)
    out = gk.kl(gaussian(a), gaussian(b))
    assert isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == (7,)
    np.testing.assert_allclose(out, ref_kl(a, b), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fp,pp", PARAMS)
def test_float32_in_float32_out(rng, fp, pp):
    a = make_arrays(rng, fp, pp, 5, 3)
    b = make_arrays(rng, "diag", "std", 5, 3)
    p32 = gaussian(a, lambda x: x.astype(np.float32))
    q32 = gaussian(b, lambda x: x.astype(np.float32))
    out = gk.kl(p32, q32)
    assert out.dtype == np.float32
    # The reference on the float32 values themselves: only the rounding of the output differs.
    a32 = {k: v.astype(np.float32) for k, v in a.items()}
    b32 = {k: v.astype(np.float32) for k, v in b.items()}
    np.testing.assert_allclose(out, ref_kl(a32, b32), rtol=2e-5, atol=1e-6)


def test_mixed_precision_gives_float64(rng):
    a = make_arrays(rng, "diag", "std", 4, 3)
    p = gk.DiagGaussian(a["mean"].astype(np.float32), std=a["std"])  # float32 mean, float64 std
    assert p.dtype == "float64"
    q = gaussian(make_arrays(rng, "diag", "var", 4, 3), lambda x: x.astype(np.float32))
    out = gk.kl(p, q)
    assert out.dtype == np.float64


@pytest.mark.parametrize("side", ["p", "q"])
def test_n_equal_one_broadcasts(rng, side):
    one = make_arrays(rng, "full", "covariance", 1, 3)
    many = make_arrays(rng, "diag", "logvar", 6, 3)
    p, q = (one, many) if side == "p" else (many, one)
    out = gk.kl(gaussian(p), gaussian(q))
    assert out.shape == (6,)
    np.testing.assert_allclose(out, ref_kl(p, q), rtol=1e-9)


def test_one_distribution_from_1d_arrays():
    p = gk.DiagGaussian([0.0, 0.0], std=[1.0, 1.0])
    q = gk.DiagGaussian([1.0, 1.0], std=[2.0, 2.0])
    assert (p.n, p.d) == (1, 2)
    # 2 * 1/2 (1/4 + 1/4 - 1 + log 4) per dimension
    np.testing.assert_allclose(gk.kl(p, q), [2 * 0.5 * (0.25 + 0.25 - 1 + np.log(4))], rtol=1e-14)


def test_scalar_scale_is_shared():
    mean = np.arange(6.0).reshape(3, 2)
    p = gk.DiagGaussian(mean, std=2.0)
    np.testing.assert_allclose(
        gk.kl_standard_normal(p), 0.5 * np.sum(4 + mean**2 - 1 - np.log(4), 1), rtol=1e-14
    )


@pytest.mark.parametrize("fp,pp", PARAMS)
def test_kl_standard_normal(rng, fp, pp):
    a = make_arrays(rng, fp, pp, 6, 5)
    std_normal = {"mean": np.zeros((1, 5)), "var": np.ones((1, 5))}
    np.testing.assert_allclose(
        gk.kl_standard_normal(gaussian(a)), ref_kl(a, std_normal), rtol=1e-9, atol=1e-12
    )


def test_kl_of_itself_is_exactly_zero(rng):
    for fam, par in PARAMS:
        g = gaussian(make_arrays(rng, fam, par, 5, 4))
        assert np.all(gk.kl(g, g) == 0) if fam == "diag" else np.allclose(gk.kl(g, g), 0, atol=1e-12)


def test_mpmath_value():
    """A hard-coded value computed with mpmath at 50 digits (the article's example done in nats:
    the log10 version gives 0.1486)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    mp_, vp, mq, vq = [1.0, 2.0], [2.0, 0.5], [0.0, 2.5], [1.0, 3.0]
    expected = sum(
        mpmath.mpf(1) / 2 * (mpmath.mpf(a) / c + (mpmath.mpf(m1) - m2) ** 2 / c - 1
                             - mpmath.log(a) + mpmath.log(c))
        for m1, a, m2, c in zip(mp_, vp, mq, vq)
    )
    out = gk.kl(gk.DiagGaussian(mp_, var=vp), gk.DiagGaussian(mq, var=vq))
    assert out.shape == ()  # two single distributions: a 0-d result, as torch gives
    assert abs(float(out) - float(expected)) <= 4e-16 * float(expected)


def test_tiny_divergence_keeps_relative_accuracy():
    # q a hair away from p: the expm1 form keeps relative accuracy where naive forms give 0 or
    # noise. KL = 1/2 sum (expm1(r) - r) ~ r^2 / 4 per dimension with r = log v_p - log v_q.
    v = np.full((1, 8), 1.7)
    eps = 1e-7
    out = gk.kl(gk.DiagGaussian(np.zeros((1, 8)), var=v),
                gk.DiagGaussian(np.zeros((1, 8)), var=v * np.exp(-eps)))
    expected = 8 * 0.5 * (np.expm1(eps) - eps)
    np.testing.assert_allclose(out, [expected], rtol=1e-8)


@pytest.mark.parametrize("level", [1e-8, 1e-12])
@pytest.mark.parametrize("diagonal_too", [False, True])
def test_tiny_low_rank_divergence_keeps_relative_accuracy(level, diagonal_too):
    """D = 6, R = 2, q's cov_factor = W (1 + level noise), same mean, the diagonal the same or
    perturbed as well: relative error <= 1e-6 of the tiny value against mpmath at 60 digits
    (the form of pair/kl.hpp cancelled: 23% at 1e-8, and 0 in 30 of 200 seeds with the diagonal
    perturbed). The torch path's twin: test_torch_path_exact.py."""
    mpmath = pytest.importorskip("mpmath")
    from conftest import mp_kl_low_rank

    mpmath.mp.dps = 60
    for seed in range(20):
        rng = np.random.default_rng(seed)
        mean = rng.normal(size=(1, 6))
        w = rng.normal(size=(1, 6, 2))
        dg = rng.uniform(0.5, 2, (1, 6))
        w2 = w * (1 + level * rng.normal(size=w.shape))
        dg2 = dg * (1 + level * rng.normal(size=dg.shape)) if diagonal_too else dg
        exact = float(mp_kl_low_rank(mean[0], w[0], dg[0], mean[0], w2[0], dg2[0]))
        p = gk.LowRankGaussian(mean, cov_factor=w, cov_diag=dg)
        q = gk.LowRankGaussian(mean, cov_factor=w2, cov_diag=dg2)
        for got in (gk.kl(p, q)[0], gk.pairwise_kl(p, q)[0, 0], gk.knn_kl(p, q, k=1)[1][0, 0]):
            assert abs(float(got) - exact) <= 1e-6 * exact, (seed, float(got), exact)
