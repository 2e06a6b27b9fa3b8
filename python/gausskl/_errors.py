"""The library's errors as Python exceptions, with their data (gausskl/errors.hpp).

Bad input raises an ``InputError`` (a ``ValueError``), a lack of resources a ``ResourceError``
(a ``RuntimeError``); both are ``GaussKLError``s, whose attributes say what the message says:

* ``op``: the operation's tag, as the message opens (``"[kl] ..."``);
* ``kind``: ``"invalid_input"``, ``"option"``, ``"overflow"``, ``"not_positive_definite"``,
  ``"memory_budget"`` or ``"out_of_memory"``;
* ``side`` and ``index``: the batch (``"p"``, ``"q"``) and the distribution the error is about,
  or None;
* ``hint``: the library's advice the message ends with, or None; ``hint_option``: the option or
  parameter that advice says to set (``"log_diagonal"``), or None;
* ``batch_index``: for a side with more than one batch axis, ``index`` as a batch index (the
  message then says ``at batch index (1, 2), element 3``); absent otherwise.

They pickle with their attributes (Dask sends a worker's error to the client).
"""

from __future__ import annotations

import re


class GaussKLError(Exception):
    """An error of gausskl's library, with its data as attributes."""

    def __init__(self, message: str = "", *, op=None, kind=None, side=None, index=None,
                 hint=None, hint_option=None):
        super().__init__(message)
        self.op, self.kind = op, kind
        self.side, self.index = side, index
        self.hint, self.hint_option = hint, hint_option

    def reworded(self, message: str):
        """The same error (type and attributes) with another message."""
        copy = type(self)(message)
        copy.__dict__.update(self.__dict__)
        return copy


class InputError(GaussKLError, ValueError):
    """Bad input: a value, shape or size that breaks a rule."""


class OptionError(InputError):
    """An option out of range: ``option`` names it, ``rule`` is the rule it breaks."""

    def __init__(self, message: str = "", *, option=None, rule=None, **data):
        super().__init__(message, **data)
        self.option, self.rule = option, rule


class NotPositiveDefiniteError(InputError):
    """A covariance or precision matrix whose Cholesky factorization failed at ``pivot`` (of
    distribution ``index`` of ``side``); ``jitter=EPS`` factors such matrices with EPS added to
    the diagonal."""

    def __init__(self, message: str = "", *, pivot=None, **data):
        super().__init__(message, **data)
        self.pivot = pivot


class ResourceError(GaussKLError, RuntimeError):
    """A lack of resources (memory, the memory budget)."""


class MemoryBudgetError(ResourceError):
    """``memory_budget`` (``budget`` bytes) is too small; ``needs`` says what takes the memory."""

    def __init__(self, message: str = "", *, budget=None, needs=None, **data):
        super().__init__(message, **data)
        self.budget, self.needs = budget, needs


_AT_ROW = re.compile(r"at row (\d+), column (\d+)")
_AT_DISTRIBUTION = re.compile(r"at distribution (\d+)(, row \d+, column \d+)?")
_TAG = re.compile(r"^\[(\w+)\] ")
_SIDE = re.compile(r"^\[\w+\] (p|q)\.")
_SLICE = re.compile(r" \(in the batch slice \[([^\]]*)\] of shape \([^)]*\)\)")


def for_caller(e: Exception, op: str, dists: dict) -> Exception:
    """The error as the caller of op reads it: tagged ``[op]`` (the function called, also where
    it hands the work to another: ``gk.divergence(kind="kl")`` says ``[divergence]``), and its
    position as a batch index where the side it names has more than one batch axis (the library
    counts distributions in C order of the batch: "row 5, column 3" of a [2, 3] batch of D = 4
    is "batch index (1, 2), element 3"). dists: side -> the object the caller gave (a gausskl
    batch or a torch.distributions object). Errors without a tag are returned as they are."""
    message = str(e)
    tag = _TAG.match(message)
    if tag is None:
        return e
    reworded = message if tag[1] == op else f"[{op}] " + message[tag.end():]
    side = getattr(e, "side", None)
    if side is None:
        found = _SIDE.match(reworded)
        side = found[1] if found else None
    batch = _batch_shape(dists.get(side)) if side is not None else ()
    index = None
    if len(batch) >= 2:
        # A batch no single stride describes is computed slice by slice: the library's position
        # is then within the slice the message names, which the batch index replaces.
        lead, inner = [], batch
        piece = _SLICE.search(reworded)
        if piece:
            axes = [a.strip() for a in piece[1].split(",")]
            fixed = [a for a in axes if a != ":"]
            if axes[:len(fixed)] != fixed or not all(a.isdigit() for a in fixed):
                return e
            lead, inner = [int(a) for a in fixed], batch[len(fixed):]
            reworded = reworded[:piece.start()] + reworded[piece.end():]

        def unravel(i: str) -> list:
            return lead + _unravel(int(i), inner)

        def at(i: str) -> str:
            return "(" + ", ".join(map(str, unravel(i))) + ")"

        found = _AT_ROW.search(reworded) or _AT_DISTRIBUTION.search(reworded)
        if found:
            index = tuple(unravel(found[1]))
        reworded = _AT_ROW.sub(lambda m: f"at batch index {at(m[1])}, element {m[2]}", reworded)
        reworded = _AT_DISTRIBUTION.sub(lambda m: f"at batch index {at(m[1])}{m[2] or ''}",
                                        reworded)
    if reworded == message:
        return e
    if isinstance(e, GaussKLError):
        out = e.reworded(reworded)
        out.op = op
    else:
        try:
            out = type(e)(reworded)
        except Exception:  # noqa: BLE001 - an exception type that takes other arguments
            return e
    if index is not None:
        out.batch_index = index
    return out


def _batch_shape(dist) -> tuple:
    if dist is None:
        return ()
    if not hasattr(dist, "_spec"):  # a torch.distributions object: gausskl's reading of it
        if not hasattr(dist, "batch_shape"):
            return ()
        from gausskl._from_torch import from_torch

        try:
            dist = from_torch(dist)
        except (TypeError, ValueError):
            return ()
    return tuple(dist.batch_shape)


def _unravel(i: int, shape: tuple) -> list:
    out = []
    for s in reversed(shape):
        out.append(i % s if s else 0)
        i = i // s if s else 0
    return out[::-1]
