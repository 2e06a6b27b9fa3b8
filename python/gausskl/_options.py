"""The tolerance and memory_budget keywords: types checked here, ranges by the library (or, on
the torch path, by check_torch_path with the library's words).

* ``tolerance`` (pairwise_kl, knn_kl): Options::tolerance, the certified error of each result as
  ``|KL - exact| / (|exact| + 1)``; None or 0 is the library's default.
* ``memory_budget`` (every operation): Options::memory_budget, bytes; None or 0 is no limit. An
  int only: the CLI's "800M" / "2G" are parsed by CLI11 in the command-line tool, not by the
  library, so there is nothing to share with Python.
"""

from __future__ import annotations

import numbers
import operator

from gausskl import _ext

INT64_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1


def tolerance(op: str, value) -> float:
    """The tolerance as a float (None: 0, the default). TypeError unless a real number; the
    range is the library's to check."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"[{op}] tolerance must be a real number, found {type(value).__name__}")
    return float(value)


def memory_budget(op: str, value) -> int:
    """The budget in bytes as an int (None: 0, no limit). TypeError unless an integer; above
    int64, ValueError; a negative value is the library's to refuse."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise TypeError(f"[{op}] memory_budget must be an int (bytes), found bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"[{op}] memory_budget must be an int (bytes), found "
                        f"{type(value).__name__}") from None
    if value > INT64_MAX:
        raise ValueError(f"[{op}] options.memory_budget must be at most 2^63 - 1, found {value}")
    return value


def integer(op: str, name: str, value, most: int, most_text: str, ranged: str = "") -> int:
    """value as an int: TypeError unless an integer (bool is not one), ValueError above most
    (what the extension's C++ type holds), naming it `ranged` (default: name) as the library
    names it in its range errors; the rest of the range is the library's to check."""
    if isinstance(value, bool):
        raise TypeError(f"[{op}] {name} must be an int, found bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"[{op}] {name} must be an int, found {type(value).__name__}") from None
    if value > most:
        raise ValueError(f"[{op}] {ranged or name} must be at most {most_text}, found {value}")
    return value


def common(op: str, jitter, memory_budget_, threads):
    """The keywords every operation takes, as the extension passes them: (jitter as a float,
    the budget as an int, threads as an int). Types here; ranges are the library's."""
    if not isinstance(jitter, numbers.Real):
        raise TypeError(f"[{op}] jitter must be a real number, found {type(jitter).__name__}")
    return (float(jitter), memory_budget(op, memory_budget_),
            integer(op, "threads", threads, INT_MAX, "2^31 - 1", "options.threads"))


def check_torch_path(op: str, jitter, tolerance_: float = 0.0, budget: int = 0) -> None:
    """The library's rules for the options (gausskl::check_options, through the extension: the
    jitter, the tolerance, the budget), on the torch path (which then certifies all-pairs
    results within the tolerance and sizes its blocks by the budget, gausskl._torch_path)."""
    _ext.check_options(op, 0, jitter.eps, tolerance_, budget)

