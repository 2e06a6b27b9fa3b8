"""Full covariance from a network's packed Cholesky factors: FullGaussian(mean,
packed_scale_tril=E, log_diagonal=...), E [..., D (D + 1) / 2] in torch.tril_indices(D, D) order.
Values against the code users write for it (L built from the packed elements, exp on the
diagonal, then two triangular solves, in float64) and against the
same factors given as scale_tril; every validation rule on the library path and the torch path,
with the same words; and nothing copied."""

import numpy as np
import pytest

import gausskl as gk
from gausskl import _ext
from conftest import needs_torch

PATHS = ["library", pytest.param("torch", marks=needs_torch)]


def unpack(e, d, log_diagonal):
    """L from its packed rows, as users build it (NumPy, float64)."""
    rows, cols = np.tril_indices(d)
    L = np.zeros((*e.shape[:-1], d, d))
    L[..., rows, cols] = e
    if log_diagonal:
        i = np.arange(d)
        L[..., i, i] = np.exp(L[..., i, i])
    return L


def packed(rng, n, d, log_diagonal):
    k = d * (d + 1) // 2
    e = 0.5 * rng.normal(size=(n, k)) / np.sqrt(d)
    diag = [r * (r + 1) // 2 + r for r in range(d)]
    e[:, diag] = 0.4 * rng.normal(size=(n, d)) if log_diagonal else rng.uniform(0.5, 2, (n, d))
    return e


def ref_kl_tril(m1, L1, m2, L2):
    """KL by two triangular solves, in float64 NumPy."""
    d = m1.shape[-1]
    y = np.linalg.solve(L2, (m2 - m1)[..., None])[..., 0]
    M = np.linalg.solve(L2, L1)
    logdet = lambda L: np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(-1)  # noqa: E731
    return 0.5 * ((y * y).sum(-1) + (M * M).sum((-2, -1)) - 2 * (logdet(L1) - logdet(L2)) - d)


@pytest.mark.parametrize("log_diagonal", [False, True])
@pytest.mark.parametrize("d", [1, 3, 16])
def test_against_two_triangular_solves(rng, log_diagonal, d):
    n = 7
    e1, e2 = packed(rng, n, d, log_diagonal), packed(rng, n, d, log_diagonal)
    m1, m2 = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    p = gk.FullGaussian(m1, packed_scale_tril=e1, log_diagonal=log_diagonal)
    q = gk.FullGaussian(m2, packed_scale_tril=e2, log_diagonal=log_diagonal)
    L1, L2 = unpack(e1, d, log_diagonal), unpack(e2, d, log_diagonal)
    np.testing.assert_allclose(gk.kl(p, q), ref_kl_tril(m1, L1, m2, L2), rtol=1e-12)
    # The same factors as scale_tril: the same numbers (without log diagonals, the same bits).
    ps, qs = gk.FullGaussian(m1, scale_tril=L1), gk.FullGaussian(m2, scale_tril=L2)
    for got, want in ((gk.kl(p, q), gk.kl(ps, qs)), (gk.pairwise_kl(p, q), gk.pairwise_kl(ps, qs)),
                      (gk.kl_standard_normal(p), gk.kl_standard_normal(ps))):
        if log_diagonal:
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        else:
            np.testing.assert_array_equal(got, want)
    assert np.all(gk.kl(p, p) == 0)
    assert np.all(np.diag(gk.pairwise_kl(p)) == 0)


@needs_torch
def test_packed_factors_as_users_write_them(rng):
    """A batch of 5 at d = 3, float32, L built from the elements as users build it."""
    import torch

    d, batch = 3, 5
    torch.manual_seed(0)

    def form(elems):
        i, j = torch.tril_indices(d, d)
        L = torch.zeros(elems.shape[0], d, d)
        L[:, i, j] = elems
        diag = L.diagonal(dim1=1, dim2=2)
        diag.copy_(diag.exp())
        return L

    mean1, mean2 = torch.randn(batch, d), torch.randn(batch, d)
    e1, e2 = torch.randn(batch, d * (d + 1) // 2), torch.randn(batch, d * (d + 1) // 2)
    want = torch.distributions.kl_divergence(
        torch.distributions.MultivariateNormal(mean1.double(), scale_tril=form(e1).double()),
        torch.distributions.MultivariateNormal(mean2.double(), scale_tril=form(e2).double()))
    # That packing puts the diagonal through torch.tril_indices like everything else.
    got = gk.kl(gk.FullGaussian(mean1, packed_scale_tril=e1, log_diagonal=True),
                gk.FullGaussian(mean2, packed_scale_tril=e2, log_diagonal=True))
    assert got.dtype == torch.float32 and got.shape == (batch,)
    torch.testing.assert_close(got.double(), want, rtol=2e-6, atol=1e-6)


def test_batch_axes_and_broadcasting(rng):
    d = 3
    e = packed(rng, 4, d, True).reshape(2, 2, -1)
    m = rng.normal(size=(3, 2, 2, d))
    p = gk.FullGaussian(m, packed_scale_tril=e, log_diagonal=True)
    assert p.batch_shape == (3, 2, 2) and p.log_diagonal
    out = gk.kl_standard_normal(p)
    assert out.shape == (3, 2, 2)
    L = np.broadcast_to(unpack(e, d, True), (3, 2, 2, d, d))
    want = ref_kl_tril(m, L, np.zeros(d), np.eye(d))
    np.testing.assert_allclose(out, want, rtol=1e-12)


def test_read_in_place(rng):
    e = packed(rng, 6, 4, True)
    m = rng.normal(size=(6, 4))
    p = gk.FullGaussian(m, packed_scale_tril=e, log_diagonal=True)
    assert _ext.addresses(p._spec) == [m.ctypes.data, e.ctypes.data]
    assert repr(p) == "FullGaussian(N=6, D=4, packed_scale_tril, log_diagonal, dtype=float64, numpy)"


def test_construction_rules():
    m = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"^\[FullGaussian\] packed_scale_tril must be "
                                         r"\[N, D \(D \+ 1\) / 2\] = \[N, 6\] with D = 3 from mean, "
                                         r"found shape \(2, 5\)$"):
        gk.FullGaussian(m, packed_scale_tril=np.ones((2, 5)))
    with pytest.raises(ValueError, match=r"^\[FullGaussian\] log_diagonal applies to "
                                         r"packed_scale_tril only, not to scale_tril$"):
        gk.FullGaussian(m, scale_tril=np.ones((2, 3, 3)), log_diagonal=True)
    with pytest.raises(TypeError, match=r"^\[FullGaussian\] log_diagonal must be True or False"):
        gk.FullGaussian(m, packed_scale_tril=np.ones((2, 6)), log_diagonal="yes")
    with pytest.raises(ValueError, match=r"^\[FullGaussian\] give exactly one of scale_tril, "
                                         r"covariance, precision_matrix, packed_scale_tril; found "
                                         r"scale_tril, packed_scale_tril$"):
        gk.FullGaussian(m, scale_tril=np.ones((2, 3, 3)), packed_scale_tril=np.ones((2, 6)))


def convert(path):
    if path == "library":
        return lambda a: a
    import torch

    return torch.as_tensor


def bad_packed(index, value):
    e = np.array([[0.0, 0.5, 0.0, 0.1, 0.2, 0.3], [0.2, 0.1, -0.1, 0.0, 0.3, 0.0]])
    e[index] = value
    return e


CASES = [
    # (log_diagonal, packed, message)
    (True, bad_packed((1, 4), np.inf),
     "[kl_standard_normal] p.scale (packed_scale_tril) must be finite, found inf at row 1, "
     "column 4 (L[2, 1])"),
    (True, bad_packed((1, 5), 400.0),
     "[kl_standard_normal] p.scale (packed_scale_tril) must have diagonal entries x = log L_rr "
     "(log_diagonal) with exp(2 x) in [1e-300, 1e300], found 400 at row 1, column 5 (L[2, 2])"),
    (False, np.array([[1.0, 0.5, -1.1, 0.1, 0.2, 1.3], [1.2, 0.1, 0.9, 0.0, 0.3, 1.0]]),
     "[kl_standard_normal] p.scale (packed_scale_tril) must have a positive diagonal with "
     "squares in [1e-300, 1e300], found -1.1 at row 0, column 2 (L[1, 1]); for log L_rr on the "
     "diagonal, set log_diagonal"),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("log_diagonal,e,message", CASES)
def test_validation_rules(path, log_diagonal, e, message):
    c = convert(path)
    p = gk.FullGaussian(c(np.zeros((2, 3))), packed_scale_tril=c(e), log_diagonal=log_diagonal)
    kwargs = {"torch_path": True} if path == "torch" else {}
    with pytest.raises(ValueError) as err:
        gk.kl_standard_normal(p, **kwargs)
    assert str(err.value) == message


@needs_torch
def test_torch_path_matches_the_library(rng):
    import torch

    for log_diagonal in (False, True):
        e1, e2 = packed(rng, 5, 4, log_diagonal), packed(rng, 6, 4, log_diagonal)
        p = gk.FullGaussian(torch.from_numpy(rng.normal(size=(5, 4))),
                            packed_scale_tril=torch.from_numpy(e1), log_diagonal=log_diagonal)
        q = gk.FullGaussian(torch.from_numpy(rng.normal(size=(6, 4))),
                            packed_scale_tril=torch.from_numpy(e2), log_diagonal=log_diagonal)
        torch.testing.assert_close(gk.pairwise_kl(p, q, torch_path=True), gk.pairwise_kl(p, q),
                                   rtol=1e-9, atol=1e-12)
        torch.testing.assert_close(gk.kl(p, p, torch_path=True), gk.kl(p, p), rtol=1e-9,
                                   atol=1e-12)
