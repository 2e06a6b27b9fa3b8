"""The library's errors as Python exceptions, with their data (gausskl/errors.hpp).

Bad input raises an ``InputError`` (a ``ValueError``), a lack of resources a ``ResourceError``
(a ``RuntimeError``); both are ``GaussKLError``s, whose attributes say what the message says:

* ``op``: the operation's tag, as the message opens (``"[kl] ..."``);
* ``kind``: ``"invalid_input"``, ``"option"``, ``"overflow"``, ``"not_positive_definite"``,
  ``"memory_budget"`` or ``"out_of_memory"``;
* ``side`` and ``index``: the batch (``"p"``, ``"q"``) and the distribution the error is about,
  or None;
* ``hint``: the library's advice the message ends with, or None; ``hint_option``: the option or
  parameter that advice says to set (``"log_diagonal"``), or None.

They pickle with their attributes (Dask sends a worker's error to the client).
"""

from __future__ import annotations


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
