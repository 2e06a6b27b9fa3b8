"""gausskl kl: row-wise KL(p_i || q_i), checked against the NumPy oracle (reference_np)."""

import numpy as np
import pytest

import reference_np as ref
from cli_helpers import DIAG_PARAMS, FAMILIES, FULL_PARAMS, assert_close, gaussians, run_to_npy


def run_kl(gausskl, tmp_path, p, q=None):
    return run_to_npy(gausskl, tmp_path, "kl", p, q)


@pytest.mark.parametrize("q_kind", FAMILIES)
@pytest.mark.parametrize("p_kind", FAMILIES)
def test_family_pairs(gausskl, tmp_path, rng, p_kind, q_kind):
    p = gaussians(rng, p_kind, 6, 5)
    q = gaussians(rng, q_kind, 6, 5)
    assert_close(run_kl(gausskl, tmp_path, p, q), ref.kl(p, q), np.float64)


@pytest.mark.parametrize("kind", DIAG_PARAMS + FULL_PARAMS)
def test_every_parameterization(gausskl, tmp_path, rng, kind):
    p = gaussians(rng, kind, 7, 4)
    q = gaussians(rng, kind, 7, 4)
    assert_close(run_kl(gausskl, tmp_path, p, q), ref.kl(p, q), np.float64)


@pytest.mark.parametrize("kind", FAMILIES)
@pytest.mark.parametrize("side", ["p", "q"])
def test_n1_broadcasts(gausskl, tmp_path, rng, kind, side):
    p = gaussians(rng, kind, 1 if side == "p" else 5, 3)
    q = gaussians(rng, kind, 1 if side == "q" else 5, 3)
    got = run_kl(gausskl, tmp_path, p, q)
    assert got.shape == (5,)
    assert_close(got, ref.kl(p, q), np.float64)


@pytest.mark.parametrize("kind", DIAG_PARAMS + FULL_PARAMS + ("lowrank",))
def test_without_q_is_standard_normal(gausskl, tmp_path, rng, kind):
    p = gaussians(rng, kind, 5, 4)
    got = run_kl(gausskl, tmp_path, p)
    assert_close(got, ref.kl(p, ref.standard_normal(4)), np.float64)


def test_published_example(gausskl, tmp_path):
    # A published worked example of diagonal KL (which reports 0.1486 by using log10). Exact value
    # from mpmath at 40 digits: with v = s^2, 1/2 * sum((v1 + (m1 - m2)^2) / v2 - 1 - log(v1) + log(v2))
    # = 0.6669851763185995096279716562124555158945.
    p = {"mean": np.array([2.0, 4.0, 6.0]), "std": np.array([1.0, 2.0, 3.0])}
    q = {"mean": np.array([3.0, 5.0, 8.0]), "std": np.array([1.5, 2.5, 4.0])}
    got = run_kl(gausskl, tmp_path, p, q)
    assert_close(got.ravel(), np.array([0.6669851763185995096]), np.float64)


@pytest.mark.parametrize("kind", FAMILIES)
def test_identical_p_q_gives_zero(gausskl, tmp_path, rng, kind):
    p = gaussians(rng, kind, 4, 6)
    p["mean"] += 1e3  # a shared offset must not leak into the result
    assert_close(run_kl(gausskl, tmp_path, p, p), np.zeros(4), np.float64)

