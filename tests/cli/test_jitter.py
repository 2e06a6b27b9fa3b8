"""--jitter: a covariance or precision matrix that is not positive definite is factored with EPS
added to its diagonal (only those), with a note on stderr; without it, exit 2. The expected
values come from the NumPy oracle on the matrices with EPS added by hand."""

import numpy as np
import pytest

import reference_np as ref
from cli_helpers import assert_close, save


def batches(kind):
    """p: 3 diagonal Gaussians; q: 3 full ones, the middle one singular (not positive definite)."""
    rng = np.random.default_rng(7)
    p = {"mean": rng.normal(size=(3, 2)), "std": rng.uniform(0.5, 2, (3, 2))}
    cov = np.array([[[2.0, 0.5], [0.5, 1.0]], [[1.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [0.0, 3.0]]])
    if kind == "precision_matrix":
        cov = np.array([np.linalg.inv(c) if i != 1 else c for i, c in enumerate(cov)])
    return p, {"mean": rng.normal(size=(3, 2)), kind: cov}


@pytest.mark.parametrize("kind", ["covariance", "precision_matrix"])
def test_jitter_fixes_only_the_singular_matrix(gausskl, tmp_path, kind):
    p, q = batches(kind)
    spec = ["--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q)]
    out = tmp_path / "kl.npy"

    refused = gausskl("kl", *spec, "-o", out)
    assert refused.returncode == 2 and not out.exists()
    assert "q.scale (%s) is not positive definite at distribution 1" % kind in refused.stderr
    assert "--jitter EPS" in refused.stderr

    result = gausskl.ok("kl", *spec, "--jitter", "1e-6", "-o", out)
    assert "1 q distribution(s) were not positive definite" in result.stderr
    fixed = dict(q)
    fixed[kind] = q[kind].copy()
    fixed[kind][1] += 1e-6 * np.eye(2)
    assert_close(np.load(out), ref.kl(p, fixed), np.float64)


def test_jitter_leaves_positive_definite_matrices_alone(gausskl, tmp_path):
    p, q = batches("covariance")
    q["covariance"][1] = np.eye(2)
    spec = ["--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q)]
    plain = gausskl.ok("kl", *spec, "-o", tmp_path / "a.npy")
    jittered = gausskl.ok("kl", *spec, "--jitter", "0.5", "-o", tmp_path / "b.npy")
    assert plain.stderr == jittered.stderr == ""
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()


def test_negative_jitter_is_a_usage_error(gausskl, tmp_path):
    p, q = batches("covariance")
    spec = ["--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q)]
    result = gausskl("pairwise", *spec, "--jitter", "-1", "-o", tmp_path / "x.npy")
    assert result.returncode == 2 and "--jitter" in result.stderr
    assert not (tmp_path / "x.npy").exists()
