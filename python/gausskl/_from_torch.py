"""torch.distributions objects as gausskl batches, without copying their tensors."""

from __future__ import annotations

import math

from gausskl._distributions import DiagGaussian, FullGaussian, LowRankGaussian


def from_torch(dist):
    """A ``torch.distributions`` object as the gausskl batch with the same tensors (no copy), of
    the same batch shape.

    * ``Normal(loc, scale)``: univariate, as in torch.distributions (event shape ``()``): every
      element of the broadcast ``loc``, ``scale`` is a distribution of D = 1, and the batch shape
      is theirs, so ``gk.kl(Normal, Normal)`` returns what ``kl_divergence`` returns. For a
      diagonal Gaussian over the last axis, write ``Independent(Normal(loc, scale), 1)``.
    * ``Independent(Normal(loc, scale), r)``: the last ``r`` axes are the event, flattened to
      D (a view when their strides allow, as ``reshape``); ``r = 0`` makes every element its own
      distribution of D = 1, as torch does.
    * ``MultivariateNormal``: a ``FullGaussian`` with the parameter it was built with
      (``scale_tril``, ``covariance_matrix`` or ``precision_matrix``).
    * ``LowRankMultivariateNormal``: ``LowRankGaussian(loc, cov_factor=, cov_diag=)``.

    The tensors keep their ``requires_grad``: gausskl results are differentiable in them. The
    operations call this themselves when given such an object.

    Parameters
    ----------
    dist : torch.distributions.Distribution
        One of the four above; any other is a TypeError naming it.

    Returns
    -------
    DiagGaussian, FullGaussian or LowRankGaussian
        Over the distribution's own tensors (their dtype and device), of its batch shape.

    Examples
    --------
    >>> import torch, gausskl as gk
    >>> normal = torch.distributions.Normal(torch.zeros(5, 3), torch.ones(5, 3))
    >>> gk.from_torch(normal)  # 15 univariate Gaussians
    DiagGaussian(batch_shape=(5, 3), D=1, std, dtype=float32, torch)
    >>> diag = torch.distributions.Independent(normal, 1)
    >>> gk.from_torch(diag)
    DiagGaussian(N=5, D=3, std, dtype=float32, torch)
    >>> mvn = torch.distributions.MultivariateNormal(torch.zeros(3), scale_tril=torch.eye(3))
    >>> gk.kl(diag, mvn)  # KL(N(0, I) || N(0, I)) for each of the 5 rows
    tensor([0., 0., 0., 0., 0.])
    """
    import torch
    from torch import distributions as D

    op = "from_torch"
    if isinstance(dist, D.Independent):
        base, r = dist.base_dist, dist.reinterpreted_batch_ndims
        if isinstance(base, D.Independent) and isinstance(base.base_dist, D.Normal):
            base, r = base.base_dist, r + base.reinterpreted_batch_ndims
        if not isinstance(base, D.Normal):
            raise TypeError(f"[{op}] Independent is supported over Normal, found "
                            f"{type(base).__name__}")
        loc, scale = torch.broadcast_tensors(base.loc, base.scale)
        if r > loc.dim():
            raise ValueError(f"[{op}] Independent reinterprets {r} axes of a Normal with batch "
                             f"shape {tuple(loc.shape)}")
        batch = tuple(loc.shape[:loc.dim() - r])
        d = math.prod(loc.shape[loc.dim() - r:])
        return DiagGaussian(loc.reshape(*batch, d), std=scale.reshape(*batch, d))
    if isinstance(dist, D.Normal):
        loc, scale = torch.broadcast_tensors(dist.loc, dist.scale)
        return DiagGaussian(loc.unsqueeze(-1), std=scale.unsqueeze(-1))
    if isinstance(dist, D.LowRankMultivariateNormal):
        return LowRankGaussian(dist.loc, cov_factor=dist.cov_factor, cov_diag=dist.cov_diag)
    if isinstance(dist, D.MultivariateNormal):
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
        "Independent(Normal, r), MultivariateNormal or LowRankMultivariateNormal"
    )
