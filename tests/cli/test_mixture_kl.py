"""gausskl mixture-kl: mixtures in files (components on axis 1, weights or logits beside them),
every method against the Python package's gk.mixture_kl (an implementation of its own: NumPy
blocks through the Python bindings) and the variational method against a NumPy reference of its
formula; errors and no output on bad input."""

import numpy as np
import pytest

from cli_helpers import gaussians

METHODS = ("variational", "upper_bound", "lower_bound", "product", "matched")


def mixtures(rng, kind, m, c, d):
    """m mixtures of c components: the arrays [m, c, ...] of `kind` and weights [m, c]."""
    g = gaussians(rng, kind, m * c, d)
    arrays = {k: v.reshape((m, c, *v.shape[1:])) for k, v in g.items()}
    return arrays, rng.dirichlet(np.ones(c), m)


def as_gk(arrays, weights=None, logits=None):
    import gausskl as gk

    a = dict(arrays)
    mean = a.pop("mean")
    if "cov_factor" in a:
        comps = gk.LowRankGaussian(mean, cov_factor=a["cov_factor"], cov_diag=a["cov_diag"])
    elif len(a) == 1 and next(iter(a)) in ("std", "var", "logvar", "precision"):
        comps = gk.DiagGaussian(mean, **a)
    else:
        comps = gk.FullGaussian(mean, **a)
    return gk.GaussianMixture(comps, weights=weights, logits=logits)


def variational_np(fm, fs, fw, gm, gs, gw):
    """Hershey & Olsen's variational KL between diagonal mixtures, from the closed-form KL."""
    def kl(m1, s1, m2, s2):  # [C, K]
        v1, v2 = s1[:, None] ** 2, s2[None] ** 2
        return 0.5 * (v1 / v2 + (m2[None] - m1[:, None]) ** 2 / v2 - 1 + np.log(v2 / v1)).sum(-1)

    def lse(x):
        t = x.max(-1, keepdims=True)
        return (t + np.log(np.exp(x - t).sum(-1, keepdims=True)))[..., 0]

    own = lse(np.log(fw)[None] - kl(fm, fs, fm, fs))
    cross = lse(np.log(gw)[None] - kl(fm, fs, gm, gs))
    return float((fw * (own - cross)).sum())


@pytest.mark.parametrize("fk,gk_", [("std", "scale_tril"), ("lowrank", "covariance"),
                                    ("precision_matrix", "var")])
@pytest.mark.parametrize("method", METHODS + ("bounds",))
def test_methods_match_the_python_package(gausskl, tmp_path, rng, fk, gk_, method):
    import gausskl as gk

    fa, fw = mixtures(rng, fk, 4, 3, 5)
    ga, gl = mixtures(rng, gk_, 4, 2, 5)
    logits = np.log(gl) + 0.7  # any finite values
    np.savez(tmp_path / "f.npz", weights=fw, **fa)
    np.savez(tmp_path / "g.npz", logits=logits, **ga)
    gausskl.ok("mixture-kl", "--p", tmp_path / "f.npz", "--q", tmp_path / "g.npz", "--method",
               method, "-o", tmp_path / "o.npy")
    got = np.load(tmp_path / "o.npy")
    f, g = as_gk(fa, weights=fw), as_gk(ga, logits=logits)
    if method == "bounds":
        want = np.stack(gk.mixture_kl_bounds(f, g), -1)
        assert got.shape == (4, 2) and (got[:, 0] <= got[:, 1]).all()
    else:
        want = gk.mixture_kl(f, g, method=method)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


def test_variational_against_numpy(gausskl, tmp_path, rng):
    fa, fw = mixtures(rng, "std", 3, 4, 6)
    ga, gw = mixtures(rng, "std", 3, 5, 6)
    np.savez(tmp_path / "f.npz", weights=fw, **fa)
    np.savez(tmp_path / "g.npz", weights=gw, **ga)
    out = gausskl.ok("mixture-kl", "--p", tmp_path / "f.npz", "--q", tmp_path / "g.npz", "-o",
                     "-").stdout
    got = np.loadtxt(out.splitlines())
    want = [variational_np(fa["mean"][i], fa["std"][i], fw[i], ga["mean"][i], ga["std"][i], gw[i])
            for i in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_single_gaussians_give_kl(gausskl, tmp_path, rng):
    """One component each: variational is KL, and so are both bounds (the tight ones)."""
    p, q = gaussians(rng, "scale_tril", 5, 4), gaussians(rng, "std", 5, 4)
    np.savez(tmp_path / "p.npz", **p)
    np.savez(tmp_path / "q.npz", **q)
    kl = np.loadtxt(gausskl.ok("kl", "--p", tmp_path / "p.npz", "--q", tmp_path / "q.npz", "-o",
                               "-").stdout.splitlines())
    np.savez(tmp_path / "f.npz", weights=np.ones((5, 1)),
             **{k: v[:, None] for k, v in p.items()})
    np.savez(tmp_path / "g.npz", weights=np.ones((5, 1)),
             **{k: v[:, None] for k, v in q.items()})
    for method in ("variational", "upper_bound", "matched"):
        got = np.loadtxt(gausskl.ok("mixture-kl", "--p", tmp_path / "f.npz", "--q",
                                    tmp_path / "g.npz", "--method", method, "-o",
                                    "-").stdout.splitlines())
        np.testing.assert_allclose(got, kl, rtol=1e-12)


def test_items_one_mixture_broadcast_and_self(gausskl, tmp_path, rng):
    """NAME=FILE items with weights=FILE; one mixture ([C, D]) paired with each of a batch; f = g
    gives 0."""
    import gausskl as gk

    fa, fw = mixtures(rng, "std", 1, 3, 4)
    ga, gw = mixtures(rng, "std", 6, 2, 4)
    np.save(tmp_path / "mu.npy", fa["mean"][0])
    np.save(tmp_path / "s.npy", fa["std"][0])
    np.save(tmp_path / "w.npy", fw[0])
    np.savez(tmp_path / "g.npz", weights=gw, **ga)
    spec = [f"mean={tmp_path / 'mu.npy'}", f"std={tmp_path / 's.npy'}",
            f"weights={tmp_path / 'w.npy'}"]
    got = np.load(tmp_path / "o.npy") if gausskl.ok(
        "mixture-kl", "--p", *spec, "--q", tmp_path / "g.npz", "-o", tmp_path / "o.npy") else None
    f = gk.GaussianMixture(gk.DiagGaussian(fa["mean"][0], std=fa["std"][0]), weights=fw[0])
    want = gk.mixture_kl(f, as_gk(ga, weights=gw))
    np.testing.assert_allclose(got, want, rtol=1e-11)
    np.savez(tmp_path / "f.npz", weights=fw, **fa)
    out = gausskl.ok("mixture-kl", "--p", tmp_path / "g.npz", "--q", tmp_path / "g.npz", "-o",
                     "-").stdout
    assert np.all(np.loadtxt(out.splitlines()) == 0)


@pytest.mark.parametrize("change,message", [
    (lambda a: a.update(weights=a["weights"] * 1.01), "[mixture-kl] f.weights must sum to 1"),
    (lambda a: a["weights"].__setitem__((1, 0), -0.1), "f.weights must be non-negative"),
    (lambda a: a["weights"].__setitem__((0, 1), np.nan), "f.weights must be finite"),
    (lambda a: a.pop("weights"), "exactly one of weights and logits"),
    (lambda a: a.update(weights=a["weights"][:, :2]), "components on axis 1"),
    (lambda a: a.update(std=a["std"][:2]), "its first axes must be [M, C]"),
])
def test_bad_input_is_an_error_and_writes_nothing(gausskl, tmp_path, rng, change, message):
    fa, fw = mixtures(rng, "std", 3, 3, 4)
    arrays = {"weights": fw, **fa}
    np.savez(tmp_path / "g.npz", **arrays)
    change(arrays)
    np.savez(tmp_path / "f.npz", **arrays)
    r = gausskl("mixture-kl", "--p", tmp_path / "f.npz", "--q", tmp_path / "g.npz", "-o",
                tmp_path / "o.npy")
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert not (tmp_path / "o.npy").exists()


def test_not_positive_definite_names_mixture_and_component(gausskl, tmp_path, rng):
    fa, fw = mixtures(rng, "covariance", 2, 3, 3)
    fa["covariance"][1, 2] = np.diag([1.0, -1.0, 1.0])
    np.savez(tmp_path / "f.npz", weights=fw, **fa)
    r = gausskl("mixture-kl", "--p", tmp_path / "f.npz", "--q", tmp_path / "f.npz", "-o", "-")
    assert r.returncode == 2 and "f's mixture 1, component 2" in r.stderr, r.stderr
    assert "--jitter" in r.stderr
