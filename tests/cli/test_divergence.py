"""gausskl kl --divergence KIND [--alpha A]: every kind on every family pair against a NumPy
reference of the textbook formulas (docs/divergences.md), and the option's errors."""

import numpy as np
import pytest

import reference_np as ref
from cli_helpers import FAMILIES, Target, assert_close, gaussians, save


def _reference(kind, p, q, alpha=None):
    p, q = ref._batched(p), ref._batched(q)
    mp, mq = p["mean"], q["mean"]
    S1, S2 = ref._covariance(p), ref._covariance(q)
    n = max(len(mp), len(mq))
    mp, mq = np.broadcast_to(mp, (n,) + mp.shape[1:]), np.broadcast_to(mq, (n,) + mq.shape[1:])
    S1, S2 = np.broadcast_to(S1, (n,) + S1.shape[1:]), np.broadcast_to(S2, (n,) + S2.shape[1:])
    delta = mp - mq
    logdet = lambda S: np.linalg.slogdet(S)[1]  # noqa: E731
    quad = lambda S: np.einsum("ni,ni->n", delta, np.linalg.solve(S, delta[..., None])[..., 0])  # noqa: E731,E501

    def kl(A, B):
        d = A.shape[-1]
        return 0.5 * (np.trace(np.linalg.solve(B, A), axis1=1, axis2=2) + quad(B) - d
                      + logdet(B) - logdet(A))

    if kind == "kl":
        return kl(S1, S2)
    if kind == "jeffreys":
        return kl(S1, S2) + kl(S2, S1)
    if kind in ("bhattacharyya", "hellinger"):
        S = (S1 + S2) / 2
        b = quad(S) / 8 + 0.5 * (logdet(S) - 0.5 * (logdet(S1) + logdet(S2)))
        return b if kind == "bhattacharyya" else -np.expm1(-b)
    if kind == "renyi":
        S = alpha * S2 + (1 - alpha) * S1
        return alpha / 2 * quad(S) - (logdet(S) - (1 - alpha) * logdet(S1)
                                      - alpha * logdet(S2)) / (2 * (alpha - 1))
    assert kind == "wasserstein2"
    out = []
    for i in range(n):
        w, V = np.linalg.eigh(S2[i])
        root = (V * np.sqrt(w)) @ V.T
        mid = np.linalg.eigvalsh(root @ S1[i] @ root)
        out.append(delta[i] @ delta[i] + np.trace(S1[i]) + np.trace(S2[i])
                   - 2 * np.sqrt(np.clip(mid, 0, None)).sum())
    return np.array(out)


KINDS = [("jeffreys", None), ("bhattacharyya", None), ("hellinger", None),
         ("wasserstein2", None), ("renyi", 0.5), ("kl", None)]


def run(gausskl, tmp_path, p, q, kind, alpha=None):
    out = tmp_path / "out.npy"
    args = ["kl", "--p", *save(tmp_path, "p", p)]
    if q is not None:
        args += ["--q", *save(tmp_path, "q", q)]
    args += ["--divergence", kind]
    if alpha is not None:
        args += ["--alpha", str(alpha)]
    gausskl.ok(*args, "-o", out)
    return np.load(out)


@pytest.mark.parametrize("kind,alpha", KINDS)
@pytest.mark.parametrize("q_kind", FAMILIES)
@pytest.mark.parametrize("p_kind", FAMILIES)
def test_family_pairs(gausskl, tmp_path, rng, p_kind, q_kind, kind, alpha):
    p = gaussians(rng, p_kind, 4, 3)
    q = gaussians(rng, q_kind, 4, 3)
    got = run(gausskl, tmp_path, p, q, kind, alpha)
    assert_close(got, _reference(kind, p, q, alpha), np.float64)


@pytest.mark.parametrize("kind,alpha", KINDS)
def test_without_q_is_standard_normal(gausskl, tmp_path, rng, kind, alpha):
    p = gaussians(rng, "var", 3, 4)
    got = run(gausskl, tmp_path, p, None, kind, alpha)
    assert_close(got, _reference(kind, p, ref.standard_normal(4), alpha), np.float64)


@pytest.mark.parametrize("kind,alpha", KINDS)
def test_identical_gives_zero(gausskl, tmp_path, rng, kind, alpha):
    p = gaussians(rng, "scale_tril", 3, 4)
    p["mean"] += 1e3
    np.testing.assert_array_equal(run(gausskl, tmp_path, p, p, kind, alpha), np.zeros(3))


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--divergence", "jeff"], "--divergence: KIND must be one of kl, jeffreys, "
         "bhattacharyya, hellinger, wasserstein2, renyi, found jeff"),
        (["--divergence", "renyi"], "[kl] --divergence renyi needs --alpha A"),
        (["--divergence", "renyi", "--alpha", "1"], "[kl] --alpha (the order of the renyi "
         "divergence) must be finite and in (0, 1) or (1, inf), found 1"),
        (["--divergence", "renyi", "--alpha", "-2"], "found -2"),
        (["--divergence", "hellinger", "--alpha", "0.5"],
         "[kl] --alpha is the order of the renyi divergence; --divergence hellinger takes none"),
        (["--alpha", "0.5"], "--divergence kl takes none"),
    ],
)
def test_errors(gausskl, tmp_path, rng, extra, message):
    p = gaussians(rng, "std", 2, 2)
    target = Target(tmp_path / "out", "out.npy")
    r = gausskl("kl", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", p),
                *extra, "-o", target.path)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr, r.stderr
    assert target.snapshot() == target.before


def test_renyi_not_positive_definite_names_the_row(gausskl, tmp_path):
    p = {"mean": np.zeros((2, 2)), "std": np.array([[1.0, 1.0], [1.0, 3.0]])}
    q = {"mean": np.zeros((2, 2)), "std": np.ones((2, 2))}
    target = Target(tmp_path / "out", "out.npy")
    r = gausskl("kl", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q),
                "--divergence", "renyi", "--alpha", "2", "-o", target.path)
    assert r.returncode == 2, r.stderr
    assert "[kl] the renyi divergence is infinite at row 1" in r.stderr, r.stderr
    assert "pivot 1" in r.stderr and "--jitter" not in r.stderr, r.stderr
    assert target.snapshot() == target.before


# ---- pairwise and knn --divergence ----

def _all_pairs_reference(kind, p, q, alpha=None):
    """ref[i, j] = D(p_i || q_j): the row-wise reference on repeated and tiled batches."""
    p, q = ref._batched(p), ref._batched(q)
    n, m = len(p["mean"]), len(q["mean"])
    rep = {k: np.repeat(v, m, axis=0) for k, v in p.items()}
    til = {k: np.tile(v, (n,) + (1,) * (v.ndim - 1)) for k, v in q.items()}
    return _reference(kind, rep, til, alpha).reshape(n, m)


def run_pairs(gausskl, tmp_path, command, p, q, kind, alpha=None, extra=()):
    out = tmp_path / ("out.npy" if command == "pairwise" else "out.npz")
    args = [command, "--p", *save(tmp_path, "p", p)]
    if q is not None:
        args += ["--q", *save(tmp_path, "q", q)]
    args += ["--divergence", kind, *extra]
    if alpha is not None:
        args += ["--alpha", str(alpha)]
    gausskl.ok(*args, "-o", out)
    return np.load(out)


@pytest.mark.parametrize("kind,alpha", KINDS)
@pytest.mark.parametrize("q_kind", FAMILIES)
@pytest.mark.parametrize("p_kind", FAMILIES)
def test_pairwise_family_pairs(gausskl, tmp_path, rng, p_kind, q_kind, kind, alpha):
    p = gaussians(rng, p_kind, 4, 3)
    q = gaussians(rng, q_kind, 3, 3)
    got = run_pairs(gausskl, tmp_path, "pairwise", p, q, kind, alpha)
    assert_close(got, _all_pairs_reference(kind, p, q, alpha), np.float64)


@pytest.mark.parametrize("kind,alpha", KINDS)
def test_pairwise_without_q_and_knn(gausskl, tmp_path, rng, kind, alpha):
    p = gaussians(rng, "scale_tril", 5, 3)
    p["mean"] += 1e3
    matrix = run_pairs(gausskl, tmp_path, "pairwise", p, None, kind, alpha)
    assert_close(matrix, _all_pairs_reference(kind, p, p, alpha), np.float64)
    np.testing.assert_array_equal(np.diag(matrix), np.zeros(5))
    if kind not in ("renyi", "kl"):  # the symmetric kinds: a bit-identical mirror
        np.testing.assert_array_equal(matrix, matrix.T)
    nn = run_pairs(gausskl, tmp_path, "knn", p, None, kind, alpha, ["-k", "2", "--exclude-self"])
    name = kind
    assert sorted(nn.files) == sorted(["indices", name])
    masked = matrix + np.diag(np.full(5, np.inf))
    order = np.argsort(masked, axis=1, kind="stable")[:, :2]
    np.testing.assert_array_equal(nn["indices"], order)
    want = np.take_along_axis(matrix, order, axis=1)
    if kind == "kl":  # knn re-scores its candidates exactly; the matrix is within tolerance
        assert_close(nn[name], want, np.float64)
    else:  # the same exact values, bit for bit
        np.testing.assert_array_equal(nn[name], want)


@pytest.mark.parametrize("command", ["pairwise", "knn"])
@pytest.mark.parametrize(
    "extra,message",
    [
        (["--divergence", "renyi"], "[{c}] --divergence renyi needs --alpha A"),
        (["--divergence", "renyi", "--alpha", "1"], "[{c}] --alpha (the order of the renyi "
         "divergence) must be finite and in (0, 1) or (1, inf), found 1"),
        (["--divergence", "wasserstein2", "--alpha", "0.5"],
         "[{c}] --alpha is the order of the renyi divergence; --divergence wasserstein2 takes "
         "none"),
        (["--divergence", "renyi", "--alpha", "3"],
         "[{c}] the renyi divergence is infinite at p row 1 and q row 0"),
    ],
)
def test_pairs_errors(gausskl, tmp_path, command, extra, message):
    p = {"mean": np.zeros((2, 2)), "std": np.array([[1.0, 1.0], [1.0, 3.0]])}
    q = {"mean": np.zeros((2, 2)), "std": np.ones((2, 2))}
    target = Target(tmp_path / "out", "out.npy" if command == "pairwise" else "out.npz")
    k = ["-k", "1"] if command == "knn" else []
    r = gausskl(command, "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q), *k,
                *extra, "-o", target.path)
    assert r.returncode == 2, r.stderr
    assert message.format(c=command) in r.stderr, r.stderr
    assert target.snapshot() == target.before


def test_frechet_is_wasserstein2(gausskl, tmp_path, rng):
    """--divergence frechet (the name FID's users search for) is wasserstein2, also for all
    pairs, and says so in --help; a singular covariance (fewer samples than dimensions) is
    accepted by wasserstein2 only."""
    p = gaussians(rng, "covariance", 3, 20)
    q = gaussians(rng, "covariance", 3, 20)
    np.testing.assert_array_equal(run(gausskl, tmp_path, p, q, "frechet"),
                                  run(gausskl, tmp_path, p, q, "wasserstein2"))
    assert_close(run(gausskl, tmp_path, p, q, "frechet"), _reference("wasserstein2", p, q),
                 np.float64)
    out = tmp_path / "all.npy"
    gausskl.ok("pairwise", "--p", *save(tmp_path, "p", p), "--divergence", "frechet", "-o", out)
    assert np.load(out).shape == (3, 3)
    x = rng.normal(size=(4, 20))
    sample = {"mean": x.mean(0), "covariance": np.cov(x, rowvar=False)}
    got = run(gausskl, tmp_path, sample, q, "frechet")
    assert np.all(np.isfinite(got)) and np.all(got > 0)
    assert "also spelled frechet" in " ".join(gausskl.ok("kl", "--help").stdout.split())
