"""gk.pairwise_kl and gk.knn_kl through the C++ library, against a float64 reference."""

import numpy as np
import pytest

import gausskl as gk
from conftest import PARAMS, gaussian, make_arrays, ref_pairwise


@pytest.mark.parametrize("fp,pp", PARAMS)
@pytest.mark.parametrize("fq,pq", [("diag", "logvar"), ("full", "scale_tril"),
                                   ("full", "precision_matrix"), ("low_rank", "cov_factor")])
def test_pairwise_matches_reference(rng, fp, pp, fq, pq):
    a = make_arrays(rng, fp, pp, 6, 4)
    b = make_arrays(rng, fq, pq, 5, 4)
    out = gk.pairwise_kl(gaussian(a), gaussian(b))
    assert out.shape == (6, 5) and out.dtype == np.float64
    np.testing.assert_allclose(out, ref_pairwise(a, b), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fp,pp", PARAMS)
def test_pairwise_without_q_is_p_against_itself(rng, fp, pp):
    a = make_arrays(rng, fp, pp, 6, 3)
    out = gk.pairwise_kl(gaussian(a))
    assert np.all(np.diag(out) == 0)
    np.testing.assert_allclose(out, ref_pairwise(a, a), rtol=1e-9, atol=1e-12)


def test_pairwise_float32_hard_cases_stay_accurate(rng):
    # The forum's case in float32 where the GEMM expansion fails: means sharing an offset of 1e3,
    # and near-duplicate rows (whose KL is a small difference of large terms).
    mean = 1e3 + rng.normal(size=(50, 16))
    mean[1] = mean[0] + 1e-3
    std = rng.uniform(0.5, 2.0, size=(50, 16))
    std[1] = std[0]
    m32, s32 = mean.astype(np.float32), std.astype(np.float32)
    out = gk.pairwise_kl(gk.DiagGaussian(m32, std=s32))
    assert out.dtype == np.float32
    ref = ref_pairwise({"mean": m32, "std": s32}, {"mean": m32, "std": s32})
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    assert out.min() >= 0


def brute_knn(matrix, k, exclude_self=False):
    matrix = np.array(matrix, dtype=np.float64)
    if exclude_self:
        np.fill_diagonal(matrix, np.inf)
    cols = np.arange(matrix.shape[1])
    idx = np.array([np.lexsort((cols, row))[:k] for row in matrix], dtype=np.int64)
    return idx, np.take_along_axis(matrix, idx, 1)


@pytest.mark.parametrize("fp,pp", [("diag", "std"), ("full", "covariance"),
                                   ("low_rank", "cov_factor")])
def test_knn_against_brute_force(rng, fp, pp):
    a = make_arrays(rng, fp, pp, 9, 3)
    b = make_arrays(rng, "diag", "var", 12, 3)
    idx, val = gk.knn_kl(gaussian(a), gaussian(b), k=4)
    assert idx.dtype == np.int64 and idx.shape == (9, 4) and val.shape == (9, 4)
    ref_idx, ref_val = brute_knn(ref_pairwise(a, b), 4)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(val, ref_val, rtol=1e-9)


def test_knn_self_and_exclude_self(rng):
    a = make_arrays(rng, "diag", "std", 10, 3)
    idx, val = gk.knn_kl(gaussian(a), k=3)
    np.testing.assert_array_equal(idx[:, 0], np.arange(10))  # each its own nearest, KL 0
    assert np.all(val[:, 0] == 0)
    idx, val = gk.knn_kl(gaussian(a), k=9, exclude_self=True)
    ref_idx, ref_val = brute_knn(ref_pairwise(a, a), 9, exclude_self=True)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(val, ref_val, rtol=1e-9)


def test_knn_ties_go_to_the_lower_index():
    mean = np.zeros((5, 2))
    q = gk.DiagGaussian(mean, std=1.0)  # five identical distributions
    idx, val = gk.knn_kl(gk.DiagGaussian(np.ones((2, 2)), std=1.0), q, k=3)
    np.testing.assert_array_equal(idx, [[0, 1, 2], [0, 1, 2]])
