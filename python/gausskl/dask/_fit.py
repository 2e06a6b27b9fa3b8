"""gk.dask.fit_gaussian: a Gaussian fitted to the rows of a Dask array, chunk by chunk.

One task per row chunk fills a gk.MomentAccumulator with its rows (numbered in the whole array
in error messages); a tree of merges, split_every at a time, joins them by the library's exact
pairwise update. Only accumulators (O(D^2) each) travel between workers, never rows.
"""

from __future__ import annotations

import numpy as np
from dask.base import tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph

import dask.array as da

import gausskl as gk
from gausskl._moments import _count, _family


def moments_block(block, start: int, d: int, family: str, threads: int):
    """The accumulator of one chunk of rows, whose first row is row `start` of the array."""
    return gk.MomentAccumulator(d, family, threads=threads).update(np.asarray(block),
                                                                   first_row=start)


def merge_moments(parts: list):
    """A new accumulator holding the rows of all of `parts` (which are left as they are)."""
    out = gk.MomentAccumulator(parts[0].d, parts[0].family, threads=parts[0]._acc.threads)
    for part in parts:
        out.merge(part)
    return out


def _dask_rows(op: str, x) -> da.Array:
    if not isinstance(x, da.Array):
        raise TypeError(f"[{op}] x must be a Dask array [N, D] (for NumPy or torch, use "
                        f"gk.fit_gaussian), found {type(x).__name__}")
    if x.ndim != 2:
        raise ValueError(f"[{op}] x must be [N, D] (rows of features), found {x.ndim} "
                         "dimensions")
    if x.dtype.kind not in "fiub" or x.dtype.itemsize > 8:
        raise ValueError(f"[{op}] x must be float32 or float64 (or integers), found {x.dtype}")
    if any(np.isnan(c) for c in x.chunks[0]):
        raise ValueError(f"[{op}] x has unknown chunk sizes; call x.compute_chunk_sizes() first")
    return x


def moments(x, *, family="full", threads=1, split_every=8) -> Delayed:
    """The rows of the Dask array ``x [N, D]`` as a lazy ``gk.MomentAccumulator`` (a Dask
    ``Delayed``): to merge with other accumulators, save, or turn into a Gaussian later."""
    op = "fit_gaussian"
    x = _dask_rows(op, x)
    family = _family(op, family)
    threads = _count(op, "threads", threads)
    split_every = max(2, _count(op, "split_every", split_every))
    x = x.rechunk({1: -1})  # a task sees whole rows
    d = int(x.shape[1])
    if d < 1:
        raise ValueError(f"[{op}] D must be >= 1, found {d}")
    starts = np.concatenate([[0], np.cumsum(x.chunks[0])[:-1]]).astype(int)
    name = "gausskl-moments-" + tokenize(x, family, threads, split_every)
    dsk = {}
    level = []
    for i in range(x.numblocks[0]):
        key = (name, 0, i)
        dsk[key] = (moments_block, (x.name, i, 0), int(starts[i]), d, family, threads)
        level.append(key)
    depth = 0
    while len(level) > 1:
        depth += 1
        level_next = []
        for j in range(0, len(level), split_every):
            key = (name, depth, j // split_every)
            dsk[key] = (merge_moments, list(level[j:j + split_every]))
            level_next.append(key)
        level = level_next
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return Delayed(level[0], graph, layer=name)


def fit_gaussian(x, ddof=1, *, family="full", threads=1, split_every=8):
    """The Gaussian fitted to the rows of the Dask array ``x [N, D]``, computed now (on the
    current scheduler: a ``distributed.Client`` if one is active): ``gk.FullGaussian(mean,
    covariance=)`` (``family="diag"``: ``gk.DiagGaussian(mean, var=)``) with NumPy float64
    arrays, equal to ``gk.fit_gaussian`` of the whole array to rounding (np.cov's, to ~1e-13,
    whatever the chunks). One task per row chunk (the columns are joined into one chunk first),
    then a tree of exact merges ``split_every`` at a time; ``threads`` per task (default 1: Dask's
    workers are the parallelism). ``ddof`` as ``gk.fit_gaussian``: 1 (n - 1) by default, 0 to
    divide by n. A value that is not finite is a ValueError naming its row in the whole array.
    For the accumulator itself (to merge with others or save), ``gk.dask.moments(x)``.
    """
    op = "fit_gaussian"
    ddof = _count(op, "ddof", ddof)
    x = _dask_rows(op, x)
    if ddof < 0:
        raise ValueError(f"[{op}] ddof must be >= 0, found {ddof}")
    if ddof >= x.shape[0]:
        raise ValueError(f"[{op}] ddof = {ddof} needs more than {ddof} rows, found {x.shape[0]} "
                         "(the covariance divides by N - ddof)")
    acc = moments(x, family=family, threads=threads, split_every=split_every).compute()
    return acc.gaussian(ddof)
