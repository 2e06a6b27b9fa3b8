"""The library's errors as Python exceptions (gausskl._errors): ValueError / RuntimeError
subclasses whose attributes carry the library's data (op, kind, side, index, hint), the same
from the torch path, and picklable with them (Dask sends a worker's error to the client)."""

import pickle

import numpy as np
import pytest

import gausskl as gk
from conftest import force_torch_path, needs_torch

SINGULAR = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]])


def _diag(n=2, d=2, std=1.0):
    return gk.DiagGaussian(np.zeros((n, d)), std=np.full((n, d), std))


def _singular(convert=lambda a: a):
    return gk.FullGaussian(convert(np.zeros((2, 2))), covariance=convert(SINGULAR))


def test_not_positive_definite():
    with pytest.raises(gk.NotPositiveDefiniteError) as info:
        gk.kl(_diag(), _singular())
    e = info.value
    assert isinstance(e, ValueError) and isinstance(e, gk.InputError)
    assert isinstance(e, gk.GaussKLError)
    assert (e.op, e.kind, e.side, e.index, e.pivot) == ("kl", "not_positive_definite", "q", 1, 1)
    assert e.hint == "to regularize, add eps to the diagonal only: C + eps * I"
    assert e.hint_option is None
    # with_hint appends the keyword, keeping the type and data.
    assert str(e) == ("[kl] q.scale (covariance) is not positive definite at distribution 1: "
                      "pivot 1 is 0 (to regularize, add eps to the diagonal only: C + eps * I)"
                      "; jitter=EPS does that for each such matrix")


def test_memory_budget():
    with pytest.raises(gk.MemoryBudgetError) as info:
        gk.pairwise_kl(_diag(), memory_budget=1)
    e = info.value
    assert isinstance(e, RuntimeError) and isinstance(e, gk.ResourceError)
    assert (e.op, e.kind, e.budget) == ("pairwise_kl", "memory_budget", 1)
    assert str(e) == f"[pairwise_kl] the memory budget (1 B) is too small: {e.needs}"
    assert e.side is None and e.index is None and e.hint is None


def test_option():
    with pytest.raises(gk.OptionError, match=r"options.tolerance must be") as info:
        gk.pairwise_kl(_diag(), tolerance=1.0)
    e = info.value
    assert (e.op, e.kind, e.option) == ("pairwise_kl", "option", "tolerance")
    assert e.rule == "must be 0 (the default) or at most 1e-3"
    with pytest.raises(gk.OptionError) as info:
        gk._ext.check_options("kl", 0, -1.0, 0.0, 0)
    assert info.value.option == "jitter" and info.value.rule == "must be finite and >= 0"


def test_hint_naming_an_option():
    g = gk.FullGaussian(np.zeros((1, 2)), packed_scale_tril=np.array([[1.0, 0.0, -1.0]]))
    with pytest.raises(gk.InputError) as info:
        gk.kl_standard_normal(g)
    e = info.value
    assert (e.kind, e.side, e.index, e.hint_option) == ("invalid_input", "p", 0, "log_diagonal")
    assert e.hint == gk._ext.LOG_DIAGONAL_HINT
    assert str(e).endswith("; for log L_rr on the diagonal, set log_diagonal")


def test_plain_input_error():
    with pytest.raises(ValueError, match=r"must be positive and finite") as info:
        gk.kl(_diag(std=-1.0), _diag())
    assert type(info.value) is gk.InputError and info.value.kind == "invalid_input"


@pytest.mark.parametrize("make", [
    lambda: gk.NotPositiveDefiniteError("[kl] x", op="kl", kind="not_positive_definite",
                                        side="q", index=3, hint="h", pivot=2),
    lambda: gk.MemoryBudgetError("[kl] y", op="kl", kind="memory_budget", budget=5, needs="n"),
    lambda: gk.OptionError("[kl] z", op="kl", kind="option", option="jitter", rule="r"),
])
def test_pickles_with_its_data(make):
    e = make()
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is type(e) and str(back) == str(e) and back.__dict__ == e.__dict__


def test_library_errors_pickle():
    with pytest.raises(gk.NotPositiveDefiniteError) as info:
        gk.kl(_diag(), _singular())
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is gk.NotPositiveDefiniteError
    assert str(back) == str(info.value) and back.__dict__ == info.value.__dict__


def test_reworded_keeps_type_and_data():
    e = gk.InputError("[kl] a", op="kl", kind="invalid_input", side="p", index=4)
    r = e.reworded("[kl] b")
    assert type(r) is gk.InputError and str(r) == "[kl] b" and r.__dict__ == e.__dict__


def test_batch_slices_keep_the_data():
    # Two slices of a batch [2, 2, D]: the error names its slice and keeps its data.
    std = np.ones((2, 2, 2))
    std[1, 0, 1] = -1.0
    p = gk.DiagGaussian(np.zeros((2, 2, 2)), std=std)
    q = gk.DiagGaussian(np.zeros((2, 1, 2)), std=np.ones((2, 1, 2)))
    with pytest.raises(gk.InputError) as info:
        gk.kl(p, q)
    assert info.value.op == "kl" and info.value.kind == "invalid_input"


def test_codes_are_the_extensions():
    from gausskl._distributions import CODES

    assert CODES == gk._ext.CODES
    assert [n for n, _ in sorted(CODES.items(), key=lambda kv: kv[1])][:4] == list(
        gk._ext.DIAG_PARAMS)


@needs_torch
def test_torch_path_raises_the_same(monkeypatch):
    import torch

    force_torch_path(monkeypatch)
    t = torch.from_numpy
    with pytest.raises(gk.NotPositiveDefiniteError) as info:
        gk.kl(gk.DiagGaussian(t(np.zeros((2, 2))), std=t(np.ones((2, 2)))), _singular(t))
    e = info.value
    assert (e.op, e.kind, e.side, e.index, e.pivot) == ("kl", "not_positive_definite", "q", 1, 1)
    assert str(e).endswith("pivot 1 is not positive (to regularize, add eps to the diagonal "
                           "only: C + eps * I); jitter=EPS does that for each such matrix")
    with pytest.raises(gk.MemoryBudgetError) as info:
        gk.pairwise_kl(gk.DiagGaussian(t(np.zeros((2, 2))), std=t(np.ones((2, 2)))),
                       memory_budget=1)
    assert info.value.budget == 1 and info.value.needs.startswith("the torch path's operands")
    g = gk.FullGaussian(t(np.zeros((1, 2))), packed_scale_tril=t(np.array([[1.0, 0.0, -1.0]])))
    with pytest.raises(gk.InputError) as info:
        gk.kl_standard_normal(g)
    assert info.value.hint_option == "log_diagonal" and info.value.index == 0
