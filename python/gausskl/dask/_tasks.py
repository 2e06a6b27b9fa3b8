"""What runs on a worker: one library call per block, the k-best merge, errors with global rows.

Each block task makes the batches of its chunks again (plain NumPy arrays by then), calls the
ordinary gausskl operation (the extension releases the GIL for the computation) and returns its
result. Nothing here schedules, queues or keeps anything between tasks.
"""

from __future__ import annotations

import re

import numpy as np

import gausskl as gk
from gausskl._distributions import CODES, of_code
from gausskl._errors import GaussKLError


def batch(form: tuple, arrays: list):
    """The gausskl batch of one chunk: form is _sides.form_of's (family, param, log_diagonal)."""
    _, param, log_diagonal = form
    return of_code(arrays, CODES["packed_log_diagonal" if log_diagonal else param])


def as_float64(g):
    """g with its arrays in float64 (exact for float32)."""
    return g._replace([np.asarray(a, dtype=np.float64) for a in g._spec[1:]])


# The library's messages place a bad value as "... <side>.<array> ... at row R, ..." (arrays
# [N, D]: row R, column C; packed factors: row R, column C (L[r, s])) or "... at distribution R,
# ..." (matrices: distribution R, row r, column c; a matrix that is not positive definite:
# distribution R: pivot ...): R, the first number after " at row " or " at distribution ", is
# the distribution's row in the batch the library was given, here a chunk. tests/dask/
# test_faults.py checks every kind of message.
_SIDE = re.compile(r"\[\w+\] (p|q)\.")
_WHERE = re.compile(r" at (row|distribution) (\d+)")


def global_rows(e: Exception, first_rows: dict, one_batch: bool = False) -> Exception:
    """The library's error with the chunk's row made the row in the whole batch: first_rows
    gives each side's first row ({"p": 1000, "q": 0}). one_batch: both chunks are of the one
    batch of a q = p operation, which the library's messages call p."""
    message = str(e)
    side = _SIDE.match(message)
    if not side:
        return e
    offset = first_rows.get(side.group(1), 0)
    if one_batch and side.group(1) == "q":
        message = message[:side.start(1)] + "p" + message[side.end(1):]
    elif offset == 0:
        return e
    message = _WHERE.sub(lambda m: f" at {m.group(1)} {int(m.group(2)) + offset}", message,
                         count=1)
    if not isinstance(e, GaussKLError):
        return type(e)(message)
    e = e.reworded(message)  # the same type and data, with the global row
    if one_batch and e.side == "q":
        e.side = "p"
    if e.index is not None:
        e.index += offset
    return e


def _call(first_rows: dict, op, *args, one_batch: bool = False, **kwargs):
    try:
        return op(*args, **kwargs)
    except ValueError as e:
        raise global_rows(e, first_rows, one_batch) from None


def _options(options: tuple) -> dict:
    jitter, tolerance, memory_budget, threads = options
    return {"jitter": jitter, "memory_budget": memory_budget, "threads": threads,
            **({} if tolerance is None else {"tolerance": tolerance})}


def kl_block(p_form, p_arrays, p_first, q_form, q_arrays, q_first, options):
    """KL(p_i || q_i) over one chunk of rows (a side of one row is paired with every row)."""
    p, q = batch(p_form, p_arrays), batch(q_form, q_arrays)
    return _call({"p": p_first, "q": q_first}, gk.kl, p, q, **_options(options))


def kl_standard_normal_block(p_form, p_arrays, p_first, options):
    return _call({"p": p_first}, gk.kl_standard_normal, batch(p_form, p_arrays),
                 **_options(options))


def pairwise_block(p_form, p_arrays, p_first, q_form, q_arrays, q_first, one_batch, options):
    """The [n_a, m_b] block of KL(p_i || q_j) of row chunk a of p and row chunk b of q.
    one_batch: q = p; its block on the diagonal (a = b) is the library's q = p call (a diagonal
    exactly 0)."""
    p = batch(p_form, p_arrays)
    if one_batch and p_first == q_first:
        return _call({"p": p_first}, gk.pairwise_kl, p, **_options(options))
    q = batch(q_form, q_arrays)
    return _call({"p": p_first, "q": q_first}, gk.pairwise_kl, p, q, one_batch=one_batch,
                 **_options(options))


def knn_block(p_form, p_arrays, p_first, q_form, q_arrays, q_first, one_batch, self_block, k,
              exclude_self, in_double, dtype, options):
    """The k best of row chunk a of p among row chunk b of q: (global indices int64 [n_a, k_b],
    values [n_a, k_b]) with k_b = min(k, the block's candidates). one_batch: q = p (errors name
    p); self_block: the block on the diagonal of q = p cut alike, the library's q = p call, which
    leaves out j = i with exclude_self; the other blocks are calls on two batches. in_double:
    computed from float64 copies of float32 inputs, whose results are the same exact doubles the
    library ranks by before rounding them to float32, so that the merge ranks as the library
    does. dtype: the values' dtype (float64 when in_double)."""
    p = batch(p_form, p_arrays)
    q = None if self_block else batch(q_form, q_arrays)
    rows = p_arrays[0].shape[0]
    m = (p_arrays if self_block else q_arrays)[0].shape[0]
    kb = min(k, m - (1 if self_block and exclude_self else 0))
    if kb <= 0 or rows == 0:
        return np.empty((rows, 0), np.int64), np.empty((rows, 0), dtype)
    if in_double:
        p = as_float64(p)
        q = None if q is None else as_float64(q)
    first = {"p": p_first, "q": p_first if self_block else q_first}
    if q is None:
        idx, val = _call(first, gk.knn_kl, p, k=kb, exclude_self=exclude_self, **_options(options))
    else:
        idx, val = _call(first, gk.knn_kl, p, q, k=kb, one_batch=one_batch,
                         **_options(options))
    return idx + first["q"], val


def knn_merge(parts: list, k: int):
    """The k best of several k-best lists of the same rows: by (value, global index), so that
    ties go to the lower index and the result does not depend on how q was cut."""
    idx = np.concatenate([i for i, _ in parts], axis=1)
    val = np.concatenate([v for _, v in parts], axis=1)
    if idx.shape[1] > 0:
        order = np.lexsort((idx, val), axis=1)[:, :k]
        idx = np.take_along_axis(idx, order, axis=1)
        val = np.take_along_axis(val, order, axis=1)
    return idx, val


def knn_final(part, k: int, dtype, drop_self_from=None):
    """The merged list of a row chunk in the result's dtype; exactly k columns. drop_self_from:
    the chunk's first global row, when the list holds k + 1 with j = i not left out: each row
    loses j = i if it is there, else its last (then its first k are the best without i)."""
    idx, val = part
    if drop_self_from is not None and idx.shape[0] and idx.shape[1] == k + 1:
        drop = idx == (np.arange(idx.shape[0]) + drop_self_from)[:, None]
        drop[~drop.any(axis=1), -1] = True
        keep = ~drop
        idx = idx[keep].reshape(idx.shape[0], k)
        val = val[keep].reshape(val.shape[0], k)
    if idx.shape[0] == 0:
        return np.empty((0, k), np.int64), np.empty((0, k), dtype)
    if idx.shape[1] != k:  # the blocks held fewer candidates than k: impossible past the checks
        raise RuntimeError(f"[knn_kl] internal error: {idx.shape[1]} candidates for k = {k}")
    return idx, val.astype(dtype, copy=False)
