"""Every input rule, from Python: ValueError with the library's "[op] what, where" message.

Each case runs through the C++ library and, with torch, through the torch-operations path
(the one CUDA and MPS tensors take), which must say the same thing.
"""

import numpy as np
import pytest

import gausskl as gk
from conftest import HAS_TORCH, make_arrays, needs_torch

PATHS = ["library", pytest.param("torch", marks=needs_torch)]


def convert(path):
    if path == "library":
        return lambda a: a
    import torch

    return lambda a: torch.as_tensor(a)


def diag(path, mean, **scale):
    c = convert(path)
    return gk.DiagGaussian(c(np.asarray(mean, float)),
                           **{k: c(np.asarray(v, float)) for k, v in scale.items()})


def call(path, fn, *args, **kwargs):
    if path == "torch":
        kwargs["torch_path"] = True
    return fn(*args, **kwargs)


GOOD_MEAN = np.zeros((3, 2))
GOOD_STD = np.ones((3, 2))


def bad(array, index, value):
    a = np.array(array, dtype=float)
    a[index] = value
    return a


DIAG_CASES = [
    # (mean, {param: scale}, message)
    (bad(GOOD_MEAN, (1, 0), np.nan), {"std": GOOD_STD},
     "[kl_standard_normal] p.mean must be finite, found nan at row 1, column 0"),
    (GOOD_MEAN, {"std": bad(GOOD_STD, (2, 1), -0.5)},
     "[kl_standard_normal] p.scale (std) must be positive and finite, found -0.5 at row 2, column 1"),
    (GOOD_MEAN, {"var": bad(GOOD_STD, (0, 1), 0.0)},
     "[kl_standard_normal] p.scale (var) must be positive and finite, found 0 at row 0, column 1"),
    (GOOD_MEAN, {"precision": bad(GOOD_STD, (1, 1), np.inf)},
     "[kl_standard_normal] p.scale (precision) must be positive and finite, found inf at row 1, column 1"),
    (GOOD_MEAN, {"logvar": bad(GOOD_STD, (1, 0), -np.inf)},
     "[kl_standard_normal] p.scale (logvar) must be finite, found -inf at row 1, column 0"),
    (GOOD_MEAN, {"logvar": bad(GOOD_STD, (0, 0), 800.0)},
     "[kl_standard_normal] p.scale (logvar) gives a variance outside [1e-300, 1e300], found 800 at row 0, column 0"),
    (GOOD_MEAN, {"std": bad(GOOD_STD, (2, 0), 1e-200)},
     "[kl_standard_normal] p.scale (std) gives a variance outside [1e-300, 1e300]"),
    (np.zeros((3, 0)), {"std": np.zeros((3, 0))},
     "[kl_standard_normal] p.mean has D = 0; D must be at least 1"),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mean,scale,message", DIAG_CASES)
def test_diagonal_rules(path, mean, scale, message):
    with pytest.raises(ValueError) as e:
        call(path, gk.kl_standard_normal, diag(path, mean, **scale))
    assert str(e.value).startswith(message)


def full(path, param, matrix, mean=None):
    c = convert(path)
    matrix = np.asarray(matrix, float)
    mean = np.zeros(matrix.shape[:2]) if mean is None else mean
    return gk.FullGaussian(c(mean), **{param: c(matrix)})


EYE = np.repeat(np.eye(3)[None], 2, 0)

FULL_CASES = [
    ("scale_tril", bad(EYE, (1, 2, 2), -1.0),
     "[kl] q.scale (scale_tril) must have a positive diagonal with squares in [1e-300, 1e300], "
     "found -1 at distribution 1, row 2, column 2"),
    ("scale_tril", bad(EYE, (0, 0, 2), 0.25),
     "[kl] q.scale (scale_tril) must be lower triangular, found 0.25 above the diagonal at "
     "distribution 0, row 0, column 2"),
    ("covariance", bad(EYE, (1, 2, 0), 0.5),
     "[kl] q.scale (covariance) must be symmetric, found 0.5 and 0 at distribution 1, row 2, "
     "column 0 and its transpose"),
    ("covariance", bad(EYE, (0, 1, 1), np.nan),
     "[kl] q.scale (covariance) must be finite, found nan at distribution 0, row 1, column 1"),
    ("covariance", bad(bad(EYE, (1, 1, 0), 2.0), (1, 0, 1), 2.0),
     "[kl] q.scale (covariance) is not positive definite at distribution 1"),
    ("precision_matrix", bad(EYE, (0, 2, 2), -3.0),
     "[kl] q.scale (precision_matrix) is not positive definite at distribution 0"),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("param,matrix,message", FULL_CASES)
def test_full_rules(path, param, matrix, message):
    p = diag(path, np.zeros((2, 3)), std=np.ones((2, 3)))
    with pytest.raises(ValueError) as e:
        call(path, gk.kl, p, full(path, param, matrix))
    assert str(e.value).startswith(message)
    if "positive definite" in message:
        assert "add eps to the diagonal only" in str(e.value)


LOW_RANK_CASES = [
    ("cov_factor", (0, 1, 0), np.inf,
     "[pairwise_kl] p.cov_factor must be finite, found inf at distribution 0, row 1, column 0"),
    ("cov_diag", (1, 2), -2.0,
     "[pairwise_kl] p.cov_diag must be positive and finite, found -2 at row 1, column 2"),
    ("cov_diag", (1, 0), 1e301,
     "[pairwise_kl] p.cov_diag gives a variance outside [1e-300, 1e300], found 1e+301 at row 1, "
     "column 0"),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name,index,value,message", LOW_RANK_CASES)
def test_low_rank_rules(path, name, index, value, message):
    c = convert(path)
    a = {"mean": np.zeros((2, 3)), "cov_factor": np.ones((2, 3, 1)), "cov_diag": np.ones((2, 3))}
    a[name] = bad(a[name], index, value)
    p = gk.LowRankGaussian(c(a["mean"]), cov_factor=c(a["cov_factor"]), cov_diag=c(a["cov_diag"]))
    with pytest.raises(ValueError) as e:
        call(path, gk.pairwise_kl, p)
    assert str(e.value).startswith(message)


@pytest.mark.parametrize("path", PATHS)
def test_pair_rules(path):
    p = diag(path, np.zeros((3, 2)), std=np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"^\[kl\] p and q have D = 2 and D = 3; D must match"):
        call(path, gk.kl, p, diag(path, np.zeros((3, 3)), std=np.ones((3, 3))))
    with pytest.raises(ValueError, match=r"^\[kl\] p and q have N = 3 and N = 2; N must match "
                                         r"or one side must have N = 1"):
        call(path, gk.kl, p, diag(path, np.zeros((2, 2)), std=np.ones((2, 2))))
    with pytest.raises(ValueError, match=r"^\[pairwise_kl\] p and q have D = 2 and D = 1"):
        call(path, gk.pairwise_kl, p, diag(path, np.zeros((2, 1)), std=np.ones((2, 1))))


@pytest.mark.parametrize("path", PATHS)
def test_knn_rules(path):
    p = diag(path, np.zeros((3, 2)), std=np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"^\[knn_kl\] k = 4 must be between 1 and M = 3"):
        call(path, gk.knn_kl, p, k=4)
    with pytest.raises(ValueError, match=r"^\[knn_kl\] k = 3 must be between 1 and M - 1 = 2"):
        call(path, gk.knn_kl, p, k=3, exclude_self=True)
    with pytest.raises(ValueError, match=r"^\[knn_kl\] k = 0 must be between 1 and M = 3"):
        call(path, gk.knn_kl, p, k=0)
    with pytest.raises(ValueError, match=r"^\[knn_kl\] exclude_self needs q = p"):
        call(path, gk.knn_kl, p, p, k=1, exclude_self=True)
    with pytest.raises(TypeError) as e:
        call(path, gk.knn_kl, p, k=1.5)
    assert str(e.value) == "[knn_kl] k must be an int, found float"
    with pytest.raises(TypeError) as e:
        call(path, gk.knn_kl, p, k=True)
    assert str(e.value) == "[knn_kl] k must be an int, found bool"
    with pytest.raises(ValueError) as e:
        call(path, gk.knn_kl, p, k=1 << 63)
    assert str(e.value) == "[knn_kl] k must be at most 2^63 - 1, found 9223372036854775808"


def test_threads_must_not_be_negative():
    p = gk.DiagGaussian(np.zeros((2, 2)), std=1.0)
    with pytest.raises(ValueError, match=r"^\[kl\] options.threads must be >= 0"):
        gk.kl(p, p, threads=-1)


@pytest.mark.parametrize("make,message", [
    (lambda mean, std: gk.DiagGaussian(mean, std),
     "[DiagGaussian] give the scale by keyword after the mean: DiagGaussian(mean, std=...) "
     "(or var=, logvar=, precision=)"),
    (lambda mean, std: gk.FullGaussian(mean, std[..., None] * np.eye(2)),
     "[FullGaussian] give the scale by keyword after the mean: FullGaussian(mean, "
     "scale_tril=...) (or covariance=, precision_matrix=, packed_scale_tril=)"),
    (lambda mean, std: gk.LowRankGaussian(mean, std[..., None], std),
     "[LowRankGaussian] give the scale by keyword after the mean: LowRankGaussian(mean, "
     "cov_factor=..., cov_diag=...)"),
    (lambda mean, std: gk.LowRankGaussian(mean, cov_factor=std[..., None]),
     "[LowRankGaussian] give both cov_factor= and cov_diag=; cov_diag missing"),
    (lambda mean, std: gk.LowRankGaussian(mean),
     "[LowRankGaussian] give both cov_factor= and cov_diag=; cov_factor and cov_diag missing"),
])
def test_a_scale_given_by_position_says_to_give_it_by_keyword(make, message):
    """gk.DiagGaussian(mu, std), as newcomers write it: the message says what to write."""
    with pytest.raises(TypeError) as e:
        make(GOOD_MEAN, GOOD_STD)
    assert str(e.value) == message


def test_construction_rules():
    with pytest.raises(ValueError, match=r"^\[DiagGaussian\] give exactly one of std, var, "
                                         r"logvar, precision; found std, var"):
        gk.DiagGaussian(np.zeros((2, 2)), std=np.ones((2, 2)), var=np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"^\[DiagGaussian\] give exactly one of .*found none"):
        gk.DiagGaussian(np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"^\[FullGaussian\] give exactly one of scale_tril, "
                                         r"covariance, precision_matrix"):
        gk.FullGaussian(np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"^\[DiagGaussian\] mean must be \[N, D\] or \[D\]"):
        gk.DiagGaussian(np.zeros(()), std=1.0)
    with pytest.raises(ValueError, match=r"^\[DiagGaussian\] std must be \[N, D\] like mean, "
                                         r"found shape \(2, 3\)"):
        gk.DiagGaussian(np.zeros((3, 2)), std=np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"^\[DiagGaussian\] logvar must be \[D\] like mean"):
        gk.DiagGaussian(np.zeros(3), logvar=np.ones(4))
    with pytest.raises(ValueError, match=r"^\[FullGaussian\] covariance must be \[N, D, D\]"):
        gk.FullGaussian(np.zeros((3, 2)), covariance=np.ones((3, 2, 3)))
    with pytest.raises(ValueError, match=r"^\[LowRankGaussian\] cov_factor must be \[N, D, R\]"):
        gk.LowRankGaussian(np.zeros((3, 2)), cov_factor=np.ones((3, 3, 1)), cov_diag=1.0)
    with pytest.raises(ValueError, match=r"^\[LowRankGaussian\] cov_diag must be \[N, D\]"):
        gk.LowRankGaussian(np.zeros((3, 2)), cov_factor=np.ones((3, 2, 1)), cov_diag=np.ones(3))
    with pytest.raises(ValueError, match=r"^\[LowRankGaussian\] cov_diag must be \[N, D\] like "
                                         r"mean, found shape \(2, 2\) \(mean has shape \(3, 2\); "
                                         r"the batch axes \(2,\) and \(3,\) do not broadcast\)"):
        gk.LowRankGaussian(np.zeros((3, 2)), cov_factor=np.ones((3, 2, 1)), cov_diag=np.ones((2, 2)))
    with pytest.raises(TypeError, match=r"^\[DiagGaussian\] mean: not a numeric array"):
        gk.DiagGaussian(["a", None], std=1.0)
    with pytest.raises(TypeError, match=r"^\[kl\] p must be a DiagGaussian"):
        gk.kl(np.zeros(3), np.zeros(3))


def test_complex_arrays_are_refused():
    with pytest.raises(TypeError, match="complex"):
        gk.DiagGaussian(np.zeros(2, complex), std=1.0)


@pytest.mark.parametrize("framework", ["numpy", "torch"])
@pytest.mark.parametrize("param", ["std", "logvar"])
def test_the_common_diagonal_batch_is_the_general_one(framework, param):
    """DiagGaussian's one-pass case (std or logvar of the mean's shape, one framework) makes the
    batch the general path makes (a view of the same arrays: made here with a broadcast scale
    of the same values), and refuses what the general path refuses."""
    mean, scale = np.arange(6.0).reshape(2, 3), np.full((2, 3), 0.5)
    if framework == "torch":
        torch = pytest.importorskip("torch")
        mean, scale = torch.from_numpy(mean), torch.from_numpy(scale)
        wide = torch.tensor(0.5, dtype=torch.float64)
        cplx = torch.zeros((2, 3), dtype=torch.complex128)
    else:
        wide, cplx = np.float64(0.5) + np.zeros(()), np.zeros((2, 3), complex)
    fast = gk.DiagGaussian(mean, **{param: scale})
    general = gk.DiagGaussian(mean, **{param: wide})  # a 0-d scale: the general path
    assert fast._spec[0] == general._spec[0] == gk._distributions.CODES[param]
    assert fast._spec[1] is mean and fast._spec[2] is scale
    assert (fast.param, fast._batch, fast._namespace, fast._torch, fast._cls) == (
        general.param, general._batch, general._namespace, general._torch, general._cls)
    assert repr(fast) == repr(general)
    np.testing.assert_array_equal(np.asarray(gk.kl(fast, general)), np.zeros(2))
    with pytest.raises(TypeError, match="complex"):
        gk.DiagGaussian(cplx, **{param: cplx})
    with pytest.raises(ValueError, match="give exactly one of std, var, logvar, precision"):
        gk.DiagGaussian(mean, var=scale, **{param: scale})
    with pytest.raises(TypeError, match="by keyword"):
        gk.DiagGaussian(mean, scale)
