"""DiagGaussian's common construction is C code (python/src/diag_init.cpp, the class's tp_init):
it must make what the class's Python __init__ makes, and hand every other case to it unchanged.
The reference here is that __init__ itself, called by name on a bare instance."""

import numpy as np
import pytest

import gausskl as gk
from gausskl import _ext
from gausskl._distributions import Gaussian

torch = pytest.importorskip("torch")

_UNSET = object()


def python_made(*args, **kwargs):
    """The batch as the Python __init__ makes it (what torch.compile traces, and subclasses run)."""
    g = object.__new__(gk.DiagGaussian)
    gk.DiagGaussian.__init__(g, *args, **kwargs)
    return g


def assert_same_batch(got, want, converted=False):
    """converted: the arrays are made from the caller's (lists, broadcast views), so equal but
    not the same objects."""
    assert type(got) is type(want)
    for name in Gaussian.__slots__:
        a, b = getattr(got, name, _UNSET), getattr(want, name, _UNSET)
        if name == "_batch_shape":  # made when first asked for, or at once: compare the value
            a, b = got.batch_shape, want.batch_shape
        if name == "_spec":
            assert len(a) == len(b) and a[0] == b[0]
            for x, y in zip(a[1:], b[1:]):
                assert np.array_equal(x, y) if converted else x is y  # the arrays as given
        else:
            assert a == b, (name, a, b)
    assert got.batch_shape == want.batch_shape and got.d == want.d and got.dtype == want.dtype


def made_both_ways(*args, **kwargs):
    return gk.DiagGaussian(*args, **kwargs), python_made(*args, **kwargs)


def test_installed_once():
    # At import; a second install is refused (the class keeps the first).
    assert not _ext.install_diag_init(gk.DiagGaussian, {}, set(), 2, 0, 2)


def _common_cases():
    g = torch.Generator().manual_seed(0)

    def t(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g, dtype=dtype)

    m = t(6, 5)
    return [
        ("torch float32 logvar", (t(128, 32),), {"logvar": t(128, 32)}),
        ("torch float64 std", (t(5, 3, dtype=torch.float64),),
         {"std": t(5, 3, dtype=torch.float64).abs()}),
        ("float32 mean, float64 logvar", (t(4, 3),), {"logvar": t(4, 3, dtype=torch.float64)}),
        ("requires grad", (t(6, 5).requires_grad_(),), {"logvar": t(6, 5).requires_grad_()}),
        ("one distribution", (t(3),), {"logvar": t(3)}),
        ("batch axes [2, 4]", (t(2, 4, 3),), {"std": t(2, 4, 3).abs()}),
        ("strided views", (m.t(),), {"logvar": t(5, 6)[:, :]}),
        ("no rows", (t(0, 3),), {"logvar": t(0, 3)}),
        ("no columns", (t(4, 0),), {"std": t(4, 0)}),
        ("numpy float64", (np.zeros((4, 3)),), {"std": np.ones((4, 3))}),
        ("numpy float32 and float64", (np.zeros((4, 3), np.float32),),
         {"logvar": np.zeros((4, 3))}),
        ("parameters", (torch.nn.Parameter(t(4, 3)),), {"logvar": torch.nn.Parameter(t(4, 3))}),
    ]


@pytest.mark.parametrize("name,args,kwargs", _common_cases(), ids=[c[0] for c in _common_cases()])
def test_common_case_makes_what_python_makes(name, args, kwargs):
    for _ in range(2):  # the second time with every array type seen (nn.Parameter)
        got, want = made_both_ways(*args, **kwargs)
        assert_same_batch(got, want)


def _other_cases():
    m, s = torch.zeros(4, 3), torch.ones(4, 3)
    return [
        ("scale broadcast over rows", (m,), {"logvar": torch.zeros(3)}),
        ("scalar scale", (m,), {"std": torch.tensor(2.0)}),
        ("size-1 last axis", (m,), {"std": torch.ones(4, 1)}),
        ("var", (m,), {"var": s}),
        ("precision", (m,), {"precision": s}),
        ("a scale of None beside", (m,), {"logvar": s, "std": None}),
        ("torch mean, numpy scale", (m,), {"logvar": np.zeros((4, 3), np.float32)}),
        ("lists", ([[0.0, 1.0]],), {"std": [[1.0, 2.0]]}),
        # Converted to float64 by the operations (gausskl._ops, CONVERT).
        ("integers", (torch.zeros(4, 3, dtype=torch.int64),),
         {"logvar": torch.zeros(4, 3, dtype=torch.int64)}),
        ("bfloat16", (torch.zeros(4, 3, dtype=torch.bfloat16),),
         {"std": torch.ones(4, 3, dtype=torch.bfloat16)}),
        ("numpy integers", (np.zeros((4, 3), np.int32),), {"std": np.ones((4, 3), np.int32)}),
    ]


@pytest.mark.parametrize("name,args,kwargs", _other_cases(), ids=[c[0] for c in _other_cases()])
def test_other_cases_take_the_python_path(name, args, kwargs):
    got, want = made_both_ways(*args, **kwargs)
    # Lists become arrays, and a broadcast scale a new view, on each call.
    assert_same_batch(got, want, converted=isinstance(args[0], list) or "broadcast" in name
                      or "scalar" in name or "size-1" in name)


def _bad_cases():
    m = torch.zeros(4, 3)
    return [
        ("shapes", (m,), {"logvar": torch.zeros(2, 3)}, ValueError),
        ("positional scale", (m, torch.ones(4, 3)), {}, TypeError),
        ("two scales", (m,), {"logvar": m, "std": m}, ValueError),
        ("no scale", (m,), {}, ValueError),
        ("scale None", (m,), {"logvar": None}, ValueError),
        ("0-d mean", (torch.tensor(0.0),), {"logvar": torch.tensor(0.0)}, ValueError),
        ("complex", (torch.zeros(4, 3, dtype=torch.complex64),),
         {"std": torch.ones(4, 3, dtype=torch.complex64)}, TypeError),
        ("unknown keyword", (m,), {"sigma": m}, TypeError),
    ]


@pytest.mark.parametrize("name,args,kwargs,error", _bad_cases(), ids=[c[0] for c in _bad_cases()])
def test_errors_are_python_s(name, args, kwargs, error):
    with pytest.raises(error) as c_path:
        gk.DiagGaussian(*args, **kwargs)
    with pytest.raises(error) as python_path:
        python_made(*args, **kwargs)
    assert str(c_path.value) == str(python_path.value)


def test_inside_torch_func_transforms():
    # Wrapped tensors have no DLPack view: the Python path, with the transform's logical shapes.
    x, y = torch.randn(3, 4, 5), torch.randn(3, 4, 5)

    def made(a, b):
        got, want = made_both_ways(a, logvar=b)
        assert_same_batch(got, want)
        assert got.batch_shape == (4,)
        return gk.kl_standard_normal(got)

    out = torch.func.vmap(made)(x, y)
    assert out.shape == (3, 4)
    torch.func.grad(lambda a: made(a, y[0]).sum())(x[0])


def test_subclasses_and_signature():
    import inspect

    class Mine(gk.DiagGaussian):
        __slots__ = ()

    m = torch.zeros(4, 3)
    assert_same_batch(gk.DiagGaussian(m, logvar=m), python_made(m, logvar=m))
    mine = Mine(m, logvar=m)
    assert type(mine) is Mine and mine.param == "logvar" and mine.batch_shape == (4,)
    assert "logvar" in inspect.signature(gk.DiagGaussian).parameters


def test_a_reassigned_init_or_new_runs():
    """DiagGaussian(...) runs C code (the class's vectorcall and tp_init) only while __init__ and
    __new__ are the class's own: one assigned later (a mock, a patch) runs. In a subprocess, as
    the class keeps the assigned slot for the rest of the process."""
    import subprocess
    import sys

    script = (
        "import torch, gausskl as gk\n"
        "m = torch.zeros(4, 3)\n"
        "calls = []\n"
        "init = gk.DiagGaussian.__init__\n"
        "def mine(self, *a, **k):\n"
        "    calls.append('init')\n"
        "    init(self, *a, **k)\n"
        "gk.DiagGaussian.__init__ = mine\n"
        "assert gk.DiagGaussian(m, logvar=m).param == 'logvar' and calls == ['init'], calls\n"
        "def new(cls, *a, **k):\n"
        "    calls.append('new')\n"
        "    return object.__new__(cls)\n"
        "gk.DiagGaussian.__new__ = new\n"
        "assert gk.DiagGaussian(m, std=m + 1).param == 'std', calls\n"
        "assert calls == ['init', 'new', 'init'], calls\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
