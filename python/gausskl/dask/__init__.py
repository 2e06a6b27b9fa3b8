"""gausskl on Dask: all pairs, nearest neighbours and row-wise KL over batches in row chunks.

The extra ``pip install "gausskl[dask]"`` brings Dask (``dask[array]``, ``distributed``, ``zarr``).
The distributions are the ordinary ``gk.DiagGaussian``, ``gk.FullGaussian`` and
``gk.LowRankGaussian`` (every parameterization) whose arrays are Dask arrays, cut into chunks of
rows; NumPy arrays mix in (a broadcast scale stays small). The operations return lazy Dask arrays::

    import dask.array as da, gausskl as gk
    mu = da.from_zarr("emb.zarr", component="mean")           # [N, D] in row chunks
    p = gk.DiagGaussian(mu, std=da.from_zarr("emb.zarr", component="std"))
    kl = gk.dask.pairwise_kl(p)                                # lazy [N, N]
    gk.dask.to_zarr(kl, "kl.zarr")                             # streamed, chunk by chunk
    idx, val = gk.dask.knn_kl(p, k=10, exclude_self=True)      # lazy [N, 10] each

* ``pairwise_kl(p, q=None)``: one task per (row chunk of p, row chunk of q), each the library's
  ``gk.pairwise_kl`` on the two chunks; the result's chunks are those pairs. Chunks that would
  make more than ``MAX_TASKS`` (100,000) blocks are recut into chunks sized from the memory
  budget (``p_rows``, ``q_rows`` choose them).
* ``knn_kl(p, q=None, k=...)``: the same blocks, each the library's ``gk.knn_kl`` giving the k
  best of its columns with global indices, then a tree of merges (``split_every`` lists at a
  time) keeping the k best by (value, index): ties go to the lower index, so the result does not
  depend on the chunking and is the single-process ``gk.knn_kl``'s, bit for bit.
* ``kl(p, q)``, ``kl_standard_normal(p)``: row-wise, one task per row chunk (q is cut like p).
* ``fit_gaussian(x, ddof=1)``: the Gaussian fitted to the rows of a Dask array ``x [N, D]``
  (FID's statistics), one ``gk.MomentAccumulator`` per row chunk merged by a tree of exact
  pairwise updates; ``moments(x)`` gives the merged accumulator, lazily.

The tasks run on whatever Dask scheduler computes them (``distributed`` workers, threads, ...);
there is no scheduler, queue or pool here. Each task is one library call, which releases the GIL.
Options are the library's, per task: ``tolerance``, ``jitter``, ``memory_budget`` (bytes the
library may allocate for one block; the block's result and the chunks it reads are not counted)
and ``threads`` (default 1: Dask's workers are the parallelism; 0 gives a task every core).

Bad input is found by the task whose chunk holds it and raised to the caller as the library's
``ValueError``, with the row counted in the whole batch:
``[knn_kl] p.scale (std) must be positive and finite, found -0.5 at row 123456, column 3``.
When several chunks hold bad values, any one of them may be the one reported. JitterWarnings are
emitted on the workers, not to the caller.

Results are those of the single-process operations on the same inputs, bit for bit, for every
family, parameterization and dtype, whatever the chunking, q = p or q given: the library gives
each entry a value that depends only on its own two distributions and the options
(tests/dask/test_one_process_bits.py).
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing.pool
import operator
import os
import uuid

import dask
import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

import gausskl as gk
from gausskl import _ext
from gausskl import _options
from gausskl.dask import _files, _tasks
from gausskl.dask._fit import fit_gaussian, moments
from gausskl.dask._sides import Side, one_row

__all__ = ["compute_all", "fit_gaussian", "kl", "kl_standard_normal", "knn_kl", "moments",
           "pairwise_kl", "to_zarr"]


def _option_tuple(op: str, jitter, tolerance, memory_budget, threads) -> tuple:
    """The options as each task passes them, after the library has checked them on one row (the
    same errors as the single-process call, raised now rather than at compute time)."""
    jitter, memory_budget, threads = _options.common(op, jitter, memory_budget, threads)
    if tolerance is not None:
        tolerance = _options.tolerance(op, tolerance)
    g = one_row()
    kw = {"jitter": jitter, "memory_budget": memory_budget, "threads": threads}
    if op == "kl":
        gk.kl(g, g, **kw)
    elif op == "kl_standard_normal":
        gk.kl_standard_normal(g, **kw)
    elif op == "pairwise_kl":
        gk.pairwise_kl(g, g, tolerance=tolerance, **kw)
    else:
        gk.knn_kl(g, g, k=1, tolerance=tolerance, **kw)
    return (jitter, tolerance, memory_budget, threads)


def _out_dtype(*sides: Side):
    return np.dtype("float64" if any(s.kind == "float64" for s in sides) else "float32")


def _same_d(op: str, p: Side, q: Side):
    if p.d != q.d:
        raise ValueError(f"[{op}] p and q have D = {p.d} and D = {q.d}; D must match")


def _array(name: str, dsk: dict, deps: list, chunks: tuple, dtype) -> da.Array:
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=deps)
    return da.Array(graph, name, chunks=chunks, dtype=dtype,
                    meta=np.empty((0,) * len(chunks), dtype=dtype))


def kl(p, q, *, jitter: float = 0.0, memory_budget: int | None = 0, threads: int = 1):
    """Row-wise ``out[i] = KL(p_i || q_i)``, lazy ``[N]`` in p's row chunks (q is cut like p; a
    side of one distribution is paired with every row of the other). As ``gk.kl``."""
    op = "kl"
    options = _option_tuple(op, jitter, None, memory_budget, threads)
    P, Q = Side(op, "p", p), Side(op, "q", q)
    _same_d(op, P, Q)
    if P.n == Q.n:
        Q = Q.with_chunks(P.chunks)
        rows, pairs = P.chunks, [(c, c) for c in range(P.nchunks)]
    elif P.n == 1:
        P = P.with_chunks((1,))
        rows, pairs = Q.chunks, [(0, c) for c in range(Q.nchunks)]
    elif Q.n == 1:
        Q = Q.with_chunks((1,))
        rows, pairs = P.chunks, [(c, 0) for c in range(P.nchunks)]
    else:
        raise ValueError(f"[{op}] p and q have N = {P.n} and N = {Q.n}; N must match or one "
                         "side must have N = 1")
    name = "gausskl-kl-" + tokenize(P.token(), Q.token(), options)
    dsk = {(name, c): (_tasks.kl_block, P.form, P.keys(a), P.starts[a], Q.form, Q.keys(b),
                       Q.starts[b], options)
           for c, (a, b) in enumerate(pairs)}
    return _array(name, dsk, P.arrays + Q.arrays, (rows,), _out_dtype(P, Q))


def kl_standard_normal(p, *, jitter: float = 0.0, memory_budget: int | None = 0,
                       threads: int = 1):
    """``out[i] = KL(p_i || N(0, I))``, lazy ``[N]`` in p's row chunks. As
    ``gk.kl_standard_normal``."""
    op = "kl_standard_normal"
    options = _option_tuple(op, jitter, None, memory_budget, threads)
    P = Side(op, "p", p)
    name = "gausskl-kl-standard-normal-" + tokenize(P.token(), options)
    dsk = {(name, a): (_tasks.kl_standard_normal_block, P.form, P.keys(a), P.starts[a], options)
           for a in range(P.nchunks)}
    return _array(name, dsk, P.arrays, (P.chunks,), _out_dtype(P))


# Beyond this many block tasks a graph costs more in the client and the scheduler (about 1 ms and
# ~100 B of graph a task) than its blocks save: 1,537 rows in 1-row chunks made 2.4M tasks.
MAX_TASKS = 100_000
# Rows per chunk when a side is recut: a block's result and its chunks' arrays within this.
BLOCK_BYTES = 64 << 20


def _pow2_floor(x: float) -> int:
    return 1 << max(0, int(np.floor(np.log2(max(1.0, x)))))


def block_rows(side: Side, dtype, memory_budget: int | None) -> int:
    """Rows per chunk for recut sides: the largest power of two whose square block of results
    (in dtype) and whose chunk of inputs (as float64, every array of the side) each fit in the
    memory budget (BLOCK_BYTES when it is 0 or None); at most the side's rows."""
    budget = memory_budget or BLOCK_BYTES
    row_bytes = 8 * sum(int(np.prod(a.shape[1:], dtype=np.int64)) for a in side.arrays)
    rows = min(_pow2_floor(np.sqrt(budget / np.dtype(dtype).itemsize)),
               _pow2_floor(budget / max(row_bytes, 1)))
    return max(1, min(rows, max(side.n, 1)))


def _regular_cut(n: int, rows: int) -> tuple:
    return (rows,) * (n // rows) + ((n % rows,) if n % rows else ())


def _rows_argument(op: str, name: str, rows):
    if rows is None:
        return None
    if isinstance(rows, bool):
        raise TypeError(f"[{op}] {name} must be an int, found bool")
    rows = operator.index(rows)
    if rows < 1:
        raise ValueError(f"[{op}] {name} = {rows} must be at least 1")
    return rows


def pairwise_kl(p, q=None, *, jitter: float = 0.0, tolerance: float | None = 0.0,
                memory_budget: int | None = 0, threads: int = 1, p_rows: int | None = None,
                q_rows: int | None = None):
    """All pairs ``out[i, j] = KL(p_i || q_j)``, a lazy ``[N, M]`` Dask array whose chunks are
    (p's row chunks, q's row chunks): one task per pair of chunks, each the library's
    ``gk.pairwise_kl`` on them. Without q, q = p, cut like p, and the diagonal is exactly 0.

    p_rows, q_rows: rows per chunk of p and of q for the blocks (and the result's chunks); with
    q = p, p_rows cuts both (blocks on the diagonal stay the library's q = p calls). By default
    each side keeps its own chunks unless they make more than ``MAX_TASKS`` (100,000) blocks:
    then every side with more chunks than needed is recut into chunks of ``block_rows`` rows
    (a power of two sized so that a block's results and a chunk's inputs each fit in
    memory_budget, or 64 MiB: 4,096 rows for float32 results at small D), so the task count
    grows with N M / rows^2, not with the caller's smallest chunk. A graph still beyond
    MAX_TASKS (explicit small rows, or N in the millions) gives a ``PerformanceWarning`` that
    says which rows to pass.

    The matrix need never be held whole: ``gk.dask.to_zarr(out, path)`` (or Dask's own
    ``out.to_zarr``) writes it chunk by chunk. Options as in ``gk.pairwise_kl``, per task
    (``memory_budget`` bounds the library's allocations for one block, whose result is the
    block's own ``n_a * m_b`` values besides).
    """
    op = "pairwise_kl"
    options = _option_tuple(op, jitter, tolerance, memory_budget, threads)
    p_rows, q_rows = _rows_argument(op, "p_rows", p_rows), _rows_argument(op, "q_rows", q_rows)
    same = q is None
    if same and q_rows is not None:
        raise ValueError(f"[{op}] q = p is cut like p: give p_rows (q_rows applies with q given)")
    P = Side(op, "p", p)
    Q = P if same else Side(op, "q", q)
    _same_d(op, P, Q)
    dtype = _out_dtype(P, Q)
    if p_rows is not None:
        P = P.with_chunks(_regular_cut(P.n, p_rows))
    if same:
        Q = P
    elif q_rows is not None:
        Q = Q.with_chunks(_regular_cut(Q.n, q_rows))
    if p_rows is None and q_rows is None and P.nchunks * Q.nchunks > MAX_TASKS:
        P, Q = _recut(P, Q, same, dtype, options[2])
    tasks = P.nchunks * Q.nchunks
    if tasks > MAX_TASKS:
        import warnings

        from dask.array.core import PerformanceWarning

        rows = min(block_rows(P, dtype, options[2]), block_rows(Q, dtype, options[2]))
        warnings.warn(
            f"[{op}] {tasks:,} block tasks ({P.nchunks:,} x {Q.nchunks:,} row chunks), more "
            f"than {MAX_TASKS:,}: the graph costs more than its blocks; pass larger p_rows"
            + ("" if same else " and q_rows") + f" ({rows} rows keep a block within the "
            "memory budget, 64 MiB when it is 0) or a larger memory_budget",
            PerformanceWarning, stacklevel=2)
    name = "gausskl-pairwise-kl-" + tokenize(P.token(), Q.token(), same, options)
    dsk = {(name, a, b): (_tasks.pairwise_block, P.form, P.keys(a), P.starts[a], Q.form,
                          Q.keys(b), Q.starts[b], same, options)
           for a in range(P.nchunks) for b in range(Q.nchunks)}
    deps = P.arrays if same else P.arrays + Q.arrays
    return _array(name, dsk, deps, (P.chunks, Q.chunks), dtype)


def _recut(P: Side, Q: Side, same: bool, dtype, memory_budget):
    """The sides whose chunks make too many blocks recut into chunks of block_rows rows (q = p:
    both alike)."""
    if same:
        rows = block_rows(P, dtype, memory_budget)
        if P.nchunks > -(-P.n // rows):
            P = P.with_chunks(_regular_cut(P.n, rows))
        return P, P
    for which in ("p", "q"):
        side = P if which == "p" else Q
        rows = block_rows(side, dtype, memory_budget)
        if side.nchunks > -(-side.n // rows):
            side = side.with_chunks(_regular_cut(side.n, rows))
        P, Q = (side, Q) if which == "p" else (P, side)
    return P, Q


def knn_kl(p, q=None, *, k: int, exclude_self: bool = False, jitter: float = 0.0,
           tolerance: float | None = 0.0, memory_budget: int | None = 0, threads: int = 1,
           split_every: int = 8, q_rows: int | None = None):
    """Nearest neighbours by KL: for each ``p_i`` the ``k`` smallest ``KL(p_i || q_j)``,
    ascending, ties to the lower ``j``, as lazy ``(indices, kl)``, each ``[N, k]`` in p's row
    chunks (indices int64 into q). Without q, q = p (cut like p unless q_rows) and
    ``exclude_self=True`` leaves out ``j == i``.

    One task per (row chunk of p, row chunk of q) gives the block's k best with global indices
    (the library's ``gk.knn_kl``, re-scored exactly), and a tree of merges, ``split_every``
    lists at a time, keeps the k best by (value, index). The [N, M] matrix is never held; a
    chunk of q may have fewer than k rows. Equal, bit for bit, to ``gk.knn_kl`` on the same
    inputs whatever the chunks. Options as in ``gk.knn_kl``, per task.

    q_rows (q = p only): rows per chunk of q, which is then cut apart from p (default: like p).
    Every block re-scores its rows' best candidates exactly (about 45 us a row at D = 64), so
    fewer, larger chunks of q cost less; the blocks are then calls on two batches, and with
    exclude_self each keeps k + 1 and the last step leaves out j = i. See docs/scaling.md.
    """
    op = "knn_kl"
    options = _option_tuple(op, jitter, tolerance, memory_budget, threads)
    if isinstance(k, bool):
        raise TypeError(f"[{op}] k must be an int, found bool")
    k = operator.index(k)
    split_every = max(2, operator.index(split_every))
    exclude_self = bool(exclude_self)
    P = Side(op, "p", p)
    Q = P if q is None else Side(op, "q", q)
    _same_d(op, P, Q)
    same = q is None
    if q_rows is not None and not same:
        raise ValueError(f"[{op}] q_rows applies to q = p (call without q; cut q yourself)")
    coarse = False
    if q_rows is not None:
        q_rows = operator.index(q_rows)
        if q_rows < 1:
            raise ValueError(f"[{op}] q_rows = {q_rows} must be at least 1")
        cut = (q_rows,) * (P.n // q_rows) + ((P.n % q_rows,) if P.n % q_rows else ())
        if tuple(cut) != P.chunks:
            Q, coarse = P.with_chunks(cut), True
    if not same and exclude_self:
        raise ValueError(f"[{op}] " + _ext.RULES["exclude_self"])
    max_k = Q.n - 1 if exclude_self else Q.n
    if k < 1 or k > max_k:
        raise ValueError(f"[{op}] " + _ext.RULES["k_range"].format(
            k=k, bound="M - 1" if exclude_self else "M", max=max_k))
    dtype = _out_dtype(P, Q)
    # float32 results: the blocks keep the exact doubles, ranked as the library ranks them,
    # from float64 copies screened with float32's default tolerance (the tolerance changes
    # the speed, not the result). The float kernel that a float32 call may use from about 1e-5
    # is not used on the copies.
    in_double = dtype == np.float32
    block_dtype = np.dtype("float64") if in_double else dtype
    if in_double and not options[1]:
        options = (options[0], _ext.DEFAULT_TOLERANCE_FLOAT32, *options[2:])
    token = tokenize(P.token(), Q.token(), same, coarse, k, exclude_self, options, split_every)
    # Cut apart, q = p has no blocks on a diagonal: every block is a call on two batches, and
    # exclude_self keeps k + 1 to the end, where j = i is left out.
    drop_self = coarse and exclude_self
    kk = k + 1 if drop_self else k
    blocks, merges = "gausskl-knn-block-" + token, "gausskl-knn-merge-" + token
    final = "gausskl-knn-" + token
    dsk = {}
    for a in range(P.nchunks):
        level = []
        for b in range(Q.nchunks):
            dsk[(blocks, a, b)] = (_tasks.knn_block, P.form, P.keys(a), P.starts[a], Q.form,
                                   Q.keys(b), Q.starts[b], same, same and not coarse and a == b,
                                   kk, exclude_self and not drop_self, in_double, block_dtype,
                                   options)
            level.append((blocks, a, b))
        depth = 0
        while len(level) > 1:
            groups = [level[i:i + split_every] for i in range(0, len(level), split_every)]
            level = []
            for g, keys in enumerate(groups):
                key = (merges, a, depth, g)
                dsk[key] = (_tasks.knn_merge, list(keys), kk)
                level.append(key)
            depth += 1
        dsk[(final, a)] = (_tasks.knn_final, level[0], k, dtype,
                           P.starts[a] if drop_self else None)
    deps = P.arrays if same and not coarse else P.arrays + Q.arrays
    shared = HighLevelGraph.from_collections(final, dsk, dependencies=deps)
    names = ("gausskl-knn-indices-" + token, "gausskl-knn-kl-" + token)
    out = []
    for which, (name, dt) in enumerate(zip(names, (np.dtype("int64"), dtype))):
        parts = {(name, a, 0): (operator.getitem, (final, a), which) for a in range(P.nchunks)}
        graph = HighLevelGraph({**shared.layers, name: parts},
                               {**shared.dependencies, name: {final}})
        out.append(da.Array(graph, name, chunks=(P.chunks, (k,)), dtype=dt,
                            meta=np.empty((0, 0), dtype=dt)))
    return tuple(out)


def _regular(x: da.Array) -> da.Array:
    """x in chunks Zarr can hold: all of one size along each axis but the last chunk."""
    chunks = tuple(c if all(s == c[0] for s in c[:-1]) and c[-1] <= c[0] else c[0]
                   for c in x.chunks)
    return x if chunks == x.chunks else x.rechunk(chunks)


def to_zarr(arrays, path, *, overwrite: bool = False, client=None, progress: bool = False):
    """Writes one array, or a dict of arrays as a group ({"indices": ..., "kl": ...}), to a new
    Zarr store at the local path, chunk by chunk (Zarr's chunks are the arrays' own), completely
    or not at all: the store is written beside it under a temporary name and renamed once every
    chunk is in; if a task fails, the tasks still running are let finish and the temporary store
    is removed, and a chunk a task would write after that is not written (Dask's own ``to_zarr``
    leaves what was written). An existing store at path is an error unless overwrite, which
    replaces it at the end.

    client: the distributed Client to compute on (default: the current one if there is one, else
    the scheduler dask.compute would use); progress: Dask's progress bar on stderr.
    """
    path = os.fspath(path)
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"[to_zarr] {path} exists (overwrite=True replaces it)")
    parent = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(parent, f".{os.path.basename(path)}.partial-{uuid.uuid4().hex[:8]}")
    named = arrays.items() if isinstance(arrays, dict) else [(None, arrays)]
    try:
        _files.live_zarr_store(temporary)
        writes = []
        for name, a in named:
            a = _regular(a)
            writes.append(da.store(a, _files.live_zarr_array(temporary, name, a), lock=False,
                                   compute=False))
        compute_all(writes, client, progress)
        _files.finish_zarr_store(temporary)
        _files.replace(temporary, path)
    except BaseException:
        # Once the tasks still writing are done (compute_all waited for them; the removal waits
        # for a write under way, and a later one writes nothing).
        _files.remove_zarr_store(temporary)
        raise


def _current_client():
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def compute_all(collections: list, client=None, progress: bool = False) -> list:
    """The collections computed on client (default: the current distributed Client, if any, else
    where dask.compute would compute them: the scheduler Dask's config names, a Client among
    them, else the collections' own). When a task fails, the other tasks of the graph are
    cancelled and those already running are waited for (a worker cannot stop them) before the
    error is raised, so that a caller removing their output does not race with them. (A
    scheduler given to Dask as a function of its own is not waited for.)"""
    scheduler = None
    client = client or _current_client()
    if client is None:
        from dask.base import get_scheduler

        scheduler = get_scheduler(collections=collections)
        client = _client_of(scheduler)
    if client is None:
        return _compute_locally(collections, scheduler)
    futures = client.compute(list(collections))
    try:
        if progress:
            import contextlib
            import sys

            from distributed import progress as bar

            with contextlib.redirect_stdout(sys.stderr):
                bar(futures)
        return client.gather(futures)
    except BaseException:
        # The layers' tokens: the scheduler may run tasks under fused names ("a-b-<token of
        # b>"), which end with the token of one of the graph's own layers.
        tokens = {str(name).rsplit("-", 1)[-1]
                  for c in collections for name in c.__dask_graph__().layers}
        client.cancel(futures)
        _wait_until_idle(client, tokens)
        raise


def _client_of(scheduler):
    """The distributed Client whose get scheduler is (Dask's config may name a Client, or
    "dask.distributed", that is not the default one), else None."""
    owner = getattr(scheduler, "__self__", None)
    try:
        from distributed import Client
    except ImportError:
        return None
    return owner if isinstance(owner, Client) else None


class _Joined(concurrent.futures.Executor):
    """An executor's submit, keeping the futures so that all of them can be waited for: Dask's
    local schedulers raise a task's error while the tasks already submitted still run (at most
    one batch a worker)."""

    def __init__(self, executor):
        if isinstance(executor, multiprocessing.pool.Pool):
            from dask.local import MultiprocessingPoolExecutor

            executor = MultiprocessingPoolExecutor(executor)
        self._executor, self._futures = executor, []
        self._max_workers = (getattr(executor, "_max_workers", None)
                             or dask.config.get("num_workers", None) or os.cpu_count() or 1)

    def submit(self, fn, /, *args, **kwargs):
        future = self._executor.submit(fn, *args, **kwargs)
        self._futures.append(future)
        return future

    def join(self):
        concurrent.futures.wait(self._futures)


def _compute_locally(collections: list, scheduler) -> list:
    """dask.compute on a local scheduler (scheduler: Dask's get for the collections). The
    threaded one (the default for arrays) raises a task's error while its other threads still
    run their tasks: it is given a pool here that is shut down, waiting for them, before the
    error goes on. An executor in Dask's config (as the scheduler, or the pool of the threaded
    or process scheduler) has the tasks submitted to it waited for."""
    from dask import multiprocessing as dask_processes
    from dask import threaded

    named = dask.config.get("scheduler", None)
    configured = dask.config.get("pool", None)
    if isinstance(named, concurrent.futures.Executor):
        joined = _Joined(named)
        kw = {"scheduler": joined}
    elif scheduler in (threaded.get, dask_processes.get) and configured is not None:
        joined = _Joined(configured)
        kw = {"scheduler": scheduler, "pool": joined}
    elif scheduler is threaded.get:
        pool_type = getattr(threaded, "ContextAwareThreadPoolExecutor",
                            concurrent.futures.ThreadPoolExecutor)
        pool = pool_type(dask.config.get("num_workers", None) or os.cpu_count() or 1)
        try:
            return list(dask.compute(*collections, scheduler=threaded.get, pool=pool))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    else:
        # The synchronous scheduler runs one task at a time; the process scheduler makes its own
        # pool and shuts it down, waiting for its tasks.
        return list(dask.compute(*collections, scheduler=scheduler))
    try:
        return list(dask.compute(*collections, **kw))
    finally:
        joined.join()


def _executing(dask_worker) -> list:
    """The keys a worker is running (distributed's WorkerState)."""
    state = dask_worker.state
    return [str(ts.key) for ts in (*state.executing, *state.long_running)]


def _wait_until_idle(client, tokens: set, timeout: float = 300.0):
    """Until no worker runs a task whose key holds one of tokens (at most timeout seconds)."""
    import re
    import time

    words = re.compile(r"[0-9a-f]{8,}")
    deadline = time.monotonic() + timeout
    idle = 0
    while time.monotonic() < deadline:
        try:
            running = client.run(_executing)
        except Exception:  # noqa: BLE001 - a worker lost meanwhile runs nothing of ours
            time.sleep(0.1)
            continue
        if any(set(words.findall(k)) & tokens for ks in running.values() for k in ks):
            idle = 0
        else:
            # Twice, 0.1 s apart: the release of a task a worker held ready comes on another
            # channel than client.run, and the task could start between the two.
            idle += 1
            if idle == 2:
                return
        time.sleep(0.1 if idle else 0.05)
