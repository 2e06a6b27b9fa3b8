"""torch.distributions objects as gausskl batches, without copying their tensors."""

from __future__ import annotations

from gausskl._distributions import DiagGaussian, FullGaussian, LowRankGaussian


def _batch_rank(op: str, name: str, batch_shape) -> None:
    if len(batch_shape) > 1:
        raise ValueError(
            f"[{op}] {name} has batch shape {tuple(batch_shape)}; gausskl takes one batch axis "
            "(N distributions); reshape the batch first"
        )


def from_torch(dist):
    """A ``torch.distributions`` object as the gausskl batch with the same tensors (no copy).

    * ``Normal(loc, scale)`` with batch shape ``[N, D]``: ``DiagGaussian(loc, std=scale)``, the
      last axis read as the event (as ``Independent(Normal, 1)``); ``[D]`` is one distribution.
    * ``Independent(Normal(loc, scale), 1)``: the same.
    * ``MultivariateNormal``: a ``FullGaussian`` with the parameter it was built with
      (``scale_tril``, ``covariance_matrix`` or ``precision_matrix``).
    * ``LowRankMultivariateNormal``: ``LowRankGaussian(loc, cov_factor=, cov_diag=)``.

    The tensors keep their ``requires_grad``: gausskl results are differentiable in them.
    """
    import torch
    from torch import distributions as D

    op = "from_torch"
    if isinstance(dist, D.Independent):
        if not isinstance(dist.base_dist, D.Normal) or dist.reinterpreted_batch_ndims != 1:
            raise TypeError(
                f"[{op}] Independent is supported over Normal with reinterpreted_batch_ndims=1, "
                f"found {type(dist.base_dist).__name__} with {dist.reinterpreted_batch_ndims}"
            )
        dist = dist.base_dist
    if isinstance(dist, D.Normal):
        loc, scale = torch.broadcast_tensors(dist.loc, dist.scale)
        if loc.dim() == 0:
            loc, scale = loc.reshape(1), scale.reshape(1)
        if loc.dim() > 2:
            _batch_rank(op, "Normal", loc.shape[:-1])
        return DiagGaussian(loc, std=scale)
    if isinstance(dist, D.LowRankMultivariateNormal):
        _batch_rank(op, "LowRankMultivariateNormal", dist.batch_shape)
        return LowRankGaussian(dist.loc, cov_factor=dist.cov_factor, cov_diag=dist.cov_diag)
    if isinstance(dist, D.MultivariateNormal):
        _batch_rank(op, "MultivariateNormal", dist.batch_shape)
        given = vars(dist)  # the lazily computed parameters appear here only once accessed
        if "scale_tril" in given:
            return FullGaussian(dist.loc, scale_tril=given["scale_tril"])
        if "covariance_matrix" in given:
            return FullGaussian(dist.loc, covariance=given["covariance_matrix"])
        if "precision_matrix" in given:
            return FullGaussian(dist.loc, precision_matrix=given["precision_matrix"])
        return FullGaussian(dist.loc, scale_tril=dist.scale_tril)
    raise TypeError(
        f"[{op}] unsupported distribution {type(dist).__name__}; expected Normal, "
        "Independent(Normal, 1), MultivariateNormal or LowRankMultivariateNormal"
    )
