"""Batches reshaped: the batch as one axis of rows (torch operations), broadcast or reshaped
(NumPy or torch, views where they can be), or made contiguous."""

from __future__ import annotations

import math

import numpy as np

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


def reshaped(g, batch: tuple):
    """g with its batch broadcast to g.batch_shape and reshaped to `batch` (same size)."""
    if tuple(batch) == tuple(g.batch_shape) and all(
            tuple(a.shape[:a.ndim - r]) == tuple(batch)
            for a, r in zip(g._spec[1:], g._event_ranks())):
        return g
    arrays = []
    for a, r in zip(g._spec[1:], g._event_ranks()):
        event = tuple(a.shape[a.ndim - r:])
        full = (*g.batch_shape, *event)
        if _arrays.is_torch(a):
            arrays.append(a.expand(full).reshape((*batch, *event)))
        else:
            arrays.append(np.broadcast_to(a, full).reshape((*batch, *event)))
    return g._replace(arrays)


def broadcast(g, batch):
    """g with every array broadcast to the batch `batch` (views)."""
    arrays = []
    for a, r in zip(g._spec[1:], g._event_ranks()):
        event = tuple(a.shape[a.ndim - r:])
        shape = (*batch, *event)
        arrays.append(a.expand(shape) if _arrays.is_torch(a) else np.broadcast_to(a, shape))
    return g._replace(arrays)
