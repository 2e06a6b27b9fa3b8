"""Files of gausskl-dask: the inputs of gausskl (.npz, NAME=FILE items of .npy or .csv) and Zarr
stores, read lazily by row chunks; the outputs written completely or not at all.

* ``.npy`` files and the members of ``.npz`` files stored without compression (``np.savez``) are
  memory-mapped: a task reads the rows of its chunk, nothing else. Compressed members
  (``np.savez_compressed``) and ``.csv`` tables are read whole, once, by this process.
* Zarr: a group holding arrays named as in a .npz (``mean``, ``std``, ...) or, as NAME=STORE
  items, one array each; read with ``da.from_zarr``.
* Outputs are written under a temporary name beside the final one and renamed when complete.
"""

from __future__ import annotations

import contextlib
import os
import struct
import uuid
import zipfile

import dask.array as da
import numpy as np
from dask.base import tokenize

from gausskl._distributions import CODES, FORMS, of_code

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None

# The scale arrays' names a file may hold: the parameterizations of the families (the
# library's table, python/src/families.hpp).
DIAG = tuple(f.param for f in FORMS if f.family == "diag")
FULL = tuple(dict.fromkeys(f.param for f in FORMS if f.family == "full"))
EXPECTED = ("expected mean and one of std, var, logvar, precision, scale_tril, covariance, "
            "precision_matrix, packed_scale_tril, or cov_factor with cov_diag")


class LoadError(ValueError):
    """A bad input file or name: exit status 2, as gausskl's "[load] ..." errors."""


def _fail(what: str):
    raise LoadError(f"[load] {what}")


class Mapped:
    """An array in a file at a byte offset (a .npy, or a .npz member stored as it is), read by
    slices through a memory map: a task reads only its rows. Pickles as its path and layout."""

    def __init__(self, path: str, offset: int, dtype, shape, fortran: bool):
        self.path, self.offset = path, offset
        self.dtype, self.shape, self.fortran = np.dtype(dtype), tuple(shape), fortran
        self.ndim = len(self.shape)

    def __getitem__(self, key):
        m = np.memmap(self.path, dtype=self.dtype, mode="r", offset=self.offset,
                      shape=self.shape, order="F" if self.fortran else "C")
        return np.asarray(m[key])


def _npy_layout(f, where: str):
    """(shape, fortran, dtype) of the .npy header at f's position, which it leaves at the data."""
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    except ValueError as e:
        _fail(f"{where}: not a .npy array ({e})")
    if dtype.hasobject:
        _fail(f"{where}: holds Python objects, not numbers")
    return shape, fortran, dtype


def _mapped(path: str, offset: int, where: str):
    with open(path, "rb") as f:
        f.seek(offset)
        shape, fortran, dtype = _npy_layout(f, where)
        data = f.tell()
    if len(shape) == 0:
        return np.asarray(Mapped(path, data, dtype, (1,), fortran)[:][0])
    return Mapped(path, data, dtype, shape, fortran)


def _npz(path: str) -> dict:
    """The members of a .npz: Mapped where stored, arrays where compressed."""
    out = {}
    try:
        z = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        _fail(f"{path}: cannot read this .npz ({e})")
    with z, open(path, "rb") as f:
        for info in z.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if info.compress_type == zipfile.ZIP_STORED:
                f.seek(info.header_offset)
                header = f.read(30)
                if len(header) < 30 or header[:4] != b"PK\x03\x04":
                    _fail(f"{path}: a damaged .npz (member {info.filename})")
                name_len, extra_len = struct.unpack("<HH", header[26:30])
                out[name] = _mapped(path, info.header_offset + 30 + name_len + extra_len,
                                    f"{path}: {info.filename}")
            else:
                with z.open(info) as member:
                    out[name] = np.lib.format.read_array(member, allow_pickle=False)
    return out


def _zarr_group(path: str) -> dict:
    import zarr

    try:
        group = zarr.open_group(path, mode="r")
    except Exception as e:  # noqa: BLE001 - zarr's errors differ by version; all mean "not a group"
        _fail(f"{path}: not a Zarr group ({type(e).__name__}: {e})")
    return {name: da.from_zarr(path, component=name) for name, _ in group.arrays()}


def _csv(path: str):
    try:
        a = np.loadtxt(path, delimiter=",", comments="#", ndmin=2, dtype=np.float64)
    except ValueError as e:
        _fail(f"{path}: {e}")
    return a


def _item(name: str, path: str):
    if path.endswith(".npy"):
        return _mapped(path, 0, path)
    if path.endswith(".csv"):
        return _csv(path)
    if path.rstrip("/").endswith(".zarr"):
        return da.from_zarr(path)
    _fail(f"--{name} {path}: the file must be .npy, .csv or .zarr")


def _check_names(side: str, arrays: dict, where: str):
    for n in arrays:
        if n not in ("mean", "cov_factor", "cov_diag") + DIAG + FULL:
            _fail(f"{where}: unknown array '{n}'; {EXPECTED}")
    found = [n for n in arrays if n in DIAG + FULL]
    factor, diag = "cov_factor" in arrays, "cov_diag" in arrays
    if factor != diag:
        _fail(f"{side}: " + ("cov_factor needs cov_diag" if factor else "cov_diag needs cov_factor"))
    if factor:
        found.append("cov_factor")
    if not found:
        _fail(f"{side}: no scale array; {EXPECTED}")
    if len(found) > 1:
        _fail(f"{side}: two scale descriptions, {found[0]} and {found[1]}; give exactly one")
    if "mean" not in arrays:
        _fail(f"{side}: no mean array; {EXPECTED}")
    return found[0]


def read_side(side: str, spec: list) -> dict:
    """The arrays of --p or --q by name: Mapped, NumPy or Dask arrays."""
    if len(spec) == 1 and "=" not in spec[0]:
        path = spec[0]
        if path.endswith(".npz"):
            if not os.path.isfile(path):
                _fail(f"{path}: no such file")
            arrays = _npz(path)
        elif path.rstrip("/").endswith(".zarr"):
            if not os.path.exists(path):
                _fail(f"{path}: no such Zarr store")
            arrays = _zarr_group(path)
        else:
            _fail(f"--{side} {path}: give a .npz file or a .zarr store, or NAME=FILE items "
                  "(.npy, .csv or .zarr)")
        where = path
    else:
        arrays = {}
        for item in spec:
            if "=" not in item:
                _fail(f"--{side} {item}: with several items, each must be NAME=FILE")
            name, path = item.split("=", 1)
            if name not in ("mean", "cov_factor", "cov_diag") + DIAG + FULL:
                _fail(f"--{side}: unknown array '{name}'; {EXPECTED}")
            if not os.path.exists(path):
                _fail(f"{path}: no such file")
            arrays[name] = _item(side, path)
        where = f"--{side}"
    _check_names(side, arrays, where)
    return arrays


def _lazy(a, rows: int, token: str):
    """a as a Dask array in chunks of `rows` rows (event axes whole)."""
    if isinstance(a, Mapped):
        chunks = (rows,) + tuple(a.shape[1:])
        name = "gausskl-read-" + tokenize(a.path, a.offset, os.path.getmtime(a.path), token)
        return da.from_array(a, chunks=chunks, name=name, asarray=True)
    if isinstance(a, da.Array):
        return a.rechunk((rows,) + tuple(-1 for _ in a.shape[1:])) if a.ndim else a
    a = np.asarray(a)
    return da.from_array(a, chunks=(rows,) + a.shape[1:]) if a.ndim else a


def gaussian(arrays: dict, rows: int, log_diagonal: bool, dtype=None):
    """The batch of one side, its arrays Dask arrays in chunks of `rows` rows (a mean [D], one
    distribution, stays whole); dtype: the arrays converted to it (float64 for --dtype float64)."""
    mean = arrays["mean"]
    one = len(mean.shape) == 1
    a = {n: (np.asarray(v[:]) if one and isinstance(v, Mapped) else v) for n, v in arrays.items()}
    if not one:
        a = {n: _lazy(v, rows, n) for n, v in a.items()}
    if dtype is not None:
        a = {n: v.astype(dtype) for n, v in a.items()}
    mean = a.pop("mean")
    if "cov_factor" in a:
        return of_code([mean, a["cov_factor"], a["cov_diag"]], CODES["cov_factor"])
    (param, scale), = a.items()
    packed_log = log_diagonal and param == "packed_scale_tril"
    return of_code([mean, scale], CODES["packed_log_diagonal" if packed_log else param])


def kinds(arrays: dict) -> set:
    """The float kinds the side's arrays compute in ("float32", "float64"; CSV is float64)."""
    from gausskl import _arrays

    return {_arrays.kind(a) for a in arrays.values()}


# -- outputs ------------------------------------------------------------------------------------

def temporary_beside(path: str) -> str:
    parent = os.path.dirname(os.path.abspath(path))
    return os.path.join(parent, f".{os.path.basename(path)}.partial-{uuid.uuid4().hex[:8]}")


def _exchange(a: str, b: str) -> bool:
    """Swaps the two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where the
    system or the file system has no such call."""
    import ctypes
    import errno

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), a, None, b)


def _sync(path: str):
    """Its data (a file) or its entries (a directory) on disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: str):
    import shutil

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def replace(temporary: str, path: str):
    """Moves a finished output into place in one step, so that an interruption at any point
    leaves at path the old output or the new one whole: a file by rename(2) once its data is
    on disk; a store (a directory), or anything over a directory, by exchanging the two paths
    (the old output, then at the temporary name, is removed after). Only where the file system
    cannot exchange is there a moment between two renames with neither at path (the old one
    is then at temporary + ".old")."""
    if os.path.isfile(temporary):
        _sync(temporary)
    over_dir = os.path.isdir(path) and not os.path.islink(path)
    if os.path.lexists(path) and (over_dir or os.path.isdir(temporary)):
        if _exchange(temporary, path):
            _remove(temporary)
        else:
            old = temporary + ".old"
            os.rename(path, old)
            os.rename(temporary, path)
            _remove(old)
    else:
        os.replace(temporary, path)
    _sync(os.path.dirname(os.path.abspath(path)))


# A temporary Zarr store is live while the file LIVE in it exists. Each chunk is written holding a
# shared lock on that file, opened without creating it; the store is removed holding the exclusive
# lock, the file first. The removal so waits for the writes under way, and a write that comes after
# it (a task still running when the computation failed) finds no file and writes nothing: nothing
# of the store reappears. (Without fcntl, not on POSIX, the file is checked without a lock.)
LIVE = ".gausskl-live"


@contextlib.contextmanager
def _holding(live: str, exclusive: bool):
    """Yields whether the store is live, holding the lock on its file meanwhile."""
    try:
        fd = os.open(live, os.O_RDONLY)
    except FileNotFoundError:
        yield False
        return
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield os.fstat(fd).st_nlink > 0  # not removed before the lock was had
    finally:
        os.close(fd)  # releases the lock


class LiveZarr:
    """A Zarr array of a temporary store that is written only while the store is live (Dask's
    store() assigns chunks to it). Pickles as the array and the path of the store's LIVE file."""

    def __init__(self, array, live: str):
        self.array, self.live = array, live

    def __setitem__(self, key, value):
        with _holding(self.live, exclusive=False) as live:
            if live:
                self.array[key] = value


def live_zarr_store(path: str):
    """A new directory for a temporary Zarr store at path, live."""
    os.mkdir(path)
    with open(os.path.join(path, LIVE), "x"):
        pass


def live_zarr_array(store: str, component: str | None, x: da.Array) -> LiveZarr:
    """A new Zarr array in the live temporary store, as Dask's to_zarr makes it for x (chunks
    x's first ones, which _regular has made all one size along each axis but the last)."""
    import zarr

    kw = {"shape": x.shape, "chunks": tuple(max(c[0], 1) for c in x.chunks), "dtype": x.dtype}
    if int(zarr.__version__.split(".")[0]) >= 3:
        array = zarr.create_array(store=store, **({"name": component} if component else {}), **kw)
    else:
        array = zarr.create(store=store, path=component, **kw)
    return LiveZarr(array, os.path.join(store, LIVE))


def finish_zarr_store(store: str):
    """The store complete (nothing writes to it any more): no longer a temporary one."""
    os.remove(os.path.join(store, LIVE))


def remove_zarr_store(store: str):
    """Removes a temporary store, once the writes under way are done; none comes after."""
    import shutil

    live = os.path.join(store, LIVE)
    with _holding(live, exclusive=True):
        with contextlib.suppress(FileNotFoundError):
            os.remove(live)
        shutil.rmtree(store, ignore_errors=True)


class NpyTarget:
    """A .npy file being written: Dask's store() assigns blocks to it (through a memory map, so
    workers on this machine write their own blocks). Pickles as its path and layout."""

    def __init__(self, path: str, dtype, shape):
        m = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=tuple(shape))
        self.path, self.offset = path, m.offset
        self.dtype, self.shape = np.dtype(dtype), tuple(shape)
        del m

    def __setitem__(self, key, value):
        m = np.memmap(self.path, dtype=self.dtype, mode="r+", offset=self.offset,
                      shape=self.shape)
        m[key] = value
        m.flush()


def shortest(v) -> str:
    """The shortest text that reads back as v in its own type, as C++'s std::to_chars writes it
    (the shorter of the fixed and scientific forms, fixed on a tie): gausskl's CSV numbers."""
    if not np.isfinite(v):
        return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
    fixed = np.format_float_positional(v, unique=True, trim="-")
    sci = np.format_float_scientific(v, unique=True, trim="-", exp_digits=2)
    return fixed if len(fixed) <= len(sci) else sci
