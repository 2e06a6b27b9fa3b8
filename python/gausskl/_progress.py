"""The progress option of the all-pairs operations: ``progress=True`` writes a line to
``sys.stderr`` about every 10 seconds (a log file or a terminal alike) with the rows done, the
rate and the time left, and one when the call ends; a callable is called as ``f(done, total)``
(rows of p) after each block of rows the library finishes, with the GIL held (what it raises
stops the call and propagates).
"""

from __future__ import annotations

import sys
import time

EVERY_SECONDS = 10.0


def _duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s // 60 % 60:02d} min"


def _rate(rate: float) -> str:
    return f"{rate:,.0f}" if rate >= 10 else f"{rate:.2g}"  # 0.4 distances/s, not 0


class Lines:
    """progress=True: a line per EVERY_SECONDS on a stream (sys.stderr as it is when called)."""

    def __init__(self, op: str, every: float | None = None, stream=None, unit: str = "rows"):
        self.op, self.stream, self.unit = op, stream, unit
        self.every = EVERY_SECONDS if every is None else every
        self.start = self.last = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < self.every:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        rate = done / elapsed
        if done >= total:
            line = (f"[{self.op}] {total:,} {self.unit} done in {_duration(elapsed)} "
                    f"({_rate(rate)} {self.unit}/s)")
        else:
            left = (total - done) / rate if rate > 0 else float("inf")
            line = (f"[{self.op}] {done:,} / {total:,} {self.unit} ({100 * done / total:.0f}%), "
                    f"{_rate(rate)} {self.unit}/s, about {_duration(left)} left")
        stream = self.stream if self.stream is not None else sys.stderr
        print(line, file=stream, flush=True)


def callback(op: str, progress, unit: str = "rows"):
    """The callable the extension calls, or None: progress is None/False, True, or a callable."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return Lines(op, unit=unit)
    if callable(progress):
        return progress
    raise TypeError(f"[{op}] progress must be True, False, None or a callable f(done, total), "
                    f"found {type(progress).__name__}")
