"""gk.frechet_from_features: FID's number from the feature arrays themselves, with the
finite-sample extras the field reports: a bootstrap standard error and FD-infinity (Chong &
Forsyth 2020), each Gaussian fitted exactly (gk.MomentAccumulator) in chunks of rows."""

from __future__ import annotations

import numpy as np

from gausskl import _progress
from gausskl._distributions import DiagGaussian, FullGaussian
from gausskl._frechet import frechet_distance
from gausskl._moments import MomentAccumulator, _count, _rows

_OP = "frechet_from_features"


def _int(name: str, value, least: int) -> int:
    value = _count(_OP, name, value)
    if value < least:
        raise ValueError(f"[{_OP}] {name} must be at least {least}, found {value}")
    return value


class _Side:
    """One side: feature rows [N, D] (resampled, fitted in chunks) or a fixed fitted Gaussian."""

    def __init__(self, name: str, x, ddof: int, chunk: int, threads: int):
        self.name, self.ddof, self.chunk, self.threads = name, ddof, chunk, threads
        if isinstance(x, (FullGaussian, DiagGaussian)):
            self.rows, self.gaussian = None, x
            return
        x = _rows(_OP, x)
        if hasattr(x, "detach"):
            x = x.numpy()
        x = np.asarray(x)
        if x.ndim != 2:
            raise ValueError(f"[{_OP}] {name} must be features [N, D] (or a fitted gk.FullGaussian),"
                             f" found shape {tuple(x.shape)}")
        if x.shape[0] <= ddof:
            raise ValueError(f"[{_OP}] {name} has {x.shape[0]} rows; the covariance needs more "
                             f"than ddof = {ddof}")
        self.rows = x
        self.gaussian = self.fit(None)

    @property
    def n(self) -> int:
        return self.rows.shape[0]

    def accumulate(self, acc: MomentAccumulator, index) -> MomentAccumulator:
        """Adds the rows at index (None: all, by slices, so nothing is copied)."""
        for lo in range(0, self.n if index is None else len(index), self.chunk):
            hi = lo + self.chunk
            acc.update(self.rows[lo:hi] if index is None else self.rows[index[lo:hi]])
        return acc

    def fit(self, index):
        acc = MomentAccumulator(self.rows.shape[1], threads=self.threads)
        return self.accumulate(acc, index).gaussian(self.ddof)


def frechet_from_features(x, y, *, ddof=1, bootstrap=0, fd_infinity=False, points=15,
                          smallest=None, seed=None, chunk_rows=4096, threads=0, progress=None):
    """The Fréchet distance (FID, FAD, FVD) between the Gaussians fitted to two sets of features.

    ``gk.frechet_distance(gk.fit_gaussian(x, ddof), gk.fit_gaussian(y, ddof))``; with
    ``bootstrap`` or ``fd_infinity`` also the estimates of how much the number owes to the sample
    size, which is what makes FIDs of different N incomparable. Each Gaussian is fitted exactly
    (float64, Chan et al.'s pairwise update, as ``gk.MomentAccumulator``) from ``chunk_rows``
    rows at a time, so a memory-mapped ``.npy`` of features is never copied whole.

    Parameters
    ----------
    x, y : array ``[N, D]`` or ``gk.FullGaussian``
        The features (NumPy, memory-mapped NumPy, torch on any device, float32 or float64), or a
        Gaussian already fitted (e.g. a dataset's reference statistics), which stays fixed: it is
        neither resampled nor subsampled.
    ddof : int, default 1
        As ``gk.fit_gaussian``: 1 is ``np.cov``'s and pytorch-fid's, 0 StyleGAN's.
    bootstrap : int, default 0
        The number of bootstrap replicates B: each draws the rows of every side given as features
        with replacement (N of N), refits and recomputes the distance. Each replicate costs a fit
        and a distance (at D = 2048 seconds each).
    fd_infinity : bool, default False
        Chong & Forsyth's FD-infinity: the distance between y's Gaussian and the Gaussians of the
        first ``N_i`` rows of a random permutation of x, at ``points`` sizes ``N_i`` evenly spaced
        from ``smallest`` (default N // 10, at least D + 1 and ddof + 1) to N, fitted by least
        squares as ``FD(N_i) = FD_inf + slope / N_i``. One pass over x: the accumulator's running
        moments give every ``N_i`` in turn. FD-infinity is an extrapolation, not a distance: when
        the true distance is near 0 it may come out slightly below 0.
    points, smallest : int
        The number of sizes and the smallest of them for ``fd_infinity``.
    seed : int or numpy.random.Generator, optional
        The random draws: replicate b draws x's rows, then y's, from one
        ``np.random.default_rng(seed)``, in this order, after FD-infinity's permutation of x.
    chunk_rows : int, default 4096
        Rows fitted at a time (memory: ``chunk_rows x D`` values).
    threads : int, default 0
        The most worker threads for the fits and distances; 0: one per hardware thread.
    progress : bool or callable, optional
        ``True``: a line on stderr about every 10 s with the distances done and the time left; a
        callable: ``f(done, total)`` after each distance.

    Returns
    -------
    float or (float, dict)
        The distance, as a Python float; with ``bootstrap`` or ``fd_infinity``, also a dict:
        ``bootstrap_se`` (the standard deviation of the replicates, ddof 1),
        ``bootstrap_values`` ``[B]``; ``fd_infinity``, ``fd_infinity_slope``,
        ``fd_infinity_sizes`` ``[points]`` and ``fd_infinity_values`` ``[points]``.

    Examples
    --------
    >>> import numpy as np, gausskl as gk
    >>> rng = np.random.default_rng(0)
    >>> x, y = rng.normal(size=(2000, 8)), rng.normal(0.5, 1.0, size=(2000, 8))
    >>> fd, extras = gk.frechet_from_features(x, y, bootstrap=20, seed=0)
    >>> bool(abs(fd - 8 * 0.25) < 0.2), bool(0 < extras["bootstrap_se"] < 0.2)
    (True, True)
    """
    ddof = _int("ddof", ddof, 0)
    bootstrap = _int("bootstrap", bootstrap, 0)
    chunk = _int("chunk_rows", chunk_rows, 1)
    threads = _int("threads", threads, 0)
    if not isinstance(fd_infinity, (bool, np.bool_)):
        raise TypeError(f"[{_OP}] fd_infinity must be True or False, found "
                        f"{type(fd_infinity).__name__}")
    sides = [_Side("x", x, ddof, chunk, threads), _Side("y", y, ddof, chunk, threads)]
    px, py = sides[0], sides[1]
    if px.gaussian.d != py.gaussian.d:
        raise ValueError(f"[{_OP}] x and y have D = {px.gaussian.d} and D = {py.gaussian.d}; "
                         "D must match")
    plan = _infinity_sizes(px, ddof, points, smallest) if fd_infinity else None
    total = 1 + bootstrap + (len(plan) if plan is not None else 0)
    report = _progress.callback(_OP, progress, unit="distances")
    done = 0

    def distance(gx, gy) -> float:
        nonlocal done
        value = float(frechet_distance(gx, gy, threads=threads))
        done += 1
        if report:
            report(done, total)
        return value

    value = distance(px.gaussian, py.gaussian)
    if not bootstrap and not fd_infinity:
        return value
    rng = np.random.default_rng(seed)
    extras: dict = {}
    if plan is not None:
        extras.update(_fd_infinity(px, py.gaussian, plan, rng, distance))
    if bootstrap:
        values = np.empty(bootstrap)
        for b in range(bootstrap):
            fitted = [s.gaussian if s.rows is None else s.fit(np.sort(rng.integers(0, s.n, s.n)))
                      for s in sides]
            values[b] = distance(*fitted)
        extras["bootstrap_se"] = float(values.std(ddof=1)) if bootstrap > 1 else float("nan")
        extras["bootstrap_values"] = values
    return value, extras


def _infinity_sizes(px: _Side, ddof: int, points, smallest) -> np.ndarray:
    if px.rows is None:
        raise ValueError(f"[{_OP}] fd_infinity subsamples x: give x as features [N, D], not a "
                         "fitted Gaussian")
    points = _int("points", points, 2)
    least = max(px.rows.shape[1] + 1, ddof + 1)
    smallest = max(px.n // 10, least) if smallest is None else _int("smallest", smallest, least)
    if smallest >= px.n:
        raise ValueError(f"[{_OP}] fd_infinity needs sizes from smallest = {smallest} to N = "
                         f"{px.n}: x has too few rows (smallest must be below N and at least "
                         f"D + 1 = {px.rows.shape[1] + 1})")
    return np.unique(np.linspace(smallest, px.n, points).astype(np.int64))


def _fd_infinity(px: _Side, gy, sizes: np.ndarray, rng, distance) -> dict:
    order = rng.permutation(px.n)
    acc = MomentAccumulator(px.rows.shape[1], threads=px.threads)
    values, start = np.empty(len(sizes)), 0
    for i, size in enumerate(sizes):
        px.accumulate(acc, np.sort(order[start:size]))  # now the moments of the first `size`
        start = size
        values[i] = distance(acc.gaussian(px.ddof), gy)
    slope, intercept = np.polyfit(1.0 / sizes, values, 1)
    return {"fd_infinity": float(intercept), "fd_infinity_slope": float(slope),
            "fd_infinity_sizes": sizes, "fd_infinity_values": values}
