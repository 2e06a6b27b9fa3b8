"""One side (p or q) of an operation on Dask: the batch's arrays as Dask arrays in row chunks.

A side holds every array of the batch broadcast to ``[N, ...]``, cut into the same row chunks,
with the event axes whole (a chunk of rows is a batch the library can take as it is), and what
a worker needs to make the batch again from one chunk of each array (``form``, see
``_tasks.batch``).
"""

from __future__ import annotations

import math

import dask.array as da
import numpy as np

from gausskl import _arrays
from gausskl._distributions import FAMILIES, DiagGaussian, FullGaussian, Gaussian


def _nonempty(chunks) -> tuple:
    """Row chunks without empty ones (a block on the diagonal of q = p is then the one whose two
    chunks start at the same row); (0,) for no rows."""
    return tuple(int(c) for c in chunks if c) or (0,)


def form_of(g: Gaussian) -> tuple:
    """(family, param, log_diagonal): what _tasks.batch needs to remake a batch like g."""
    log_diagonal = isinstance(g, FullGaussian) and g.log_diagonal
    return (g.family, g.param, log_diagonal)


def _as_dask(a, shape, rows):
    """a broadcast to shape as a Dask array in row chunks `rows` (event axes whole). A NumPy
    array with broadcast (stride 0) axes goes into the graph at its own size, not expanded."""
    if not _arrays.is_dask(a):
        a = np.asarray(a)
        if a.shape != tuple(shape):
            a = a.reshape((1,) * (len(shape) - a.ndim) + a.shape)
        small = a[tuple(slice(0, 1) if st == 0 and n > 1 else slice(None)
                        for st, n in zip(a.strides, a.shape))]
        a = da.from_array(np.ascontiguousarray(small), chunks=-1)
    if tuple(a.shape) != tuple(shape):
        a = da.broadcast_to(a, shape)
    return a.rechunk((rows,) + tuple((n,) for n in shape[1:]))


class Side:
    """The arrays of a batch of N distributions (batch shape ``(N,)``, or ``()`` for one) as
    Dask arrays ``[N, ...]`` in row chunks ``chunks``."""

    def __init__(self, op: str, name: str, g: Gaussian, chunks=None):
        if not isinstance(g, FAMILIES):
            raise TypeError(f"[{op}] {name} must be a DiagGaussian, FullGaussian or "
                            f"LowRankGaussian, found {type(g).__name__}")
        if len(g.batch_shape) > 1:
            raise ValueError(f"[{op}] {name} must have one batch axis (N distributions) on Dask, "
                             f"found batch shape {tuple(g.batch_shape)}")
        for a in g._spec[1:]:
            if any(isinstance(s, float) and math.isnan(s) for s in a.shape):
                raise ValueError(f"[{op}] {name} has an array of unknown chunk sizes "
                                 f"(shape {a.shape}); call compute_chunk_sizes() on it first")
        self.name = name
        self.form = form_of(g)
        self.code = g._spec[0]
        self.n = int(g.n)
        self.d = int(g.d)
        self.kind = _arrays.common_kind(g._spec[1:])
        ranks = g._event_ranks()
        arrays = g._spec[1:]
        if chunks is None:
            chunks = self._row_chunks(arrays, ranks)
        self.chunks = _nonempty(chunks)
        self.arrays = [
            _as_dask(a, (self.n, *(int(s) for s in a.shape[a.ndim - r:])), self.chunks)
            for a, r in zip(arrays, ranks)
        ]
        self.starts = tuple(int(s) for s in np.cumsum((0,) + self.chunks[:-1]))

    def _row_chunks(self, arrays, ranks) -> tuple:
        """The row chunks of the first Dask array that is not broadcast along the rows (a batch
        of NumPy arrays is one chunk)."""
        for a, r in zip(arrays, ranks):
            if _arrays.is_dask(a) and a.ndim > r and a.shape[0] == self.n:
                return a.chunks[0]
        return (self.n,)

    def with_chunks(self, chunks) -> "Side":
        """The same side in other row chunks."""
        other = object.__new__(Side)
        other.__dict__.update(self.__dict__)
        other.chunks = _nonempty(chunks)
        other.arrays = [a.rechunk((other.chunks,) + a.chunks[1:]) for a in self.arrays]
        other.starts = tuple(int(s) for s in np.cumsum((0,) + other.chunks[:-1]))
        return other

    @property
    def nchunks(self) -> int:
        return len(self.chunks)

    def keys(self, c: int) -> list:
        """The graph keys of chunk c of every array, in the batch's order (mean first)."""
        return [(a.name, c) + (0,) * (a.ndim - 1) for a in self.arrays]

    def token(self) -> tuple:
        return (self.form, tuple(a.name for a in self.arrays))


def one_row() -> DiagGaussian:
    """N(0, 1) in one dimension: the batch on which the options are checked eagerly."""
    return DiagGaussian(np.zeros((1, 1)), std=np.ones((1, 1)))
