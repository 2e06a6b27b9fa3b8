"""The jitter option: a covariance or precision matrix that is not positive definite is factored
again with ``jitter`` added to its diagonal (``C + jitter * I``; matrices that factor as given are
left alone), and a JitterWarning says how many distributions of each side needed it.
"""

from __future__ import annotations

import numbers
import warnings


def jitter_hint(setting: str) -> str:
    """Appended to the error of a matrix that is not positive definite, whose message ends with
    what to do ("add eps to the diagonal only: C + eps * I"): how to have that done, in an
    interface's words for the setting ("jitter=EPS"; the CLI's "--jitter EPS")."""
    return f"; {setting} does that for each such matrix"


HINT = jitter_hint("jitter=EPS")


class JitterWarning(UserWarning):
    """Some covariance or precision matrices were not positive definite and were factored with
    ``jitter`` added to their diagonal; the results are those of the jittered matrices."""


class Jitter:
    """One call's jitter: the value given, and how many p and q distributions were factored
    with it (a batch compared with itself counts as p, as in the library)."""

    def __init__(self, op: str, eps):
        if not isinstance(eps, numbers.Real):
            raise TypeError(f"[{op}] jitter must be a real number, found {type(eps).__name__}")
        self.op = op
        self.eps = float(eps)  # the range is checked by the library (or the torch path)
        self.counts = {"p": 0, "q": 0}

    def add(self, side: str, count: int):
        self.counts[side] += count

    def warn(self, stacklevel: int):
        """One JitterWarning per side that needed the jitter, in the words of the CLI's note."""
        for side, count in self.counts.items():
            if count:
                warnings.warn(
                    f"[{self.op}] {count} {side} distribution(s) were not positive definite; "
                    f"factored with {self.eps:g} added to the diagonal (jitter)",
                    JitterWarning, stacklevel=stacklevel + 1)


def with_hint(e: ValueError) -> ValueError:
    """The error, with HINT if it is about a matrix that is not positive definite (once: an
    error raised through two layers that each add it keeps one)."""
    if getattr(e, "kind", None) != "not_positive_definite" or str(e).endswith(HINT):
        return e
    return e.reworded(f"{e}{HINT}")
