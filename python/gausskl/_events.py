"""Event shapes as torch.distributions reads them.

* A torch ``Normal`` is univariate (``from_torch`` makes it D = 1 over its whole batch shape); an
  all-pairs op on one with more than one batch axis is ambiguous, and an op pairing it with a
  side of D > 1 is an error that says to write ``Independent(Normal, 1)`` (torch has no KL for
  such pairs either).
* In the row-wise ops, two diagonal sides whose D differ, one of them 1, broadcast that side over
  the other's D, as torch's KL of two ``Independent(Normal, 1)`` does (a prior
  ``Independent(Normal(zeros(1), ones(1)), 1)``).
"""

from __future__ import annotations

from gausskl import _arrays, _ext
from gausskl._distributions import DiagGaussian, _broadcast_event

_INDEPENDENT = "Independent(Normal(loc, scale), 1)"


def check_pairs_input(op: str, side: str, dist, g) -> None:
    """An all-pairs op's rows are a batch shape: a univariate Normal with more than one batch
    axis could mean either reading, so it is an error naming both."""
    if _is_normal(dist) and len(g.batch_shape) > 1:
        raise ValueError(
            f"[{op}] {side} is a torch Normal of batch shape {tuple(g.batch_shape)}: univariate "
            f"Gaussians (as in torch.distributions), whose rows would be all "
            f"{len(g.batch_shape)} axes; for rows of diagonal Gaussians over the last axis write "
            f"{_INDEPENDENT}")


def match(op: str, dists, p, q, widen: bool = True):
    """(p, q) for Ds that differ (dists: the objects given, before from_torch): where a side is a
    univariate torch Normal, the error that says how to write a diagonal Gaussian; with widen (the
    row-wise ops, where torch broadcasts), a diagonal side of D = 1 broadcast over the other
    diagonal side's D; otherwise (p, q) as they are, for the library's own error."""
    dp, dq = p.d, q.d
    hint = _mismatch_hint(dists, (p, q))
    if hint:
        raise ValueError(f"[{op}] " + _ext.RULES["same_d"].format(p=dp, q=dq) + hint)
    if (widen and p.__class__ is DiagGaussian and q.__class__ is DiagGaussian
            and (dp == 1 or dq == 1)):
        return (_widen(p, dq), q) if dp == 1 else (p, _widen(q, dp))
    return p, q


def _widen(g, d: int):
    return g._replace([_broadcast_event(a, (*a.shape[:-1], d)) for a in g._spec[1:]])


def _is_normal(x) -> bool:
    torch = _arrays.torch_module()
    return torch is not None and isinstance(x, torch.distributions.Normal)


def _mismatch_hint(dists, gaussians) -> str:
    for name, dist, g in zip(("p", "q"), dists, gaussians):
        if _is_normal(dist) and g.d == 1:
            return (f"; {name} is a torch Normal, univariate as in torch.distributions: for a "
                    f"diagonal Gaussian over the last axis write {_INDEPENDENT}")
    return ""


def scalar_normals(dists, p, q):
    """(p, q) with a side made from a torch Normal of 0-d parameters (``Normal(0., 1.)``) in the
    other side's float32 where it is float64: 0-d tensors do not promote, as in torch."""
    sides = [p, q]
    scalar = [_is_normal(dist) and not g.batch_shape for dist, g in zip(dists, (p, q))]
    for i, (g, other) in enumerate(((p, q), (q, p))):
        if (other is not None and scalar[i] and not scalar[1 - i]
                and g.dtype == "float64" and other.dtype == "float32"):
            sides[i] = g._replace([_arrays.converted(a, "float32") for a in g._spec[1:]])
    return sides[0], sides[1]
