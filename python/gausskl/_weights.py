"""The rules of a Gaussian mixture's weights (gk.GaussianMixture; under torch.compile the
operator gausskl::checked_weights applies them when the step runs)."""

from __future__ import annotations

import numpy as np

from gausskl import _arrays


def check(op: str, given: str, w, c: int) -> None:
    """Mixture weights finite, non-negative, summing to 1 over the last axis (within 1e-6 for
    float32, 16 C eps for float64); logits finite. ValueError `[op] ...` naming the entry."""
    tol = 1e-6 if _arrays.kind(w) == _arrays.FLOAT32 else 16 * c * np.finfo(np.float64).eps
    if _arrays.is_torch(w):
        # One fused test and one sync in a training step; the messages below only on failure.
        x = w.detach()
        ok = x.isfinite().all()
        if given == "weights":
            ok = ok & (x >= 0).all() & ((x.double().sum(-1) - 1.0).abs() <= tol).all()
        if bool(ok):
            return
    x = np.asarray(w.detach().cpu().double()) if _arrays.is_torch(w) else w.astype(np.float64)
    bad = ~np.isfinite(x)
    if bad.any():
        at = np.unravel_index(int(np.argmax(bad)), x.shape)
        raise ValueError(f"[{op}] {given} must be finite, found {x[at]} at index "
                         f"{[int(i) for i in at]}")
    if given == "logits":
        return
    neg = x < 0
    if neg.any():
        at = np.unravel_index(int(np.argmax(neg)), x.shape)
        raise ValueError(f"[{op}] weights must be non-negative, found {x[at]} at index "
                         f"{[int(i) for i in at]}")
    off = np.abs(x.sum(-1) - 1.0)
    if (off > tol).any():
        at = np.unravel_index(int(np.argmax(off > tol)), off.shape)
        raise ValueError(f"[{op}] weights must sum to 1 over the components (within {tol:.3g}), "
                         f"found {x.sum(-1)[at]!r} for mixture {[int(i) for i in at]}")
