"""Arrays in and out: any strides in place, NumPy in/NumPy out, torch in/torch out, dtypes,
repr, and calls from several threads at once."""

import threading

import numpy as np
import pytest

import gausskl as gk
from gausskl import _ext
from conftest import gaussian, make_arrays, needs_torch, ref_kl, ref_pairwise

LAYOUTS = {
    "transposed": lambda a: np.ascontiguousarray(a.T).T,
    "fortran": np.asfortranarray,
    "reversed": lambda a: np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1],
    "every_other_row": lambda a: np.repeat(a, 2, axis=0)[::2],
    "every_third_column": lambda a: np.repeat(a, 3, axis=1)[:, ::3],
}


def address(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_any_strides_are_read_in_place(rng, layout):
    a = make_arrays(rng, "diag", "std", 6, 4)
    make = LAYOUTS[layout]
    mean, std = make(a["mean"]), make(a["std"])
    np.testing.assert_array_equal(mean, a["mean"])
    assert not (mean.flags.c_contiguous and std.flags.c_contiguous) or layout == "x"
    p = gk.DiagGaussian(mean, std=std)
    assert _ext.addresses(p._spec) == [address(mean), address(std)]  # no copy
    np.testing.assert_allclose(gk.kl_standard_normal(p), gk.kl_standard_normal(gaussian(a)),
                               rtol=1e-15)
    np.testing.assert_allclose(gk.pairwise_kl(p), ref_pairwise(a, a), rtol=1e-9, atol=1e-12)


def test_strided_matrices_and_broadcast_views(rng):
    a = make_arrays(rng, "full", "covariance", 4, 3)
    cov = np.ascontiguousarray(a["covariance"].transpose(0, 2, 1)).transpose(0, 2, 1)
    mean = np.broadcast_to(a["mean"][:1], (4, 3))  # stride 0 along N
    p = gk.FullGaussian(mean, covariance=cov)
    assert _ext.addresses(p._spec) == [address(mean), address(cov)]
    ref = ref_kl({"mean": np.array(mean), "covariance": a["covariance"]},
                 {"mean": np.zeros((1, 3)), "var": np.ones((1, 3))})
    np.testing.assert_allclose(gk.kl_standard_normal(p), ref, rtol=1e-9)


def test_dtype_changes_copy_and_keep_results():
    mean = np.arange(6, dtype=np.int32).reshape(3, 2)  # integers become float64
    p = gk.DiagGaussian(mean, std=np.ones((3, 2), np.float32))
    assert p.dtype == "float64"
    out = gk.kl_standard_normal(p)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, 0.5 * (mean**2).sum(1))
    big_endian = np.ones((3, 2), dtype=">f8")
    np.testing.assert_allclose(gk.kl_standard_normal(gk.DiagGaussian(mean, std=big_endian)), out)
    half = gk.DiagGaussian(np.zeros((1, 2), np.float16), std=np.ones((1, 2), np.float16))
    assert gk.kl_standard_normal(half).dtype == np.float32


def test_read_only_arrays():
    mean = np.zeros((2, 2))
    mean.setflags(write=False)
    assert np.all(gk.kl_standard_normal(gk.DiagGaussian(mean, var=1.0)) == 0)


def test_lists_are_arrays():
    out = gk.kl(gk.DiagGaussian([[0.0, 1.0]], var=[[1.0, 1.0]]), gk.DiagGaussian([0.0, 0.0], var=1.0))
    np.testing.assert_allclose(out, [0.5])


class ForeignArray:
    """An array from another framework: only the DLPack protocol."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_other_dlpack_arrays_are_read_in_place():
    mean = np.arange(4.0).reshape(2, 2)
    p = gk.DiagGaussian(ForeignArray(mean), std=ForeignArray(np.ones((2, 2))))
    assert _ext.addresses(p._spec)[0] == address(mean)
    out = gk.kl_standard_normal(p)
    assert isinstance(out, np.ndarray)  # no array namespace: NumPy
    np.testing.assert_allclose(out, 0.5 * (mean**2).sum(1))


def test_repr():
    p = gk.DiagGaussian(np.zeros((5, 3), np.float32), logvar=np.zeros((5, 3), np.float32))
    assert repr(p) == "DiagGaussian(N=5, D=3, logvar, dtype=float32, numpy)"
    f = gk.FullGaussian(np.zeros(4), covariance=np.eye(4))
    assert repr(f) == "FullGaussian(N=1, D=4, covariance, dtype=float64, numpy)"
    r = gk.LowRankGaussian(np.zeros((2, 3)), cov_factor=np.ones((2, 3, 1)), cov_diag=1.0)
    assert repr(r) == "LowRankGaussian(N=2, D=3, R=1, dtype=float64, numpy)"


@needs_torch
def test_torch_in_torch_out_in_place(rng):
    import torch

    a = make_arrays(rng, "low_rank", "cov_factor", 5, 4)
    t = {k: torch.from_numpy(v).float() for k, v in a.items()}
    t["cov_factor"] = t["cov_factor"].transpose(1, 2).contiguous().transpose(1, 2)  # strided
    p = gaussian(t)
    assert "torch" in repr(p)
    assert _ext.addresses(p._spec) == [v.data_ptr() for v in t.values()]
    for out in (gk.kl_standard_normal(p), gk.kl(p, p), gk.pairwise_kl(p), gk.knn_kl(p, k=2)[1]):
        assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    idx, _ = gk.knn_kl(p, k=2)
    assert isinstance(idx, torch.Tensor) and idx.dtype == torch.int64
    a32 = {k: v.astype(np.float32) for k, v in a.items()}
    np.testing.assert_allclose(gk.pairwise_kl(p).numpy(), ref_pairwise(a32, a32), rtol=1e-5,
                               atol=1e-6)


@needs_torch
def test_numpy_and_torch_together_give_torch(rng):
    import torch

    a = make_arrays(rng, "diag", "var", 3, 2)
    p = gk.DiagGaussian(torch.from_numpy(a["mean"]), var=a["var"])
    out = gk.kl(p, gaussian(a))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    assert torch.all(out == 0)



def _resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@needs_torch
@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"), reason="Linux /proc")
def test_torch_results_are_freed_with_their_tensors():
    """Torch results live in the extension's memory, handed over by DLPack (python/src/arrays.cpp):
    each is an ordinary, writable tensor whose memory goes when the tensor does, taken as .grad
    or not, small (from operator new) or 4 MiB and more (mapped)."""
    import torch

    m = torch.zeros(256, 64, requires_grad=True)
    s = torch.zeros(256, 64, requires_grad=True)
    big = torch.zeros(1 << 21, 1)  # an 8 MiB result (float32), mapped

    def calls(count):
        for _ in range(count):
            out = gk.kl_standard_normal(gk.DiagGaussian(m, logvar=s))  # 5 results, 64 KiB each
            out.sum().backward()
            m.grad = s.grad = None
            with torch.no_grad():
                x = gk.kl_standard_normal(gk.DiagGaussian(big, logvar=big))
            x += 1  # writable
            assert x.is_contiguous() and float(x[0]) == 1.0

    calls(50)
    before = _resident_bytes()
    calls(200)  # 200 x (4 x 64 KiB + 1 KiB + 8 MiB) = 1.6 GiB if none were freed
    assert _resident_bytes() - before < (64 << 20)

def test_threads_at_once_give_correct_results(rng):
    batches = [make_arrays(rng, fam, par, 200, 8)
               for fam, par in [("diag", "std"), ("full", "covariance"), ("low_rank", "cov_factor")]]
    expected = [gk.pairwise_kl(gaussian(b)) for b in batches]
    errors = []

    def work(i):
        try:
            for _ in range(5):
                b = batches[i % 3]
                np.testing.assert_array_equal(gk.pairwise_kl(gaussian(b), threads=1), expected[i % 3])
                np.testing.assert_allclose(gk.kl(gaussian(b), gaussian(b)), 0, atol=1e-9)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_gil_is_released_during_compute(rng):
    # A second Python thread makes progress while a long pairwise call runs. Low rank: it keeps
    # the per-pair path (about 0.1 s here); full covariance now takes the GEMM path (a few ms).
    a = make_arrays(rng, "low_rank", "cov_factor", 300, 16)
    p = gaussian(a)
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(1)
            done.wait(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        gk.pairwise_kl(p, threads=1)
    finally:
        done.set()
        t.join()
    assert len(ticks) > 2
