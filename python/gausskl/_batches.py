"""Batches reshaped: the batch as one axis of rows (torch operations), or made contiguous."""

from __future__ import annotations

import math

from gausskl import _arrays


def flat(g, batch=None):
    """g (of torch tensors) with its batch (broadcast to `batch` if given) as one axis of rows:
    views where they can be, so gradients flow back to the arrays as given."""
    batch = g._batch if batch is None else tuple(batch)
    n = math.prod(batch)
    arrays = []
    for a, r in zip(g._spec[1:], g._event_ranks()):
        event = tuple(a.shape[a.ndim - r:])
        arrays.append(a.expand(tuple(batch) + tuple(event)).reshape((n, *event)))
    return g._replace(arrays)


def contiguous(g):
    """g with every array broadcast to its batch and contiguous (one stride describes it)."""
    ranks = g._event_ranks()
    return g._replace([_arrays.contiguous(a, (*g._batch, *a.shape[a.ndim - r:]))
                       for a, r in zip(g._spec[1:], ranks)])
