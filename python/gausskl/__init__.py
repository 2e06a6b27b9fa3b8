"""gausskl: KL divergences between Gaussian distributions, in nats, exactly as the math says.

Batches of Gaussians over NumPy arrays, PyTorch tensors, or any DLPack array (each example here
runs as it stands, and the tests run it):

>>> import numpy as np, gausskl as gk
>>> rng = np.random.default_rng(0)
>>> N, D, R = 4, 3, 2
>>> mu = rng.normal(size=(N, D))                                   # means [N, D]
>>> p = gk.DiagGaussian(mu, std=rng.uniform(0.5, 2, (N, D)))       # or var=, logvar=, precision=
>>> L = np.tril(rng.normal(size=(N, D, D)), -1) + 2 * np.eye(D)    # lower triangular, diagonal > 0
>>> f = gk.FullGaussian(mu, scale_tril=L)                # or covariance=, precision_matrix=
>>> E = rng.normal(size=(N, D * (D + 1) // 2))           # packed factors, log of the diagonal
>>> e = gk.FullGaussian(mu, packed_scale_tril=E, log_diagonal=True)
>>> r = gk.LowRankGaussian(mu, cov_factor=rng.normal(size=(N, D, R)), cov_diag=np.ones((N, D)))
>>> r
LowRankGaussian(N=4, D=3, R=2, dtype=float64, numpy)

Batch axes follow torch.distributions: any number of leading axes, broadcast between the arrays
of a batch and between p and q; results have the broadcast batch shape (0-d for two single
distributions). The scale goes by keyword: ``gk.DiagGaussian(mu, std)`` is a TypeError that
says so.

Operations, any family against any family (``help(gk.kl)`` and the others describe every
parameter):

>>> gk.kl(p, f).shape                 # KL(p_i || f_i); N = 1 on either side broadcasts
(4,)
>>> gk.kl_standard_normal(r).shape    # KL(r_i || N(0, I))
(4,)
>>> gk.pairwise_kl(p, e).shape        # KL(p_i || e_j); without q, q = p
(4, 4)
>>> idx, dist = gk.knn_kl(p, r, k=2)  # the k smallest KL(p_i || r_j) per row, ascending
>>> idx.shape, idx.dtype, dist.dtype
((4, 2), dtype('int64'), dtype('float64'))

``gk.from_torch(dist)`` reads torch.distributions ``Normal`` (univariate, as in torch),
``Independent(Normal, r)``, ``MultivariateNormal`` and ``LowRankMultivariateNormal``; the
operations take them directly and return what ``torch.distributions.kl_divergence`` returns.

The pairwise KL matrix of a batch: the ``[B, B]`` KL between every pair of B diagonal Gaussians
(``mu, std: [B, H]``), which a broadcast would build through ``[B, B, H]``, in one call that
never forms ``[B, B, H]``:

>>> import torch
>>> _ = torch.manual_seed(0)
>>> mu, std = torch.randn(64, 32), torch.rand(64, 32) + 0.5     # B = 64, H = 32
>>> kl = gk.pairwise_kl(gk.DiagGaussian(mu, std=std))
>>> kl.shape, kl.dtype
(torch.Size([64, 64]), torch.float32)

A VAE loss: the encoder gives ``mu, logvar: [B, D]``, and gradients flow through the prior term:

>>> encoder, decoder = torch.nn.Linear(10, 2 * 4), torch.nn.Linear(4, 10)
>>> x = torch.rand(16, 10)
>>> mu, logvar = encoder(x).chunk(2, dim=1)
>>> z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
>>> recon = torch.nn.functional.mse_loss(decoder(z), x, reduction="sum")
>>> loss = recon + gk.kl_standard_normal(gk.DiagGaussian(mu, logvar=logvar)).sum()
>>> loss.backward()
>>> encoder.weight.grad.shape
torch.Size([8, 10])

Retrieval, the 10 nearest database Gaussians by KL of each of 3 queries:

>>> db_mu, db_std = torch.randn(1000, 16), torch.rand(1000, 16) + 0.5
>>> q_mu, q_std = db_mu[:3], db_std[:3]
>>> idx, dist = gk.knn_kl(gk.DiagGaussian(q_mu, std=q_std),
...                       gk.DiagGaussian(db_mu, std=db_std), k=10)
>>> idx.shape, idx[:, 0].tolist()      # each query is item 0, 1, 2 of the database: KL 0
(torch.Size([3, 10]), [0, 1, 2])

Results come back in the caller's framework (torch in, torch out; NumPy in, NumPy out), in
float32 when every input is float32 and float64 otherwise; arithmetic is in float64. Bad input
raises ValueError naming the operation, array, index and rule, e.g.
``[kl] p.scale (std) must be positive and finite, found -0.5 at row 17, column 3``.
Tensors with ``requires_grad`` get gradients (the library's own for diagonal batches and
triangular factors); under ``torch.compile`` the operations are torch custom operators, so
losses compile with ``fullgraph=True``, and ``torch.func.vmap`` runs them once per index. CUDA and MPS tensors are computed with the same
algorithms in torch operations.

The Fréchet distance of FID, FAD and FVD (the squared 2-Wasserstein distance of two Gaussians
fitted to features) is ``gk.frechet_distance(p, q)``, the same value as
``gk.divergence(p, q, "wasserstein2")``: symmetric factorizations in float64, exact for
positive semi-definite covariances (fewer samples than dimensions), never complex or negative:

>>> S = np.cov(rng.normal(size=(3, 5)), rowvar=False)   # 3 samples in D = 5: rank 2
>>> a, b = gk.FullGaussian(np.zeros(5), covariance=S), gk.FullGaussian(np.zeros(5), covariance=4 * S)
>>> bool(np.isclose(gk.frechet_distance(a, b), np.trace(S)))   # (2 - 1)^2 tr S
True

Batches of Dask arrays (row chunks of millions of distributions) are computed chunk by chunk on
Dask's workers by ``gausskl.dask`` (``gk.dask.pairwise_kl``, ``gk.dask.knn_kl``, ``gk.dask.kl``;
the extra ``pip install "gausskl[dask]"``), imported on first use: ``import gausskl`` does not
import Dask.

A covariance or precision matrix that is not positive definite is an error unless the operation
is given ``jitter=EPS`` (every operation takes it): such matrices, and only those, are then
factored with EPS added to their diagonal, and a ``JitterWarning`` says how many:

>>> import warnings
>>> sample_cov = np.ones((N, D, D))    # rank 1: not positive definite
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     kl = gk.pairwise_kl(gk.FullGaussian(np.zeros((N, D)), covariance=sample_cov), jitter=1e-6)
>>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
[pairwise_kl] 4 p distribution(s) were not positive definite; factored with 1e-06 added to
the diagonal (jitter)

``pairwise_kl`` and ``knn_kl`` take ``tolerance=EPS`` (at most 1e-3), the certified error of each
result as ``|KL - exact| / (|exact| + 1)`` (default 1e-7 for float32 inputs, 1e-13 for float64;
from about 1e-5, float32 diagonal inputs may use a faster float kernel), and every operation
takes ``memory_budget=BYTES``, the most the library may allocate (RuntimeError if too small),
``threads=`` (0: all cores; small calls run on the calling thread) and ``torch_path=`` (True:
torch tensors on the CPU computed with torch operations too).

Errors are ``GaussKLError``s with the library's message and its data as attributes (``op``,
``kind``, ``side``, ``index``, ``hint``): bad input an ``InputError`` (a ``ValueError``; a
matrix that is not positive definite a ``NotPositiveDefiniteError``, an option out of range an
``OptionError``), a lack of resources a ``ResourceError`` (a ``RuntimeError``; a memory budget
too small a ``MemoryBudgetError``).
"""

from gausskl._distributions import DiagGaussian, FullGaussian, Gaussian, LowRankGaussian
from gausskl._divergence import divergence, knn, pairwise
from gausskl._errors import (GaussKLError, InputError, MemoryBudgetError,
                             NotPositiveDefiniteError, OptionError, ResourceError)
from gausskl._ext import version as _library_version
from gausskl._frechet import frechet_distance
from gausskl._frechet_features import frechet_from_features
from gausskl._from_torch import from_torch
from gausskl._jitter import JitterWarning
from gausskl._mixtures import (GaussianMixture, log_overlap, mixture_divergence, mixture_kl,
                               mixture_kl_bounds, mixture_kl_mc, pairwise_log_overlap,
                               reduce_mixture)
from gausskl._moments import MomentAccumulator, fit_gaussian
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
    "GaussKLError",
    "Gaussian",
    "GaussianMixture",
    "InputError",
    "JitterWarning",
    "LowRankGaussian",
    "MemoryBudgetError",
    "MomentAccumulator",
    "NotPositiveDefiniteError",
    "OptionError",
    "ResourceError",
    "divergence",
    "fit_gaussian",
    "frechet_distance",
    "frechet_from_features",
    "from_torch",
    "kl",
    "kl_standard_normal",
    "log_overlap",
    "mixture_divergence",
    "mixture_kl",
    "mixture_kl_bounds",
    "mixture_kl_mc",
    "knn",
    "knn_kl",
    "pairwise",
    "pairwise_kl",
    "pairwise_log_overlap",
    "reduce_mixture",
]
