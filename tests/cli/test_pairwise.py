"""gausskl pairwise: KL(p_i || q_j) for all pairs, checked against the NumPy oracle."""

import numpy as np
import pytest

import reference_np as ref
from cli_helpers import FAMILIES, assert_close, gaussians, run_to_npy, save


def run_pairwise(gausskl, tmp_path, p, q=None):
    return run_to_npy(gausskl, tmp_path, "pairwise", p, q)


@pytest.mark.parametrize("q_kind", FAMILIES)
@pytest.mark.parametrize("p_kind", FAMILIES)
def test_family_pairs(gausskl, tmp_path, rng, p_kind, q_kind):
    p = gaussians(rng, p_kind, 5, 4)
    q = gaussians(rng, q_kind, 7, 4)
    assert_close(run_pairwise(gausskl, tmp_path, p, q), ref.pairwise(p, q), np.float64)


# std and scale_tril are covered by the family pairs above.
@pytest.mark.parametrize("kind", ["var", "logvar", "precision", "covariance", "precision_matrix"])
def test_other_parameterizations(gausskl, tmp_path, rng, kind):
    p = gaussians(rng, kind, 4, 3)
    q = gaussians(rng, kind, 6, 3)
    assert_close(run_pairwise(gausskl, tmp_path, p, q), ref.pairwise(p, q), np.float64)


@pytest.mark.parametrize("n, m", [(1, 6), (6, 1), (1, 1)])
def test_single_distribution_sides(gausskl, tmp_path, rng, n, m):
    p = gaussians(rng, "std", n, 3)
    q = gaussians(rng, "scale_tril", m, 3)
    assert_close(run_pairwise(gausskl, tmp_path, p, q), ref.pairwise(p, q), np.float64)


def test_one_d_mean_is_one_row(gausskl, tmp_path, rng):
    p = {k: v[0] for k, v in gaussians(rng, "std", 1, 5).items()}
    q = gaussians(rng, "std", 4, 5)
    got = run_pairwise(gausskl, tmp_path, p, q)
    assert got.shape == (1, 4)
    assert_close(got, ref.pairwise(p, q), np.float64)


@pytest.mark.parametrize("kind", FAMILIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_without_q_diagonal_is_exactly_zero(gausskl, tmp_path, rng, kind, dtype):
    # Large shared offsets and near-duplicate rows: where an expanded (GEMM) form cancels.
    p = gaussians(rng, kind, 40, 8)
    p["mean"] = 1e3 + p["mean"][:1] + 1e-4 * p["mean"]
    p = {k: v.astype(dtype) for k, v in p.items()}
    got = run_pairwise(gausskl, tmp_path, p)
    assert got.dtype == dtype
    assert np.all(np.diag(got) == 0), np.diag(got)
    assert_close(got, ref.pairwise(p), dtype)


def test_rows_match_kl(gausskl, tmp_path, rng):
    p = gaussians(rng, "lowrank", 3, 6)
    q = gaussians(rng, "covariance", 3, 6)
    matrix = run_pairwise(gausskl, tmp_path, p, q)
    gausskl.ok("kl", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q),
               "-o", tmp_path / "rows.npy")
    assert_close(np.diag(matrix), np.load(tmp_path / "rows.npy"), np.float64)
