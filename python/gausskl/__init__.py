"""gausskl: KL divergences between Gaussian distributions, in nats, exactly as the math says.

Batches of Gaussians (NumPy arrays, PyTorch tensors, or any DLPack array)::

    import gausskl as gk
    p = gk.DiagGaussian(mu, std=std)              # or var=, logvar=, precision=; mu [N, D]
    f = gk.FullGaussian(mu, scale_tril=L)         # or covariance=, precision_matrix=; [N, D, D]
    e = gk.FullGaussian(mu, packed_scale_tril=E, log_diagonal=True)   # E [N, D (D + 1) / 2]
    r = gk.LowRankGaussian(mu, cov_factor=W, cov_diag=d)   # W [N, D, R], d [N, D]

Batch axes follow torch.distributions: any number of leading axes, broadcast between the arrays
of a batch and between p and q; results have the broadcast batch shape (0-d for two single
distributions).

Operations (any family against any family)::

    gk.kl(p, q)                     # [N]     KL(p_i || q_i), batches broadcast
    gk.kl_standard_normal(p)        # [N]     KL(p_i || N(0, I))
    gk.pairwise_kl(p, q=None)       # [N, M]  KL(p_i || q_j); q = p without q
    gk.knn_kl(p, q=None, k=10)      # ([N, k] indices, [N, k] KL), the k smallest per row
    gk.from_torch(dist)             # torch.distributions Normal, Independent(Normal, r),
                                    # MultivariateNormal, LowRankMultivariateNormal

The forum's pairwise KL of diagonal Gaussians (``mu, std: [B, H]``), as one line::

    kl = gk.pairwise_kl(gk.DiagGaussian(mu, std=std))       # [B, B], no [B, B, H]

A VAE loss (torch; the encoder gives ``mu, logvar: [B, D]``; gradients flow)::

    loss = recon + gk.kl_standard_normal(gk.DiagGaussian(mu, logvar=logvar)).sum()

Retrieval, the 10 nearest Gaussians by KL of each query::

    idx, dist = gk.knn_kl(gk.DiagGaussian(q_mu, std=q_std),
                          gk.DiagGaussian(db_mu, std=db_std), k=10)

Results come back in the caller's framework (torch in, torch out; NumPy in, NumPy out), in
float32 when every input is float32 and float64 otherwise; arithmetic is in float64. Bad input
raises ValueError naming the operation, array, index and rule, e.g.
``[kl] p.scale (std) must be positive and finite, found -0.5 at row 17, column 3``.
Tensors with ``requires_grad`` get gradients (the library's own for diagonal batches and
triangular factors); under ``torch.compile`` the operations are torch custom operators, so
losses compile with ``fullgraph=True``. CUDA and MPS tensors are computed with the same
algorithms in torch operations.

Batches of Dask arrays (row chunks of millions of distributions) are computed chunk by chunk on
Dask's workers by ``gausskl.dask`` (``gk.dask.pairwise_kl``, ``gk.dask.knn_kl``, ``gk.dask.kl``;
the extra ``pip install "gausskl[dask]"``), imported on first use: ``import gausskl`` does not
import Dask.

A covariance or precision matrix that is not positive definite is an error unless the operation
is given ``jitter=EPS`` (every operation takes it): such matrices, and only those, are then
factored with EPS added to their diagonal, and a ``JitterWarning`` says how many::

    kl = gk.pairwise_kl(gk.FullGaussian(mu, covariance=sample_cov), jitter=1e-6)

``pairwise_kl`` and ``knn_kl`` take ``tolerance=EPS`` (at most 1e-3), the certified error of each
result as ``|KL - exact| / (|exact| + 1)`` (default 1e-7 for float32 inputs, 1e-13 for float64;
from about 1e-5, float32 diagonal inputs may use a faster float kernel), and every operation
takes ``memory_budget=BYTES``, the most the library may allocate (RuntimeError if too small),
and ``threads=`` (0: all cores; small calls run on the calling thread).
"""

from gausskl._distributions import DiagGaussian, FullGaussian, Gaussian, LowRankGaussian
from gausskl._ext import version as _library_version
from gausskl._from_torch import from_torch
from gausskl._jitter import JitterWarning
from gausskl._ops import kl, kl_standard_normal, knn_kl, pairwise_kl

__version__ = _library_version()


def __getattr__(name):
    # gk.dask: imported on first use, so that `import gausskl` never imports Dask.
    if name == "dask":
        import importlib

        return importlib.import_module("gausskl.dask")
    raise AttributeError(f"module 'gausskl' has no attribute {name!r}")

__all__ = [
    "DiagGaussian",
    "FullGaussian",
    "Gaussian",
    "JitterWarning",
    "LowRankGaussian",
    "from_torch",
    "kl",
    "kl_standard_normal",
    "knn_kl",
    "pairwise_kl",
]
