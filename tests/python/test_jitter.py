"""The jitter option: covariance or precision matrices that are not positive definite, and only
those, are factored with jitter added to their diagonal; a JitterWarning counts them per side.

Every case runs on NumPy arrays (the library), on CPU tensors (the library) and, with
GAUSSKL_FORCE_TORCH_PATH=1, in torch operations (the path CUDA and MPS tensors take), whose
values, warnings and errors must be the same. Expected values: the same call with the jitter
added by hand to the failing matrices.
"""

import re
import warnings

import numpy as np
import pytest

import gausskl as gk
from conftest import force_torch_path, PARAMS, gaussian, make_arrays, needs_torch

EPS = 0.05
D = 3
MEAN = np.array([[0.5, -1.0, 0.2], [2.0, 0.0, -0.3], [1.0, 1.0, 0.0], [0.0, 0.3, 1.0]])
GOOD = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.0], [0.1, 0.0, 1.5]])
SINGULAR = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
ZERO_VARIANCE = np.diag([1.0, 0.0, 1.0])
# Not positive definite by far: EPS does not help, 1.5 does (robustly, for gradcheck).
INDEFINITE = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])

# Two batches of 4 matrices (used as covariances or as precision matrices): "a" fails at 1 and
# 3, "b" at 2 only.
MATRICES = {
    "a": np.stack([GOOD, SINGULAR, 2.0 * GOOD, ZERO_VARIANCE]),
    "b": np.stack([GOOD, 0.5 * GOOD, SINGULAR, 3.0 * GOOD]),
}
FAILING = {"a": [1, 3], "b": [2]}

PATHS = ["numpy", pytest.param("torch", marks=needs_torch),
         pytest.param("torch_path", marks=needs_torch)]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    if request.param == "torch_path":
        force_torch_path(monkeypatch)
    return request.param


def convert(path, a):
    if path == "numpy":
        return a
    import torch

    return torch.as_tensor(a)


def hand_jittered(name, eps=EPS):
    m = MATRICES[name].copy()
    m[FAILING[name]] += eps * np.eye(D)
    return m


class Make:
    """The batches of one case: the failing matrices as given, or with EPS added by hand."""

    def __init__(self, path, param, fixed):
        self.path, self.param, self.fixed = path, param, fixed

    def full(self, name="a", rows=slice(None)):
        m = hand_jittered(name) if self.fixed else MATRICES[name]
        mean = MEAN if name == "a" else MEAN[::-1].copy()
        return gk.FullGaussian(convert(self.path, mean[rows]),
                               **{self.param: convert(self.path, m[rows])})

    def diag(self):
        std = np.linspace(0.5, 2.0, MEAN.size).reshape(MEAN.shape)
        return gk.DiagGaussian(convert(self.path, MEAN[::-1].copy()), std=convert(self.path, std))


# (id, call, the JitterWarnings expected as (side, count)); a batch compared with itself is p.
CASES = [
    ("kl", lambda m, **kw: gk.kl(m.diag(), m.full(), **kw), [("q", 2)]),
    ("kl", lambda m, **kw: gk.kl(m.full("a"), m.full("b"), **kw), [("p", 2), ("q", 1)]),
    ("kl", lambda m, **kw: gk.kl(m.full("a", rows=[1]), m.diag(), **kw), [("p", 1)]),
    ("kl_standard_normal", lambda m, **kw: gk.kl_standard_normal(m.full(), **kw), [("p", 2)]),
    ("pairwise_kl", lambda m, **kw: gk.pairwise_kl(m.full(), **kw), [("p", 2)]),
    ("pairwise_kl", lambda m, **kw: gk.pairwise_kl(m.diag(), m.full("b"), **kw), [("q", 1)]),
    ("pairwise_kl", lambda m, **kw: gk.pairwise_kl(m.full("a"), m.full("b"), **kw),
     [("p", 2), ("q", 1)]),
    ("knn_kl", lambda m, **kw: gk.knn_kl(m.full(), k=2, **kw), [("p", 2)]),
    ("knn_kl", lambda m, **kw: gk.knn_kl(m.full(), k=3, exclude_self=True, **kw), [("p", 2)]),
    ("knn_kl", lambda m, **kw: gk.knn_kl(m.full("b"), m.full("a"), k=2, **kw),
     [("p", 1), ("q", 2)]),
]
CASE_IDS = [f"{op}-{i}" for i, (op, _, _) in enumerate(CASES)]
FACTORED = ["covariance", "precision_matrix"]


def note(op, side, count, eps=EPS):
    return (f"[{op}] {count} {side} distribution(s) were not positive definite; factored with "
            f"{eps:g} added to the diagonal (jitter)")


def as_numpy(result):
    if isinstance(result, tuple):
        return tuple(as_numpy(r) for r in result)
    return np.asarray(result.detach() if hasattr(result, "detach") else result)


def assert_same(got, want):
    got, want = as_numpy(got), as_numpy(want)
    if isinstance(got, tuple):  # knn: (indices, values)
        np.testing.assert_array_equal(got[0], want[0])
        got, want = got[1], want[1]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def no_jitter_warning(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error", gk.JitterWarning)
        return call()


@pytest.mark.parametrize("param", FACTORED)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_without_jitter_it_is_an_error_that_names_jitter(path, param, case):
    op, run, _ = case
    with pytest.raises(ValueError) as e:
        run(Make(path, param, fixed=False))
    message = str(e.value)
    assert re.match(rf"\[{op}\] [pq]\.scale \({param}\) is not positive definite at "
                    r"distribution \d+: pivot \d+ is ", message), message
    assert message.endswith("(to regularize, add eps to the diagonal only: C + eps * I); "
                            "jitter=EPS does that for each such matrix")


@pytest.mark.parametrize("param", FACTORED)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_jitter_gives_the_result_of_the_hand_jittered_matrices(path, param, case):
    op, run, expected = case
    with pytest.warns(gk.JitterWarning) as record:
        got = run(Make(path, param, fixed=False), jitter=EPS)
    want = no_jitter_warning(lambda: run(Make(path, param, fixed=True)))
    assert_same(got, want)
    assert [str(w.message) for w in record] == [note(op, s, n) for s, n in expected]
    assert all(w.filename == __file__ for w in record)  # the caller's line


@needs_torch
@pytest.mark.parametrize("param", FACTORED)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_torch_path_matches_the_library(monkeypatch, param, case):
    op, run, expected = case
    with pytest.warns(gk.JitterWarning) as library:
        want = run(Make("numpy", param, fixed=False), jitter=EPS)
    monkeypatch.setenv("GAUSSKL_FORCE_TORCH_PATH", "1")
    with pytest.warns(gk.JitterWarning) as torch_path:
        got = run(Make("torch", param, fixed=False), jitter=EPS)
    got, want = as_numpy(got), as_numpy(want)
    if isinstance(got, tuple):
        np.testing.assert_array_equal(got[0], want[0])
        got, want = got[1], want[1]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert [str(w.message) for w in torch_path] == [str(w.message) for w in library]


@pytest.mark.parametrize("fam,param", PARAMS)
def test_nothing_to_jitter_means_no_warning_and_the_same_result(path, rng, fam, param):
    p = gaussian(make_arrays(rng, fam, param, 4, D), lambda a: convert(path, a))
    q = gaussian(make_arrays(rng, "full", "covariance", 4, D), lambda a: convert(path, a))
    for run in (lambda **kw: gk.kl(p, q, **kw), lambda **kw: gk.kl_standard_normal(p, **kw),
                lambda **kw: gk.pairwise_kl(p, **kw), lambda **kw: gk.pairwise_kl(p, q, **kw),
                lambda **kw: gk.knn_kl(p, q, k=2, **kw)):
        got = no_jitter_warning(lambda: run(jitter=1e-3))
        want = run()
        got, want = as_numpy(got), as_numpy(want)
        for g, w in zip(got if isinstance(got, tuple) else [got],
                        want if isinstance(want, tuple) else [want]):
            np.testing.assert_array_equal(g, w)


def test_scale_tril_is_never_factored_so_jitter_does_not_apply(path):
    # A factor is used as given; one with a zero on its diagonal breaks a validation rule.
    L = np.repeat(np.eye(D)[None], 2, 0)
    L[1, 2, 2] = 0.0
    p = gk.FullGaussian(convert(path, MEAN[:2]), scale_tril=convert(path, L))
    with pytest.raises(ValueError, match=r"^\[kl_standard_normal\] p\.scale \(scale_tril\) must "
                                         r"have a positive diagonal"):
        gk.kl_standard_normal(p, jitter=1.0)


@pytest.mark.parametrize("param", FACTORED)
def test_too_small_a_jitter_is_the_same_error(path, param):
    q = np.stack([GOOD, INDEFINITE])
    p = gk.DiagGaussian(convert(path, MEAN[:2]), std=convert(path, np.ones((2, D))))
    q = gk.FullGaussian(convert(path, MEAN[:2]), **{param: convert(path, q)})
    errors = []
    for jitter in (0.0, EPS):
        with warnings.catch_warnings(record=True) as record, pytest.raises(ValueError) as e:
            warnings.simplefilter("always")
            gk.kl(p, q, jitter=jitter)
        assert not [w for w in record if w.category is gk.JitterWarning]
        errors.append(str(e.value))
    # The same error; the library's pivot value is that of the jittered matrix.
    prefix = f"[kl] q.scale ({param}) is not positive definite at distribution 1: pivot "
    assert errors[0].startswith(prefix) and errors[1].startswith(prefix)
    assert errors[0].endswith("jitter=EPS does that for each such matrix")
    assert errors[1].endswith("jitter=EPS does that for each such matrix")
    with pytest.warns(gk.JitterWarning, match=re.escape(note("kl", "q", 1, 1.5))):
        gk.kl(p, q, jitter=1.5)


OPS = [
    ("kl", lambda p, **kw: gk.kl(p, p, **kw)),
    ("kl_standard_normal", lambda p, **kw: gk.kl_standard_normal(p, **kw)),
    ("pairwise_kl", lambda p, **kw: gk.pairwise_kl(p, **kw)),
    ("knn_kl", lambda p, **kw: gk.knn_kl(p, k=1, **kw)),
]


@pytest.mark.parametrize("op,run", OPS, ids=[op for op, _ in OPS])
@pytest.mark.parametrize("bad,text", [(-1.0, "-1"), (-1e-300, "-1e-300"), (np.nan, "nan"),
                                      (np.inf, "inf"), (-np.inf, "-inf")])
def test_bad_jitter_is_the_library_error(path, op, run, bad, text):
    p = gk.DiagGaussian(convert(path, MEAN), std=convert(path, np.ones((4, D))))
    message = f"[{op}] options.jitter must be finite and >= 0, found {text}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        run(p, jitter=bad)


def test_jitter_must_be_a_number():
    p = gk.DiagGaussian(MEAN, std=np.ones((4, D)))
    with pytest.raises(TypeError, match=r"^\[kl\] jitter must be a real number, found str"):
        gk.kl(p, p, jitter="0.1")


def test_float32_inputs_get_the_jitter_in_float64():
    p = gk.FullGaussian(MEAN.astype(np.float32), covariance=MATRICES["a"].astype(np.float32))
    with pytest.warns(gk.JitterWarning, match=re.escape(note("pairwise_kl", "p", 2))):
        got = gk.pairwise_kl(p, jitter=EPS)
    assert got.dtype == np.float32
    want = gk.pairwise_kl(gk.FullGaussian(MEAN, covariance=hand_jittered("a")))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- gradients -------------------------------------------------------------------------------

GRAD_EPS = 1.5  # makes INDEFINITE positive definite, far from the boundary
GRAD_MATRICES = np.stack([GOOD, INDEFINITE, 2.0 * GOOD])

GRAD_OPS = [
    ("kl", lambda diag, full, **kw: gk.kl(diag, full, **kw)),
    ("kl_standard_normal", lambda diag, full, **kw: gk.kl_standard_normal(full, **kw)),
    ("pairwise_kl", lambda diag, full, **kw: gk.pairwise_kl(full, diag, **kw)),
    ("knn_kl", lambda diag, full, **kw: gk.knn_kl(full, diag, k=2, **kw)[1]),
]


def grad_batches(param, mean, std, matrices):
    # Symmetrized inside the graph, so gradcheck's one-sided nudges stay valid input.
    full = gk.FullGaussian(mean, **{param: 0.5 * (matrices + matrices.transpose(-1, -2))})
    return gk.DiagGaussian(mean.flip(0), std=std), full


def grad_leaves(torch, matrices):
    t = lambda a: torch.tensor(a, dtype=torch.float64, requires_grad=True)  # noqa: E731
    return t(MEAN[:3]), t(np.linspace(0.5, 2.0, 3 * D).reshape(3, D)), t(matrices)


@needs_torch
@pytest.mark.parametrize("torch_path", [False, True])
@pytest.mark.parametrize("param", FACTORED)
@pytest.mark.parametrize("op,run", GRAD_OPS, ids=[op for op, _ in GRAD_OPS])
@pytest.mark.filterwarnings("ignore::gausskl.JitterWarning")
def test_gradcheck_with_jitter(torch_path, param, op, run):
    import torch

    def f(mean, std, matrices):
        diag, full = grad_batches(param, mean, std, matrices)
        return run(diag, full, jitter=GRAD_EPS, torch_path=torch_path)

    assert torch.autograd.gradcheck(f, grad_leaves(torch, GRAD_MATRICES), eps=1e-6, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("param", FACTORED)
@pytest.mark.parametrize("op,run", GRAD_OPS, ids=[op for op, _ in GRAD_OPS])
def test_gradients_are_those_of_the_hand_jittered_matrices(param, op, run):
    import torch

    fixed = GRAD_MATRICES.copy()
    fixed[1] += GRAD_EPS * np.eye(D)
    results = []
    for matrices, kw in ((GRAD_MATRICES, {"jitter": GRAD_EPS}), (fixed, {})):
        leaves = grad_leaves(torch, matrices)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            value = run(*grad_batches(param, *leaves), **kw)
        value.sum().backward()
        results.append((value.detach(), [leaf.grad for leaf in leaves],
                        [str(w.message) for w in record if w.category is gk.JitterWarning]))
    (v, grads, notes), (v_fixed, grads_fixed, notes_fixed) = results
    torch.testing.assert_close(v, v_fixed, rtol=1e-12, atol=0)
    for g, g_fixed in zip(grads, grads_fixed):
        torch.testing.assert_close(g, g_fixed, rtol=1e-10, atol=1e-12)
    side = "q" if op == "kl" else "p"
    assert notes == [note(op, side, 1, GRAD_EPS)] and notes_fixed == []


def test_jitter_warning_is_exported():
    assert issubclass(gk.JitterWarning, UserWarning)
    assert "JitterWarning" in gk.__all__
