"""gausskl knn: the K smallest KL(p_i || q_j) per row, against brute force on the oracle's
pairwise matrix (np.lexsort by (kl, j): ascending, ties to the lower index)."""

import numpy as np
import pytest

import reference_np as ref
from cli_helpers import FAMILIES, assert_close, gaussians, parse_knn_csv, save


def with_duplicates(g, order):
    """The batch with its rows taken in `order` (repeated rows give exact ties)."""
    return {k: v[order] for k, v in g.items()}


def check(indices, values, matrix, k, dtype, exclude_self=False):
    want_idx, want_kl = ref.knn(matrix, k, exclude_self)
    np.testing.assert_array_equal(indices, want_idx)
    assert_close(values, want_kl, dtype)


@pytest.mark.parametrize("kind", FAMILIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_npz_output_matches_brute_force_with_ties(gausskl, tmp_path, rng, kind, dtype):
    p = gaussians(rng, kind, 9, 4, dtype)
    q = with_duplicates(gaussians(rng, kind, 6, 4, dtype), [0, 1, 2, 1, 3, 0, 4, 5, 2, 0])
    out = tmp_path / "nn.npz"
    gausskl.ok("knn", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q),
               "-k", 4, "-o", out)
    with np.load(out) as f:
        assert sorted(f.files) == ["indices", "kl"]
        indices, values = f["indices"], f["kl"]
    assert indices.dtype == np.int64 and indices.shape == (9, 4)
    assert values.dtype == dtype and values.shape == (9, 4)
    check(indices, values, ref.pairwise(p, q), 4, dtype)


@pytest.mark.parametrize("output", ["csv", "-"])
def test_csv_output(gausskl, tmp_path, rng, output):
    p = gaussians(rng, "std", 5, 3)
    q = with_duplicates(gaussians(rng, "std", 4, 3), [3, 0, 3, 1, 2, 0])
    target = tmp_path / "nn.csv" if output == "csv" else "-"
    result = gausskl.ok("knn", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q),
                        "-k", 3, "-o", target)
    text = target.read_text() if output == "csv" else result.stdout
    check(*parse_knn_csv(text, 5, 3), ref.pairwise(p, q), 3, np.float64)


def test_k_equal_to_m(gausskl, tmp_path, rng):
    p = gaussians(rng, "scale_tril", 4, 3)
    q = gaussians(rng, "lowrank", 5, 3)
    out = tmp_path / "nn.npz"
    gausskl.ok("knn", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q),
               "-k", 5, "-o", out)
    with np.load(out) as f:
        check(f["indices"], f["kl"], ref.pairwise(p, q), 5, np.float64)


@pytest.mark.parametrize("exclude_self", [False, True])
def test_without_q(gausskl, tmp_path, rng, exclude_self):
    # Row 4 duplicates row 1: their mutual KL of 0 is not `self`, so --exclude-self keeps it.
    p = with_duplicates(gaussians(rng, "std", 7, 5), [0, 1, 2, 3, 1, 5, 6])
    out = tmp_path / "nn.npz"
    flags = ["--exclude-self"] if exclude_self else []
    gausskl.ok("knn", "--p", *save(tmp_path, "p", p), "-k", 3, "-o", out, *flags)
    with np.load(out) as f:
        indices, values = f["indices"], f["kl"]
    check(indices, values, ref.pairwise(p), 3, np.float64, exclude_self)
    if exclude_self:
        assert not np.any(indices == np.arange(7)[:, None])
        assert indices[1, 0] == 4 and indices[4, 0] == 1
    else:
        np.testing.assert_array_equal(indices[:, 0], [0, 1, 2, 3, 1, 5, 6])
        assert np.all(values[:, 0] == 0)
