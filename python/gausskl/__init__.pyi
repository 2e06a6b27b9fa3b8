# Type stubs of the public API (see __init__.py for the docs).
from typing import Any, Callable, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

# NumPy arrays, torch tensors, any DLPack array, or nested sequences of numbers.
ArrayLike = Union[npt.ArrayLike, Any]
# NumPy in, NumPy out; torch in, torch out (torch.Tensor when torch is installed).
Array = Union[np.ndarray, Any]
# A gausskl batch, or a torch.distributions Normal, Independent(Normal, r),
# MultivariateNormal or LowRankMultivariateNormal.
GaussianLike = Union["Gaussian", Any]

__version__: str

class Gaussian:
    family: str
    param: str
    @property
    def mean(self) -> Array: ...
    @property
    def arrays(self) -> dict[str, Array]: ...
    @property
    def batch_shape(self) -> Tuple[int, ...]: ...
    @property
    def event_shape(self) -> Tuple[int]: ...
    @property
    def n(self) -> int: ...
    @property
    def d(self) -> int: ...
    @property
    def dtype(self) -> str: ...
    @property
    def is_torch(self) -> bool: ...
    @property
    def device(self) -> str: ...
    @property
    def requires_grad(self) -> bool: ...

class DiagGaussian(Gaussian):
    def __init__(
        self,
        mean: ArrayLike,
        *,
        std: Optional[ArrayLike] = None,
        var: Optional[ArrayLike] = None,
        logvar: Optional[ArrayLike] = None,
        precision: Optional[ArrayLike] = None,
    ) -> None: ...
    @property
    def scale(self) -> Array: ...

class FullGaussian(Gaussian):
    def __init__(
        self,
        mean: ArrayLike,
        *,
        scale_tril: Optional[ArrayLike] = None,
        covariance: Optional[ArrayLike] = None,
        precision_matrix: Optional[ArrayLike] = None,
        packed_scale_tril: Optional[ArrayLike] = None,
        log_diagonal: bool = False,
    ) -> None: ...
    @property
    def scale(self) -> Array: ...
    @property
    def log_diagonal(self) -> bool: ...

class LowRankGaussian(Gaussian):
    def __init__(self, mean: ArrayLike, *, cov_factor: ArrayLike, cov_diag: ArrayLike) -> None: ...
    @property
    def cov_factor(self) -> Array: ...
    @property
    def cov_diag(self) -> Array: ...
    @property
    def rank(self) -> int: ...

class JitterWarning(UserWarning): ...

class MomentAccumulator:
    def __init__(self, d: int, family: str = "full", *, threads: int = 0) -> None: ...
    def update(self, batch: ArrayLike, *, first_row: int = 0) -> MomentAccumulator: ...
    def merge(self, other: MomentAccumulator) -> MomentAccumulator: ...
    @property
    def count(self) -> int: ...
    @property
    def d(self) -> int: ...
    @property
    def family(self) -> str: ...
    @property
    def mean(self) -> np.ndarray: ...
    def scatter(self) -> np.ndarray: ...
    def covariance(self, ddof: int = 1) -> np.ndarray: ...
    def gaussian(self, ddof: int = 1) -> Union[FullGaussian, DiagGaussian]: ...
    def save(self, path: Any) -> None: ...
    @classmethod
    def load(cls, path: Any, *, threads: int = 0) -> MomentAccumulator: ...

class GaussKLError(Exception):
    op: Optional[str]
    kind: Optional[str]
    side: Optional[str]
    index: Optional[int]
    hint: Optional[str]
    hint_option: Optional[str]
    def __init__(
        self,
        message: str = "",
        *,
        op: Optional[str] = None,
        kind: Optional[str] = None,
        side: Optional[str] = None,
        index: Optional[int] = None,
        hint: Optional[str] = None,
        hint_option: Optional[str] = None,
    ) -> None: ...
    def reworded(self, message: str) -> GaussKLError: ...

class InputError(GaussKLError, ValueError): ...

class OptionError(InputError):
    option: Optional[str]
    rule: Optional[str]

class NotPositiveDefiniteError(InputError):
    pivot: Optional[int]

class ResourceError(GaussKLError, RuntimeError): ...

class MemoryBudgetError(ResourceError):
    budget: Optional[int]
    needs: Optional[str]

def divergence(
    p: GaussianLike,
    q: GaussianLike,
    kind: str = "kl",
    alpha: Optional[float] = None,
    *,
    jitter: float = 0.0,
    memory_budget: Optional[int] = 0,
    threads: int = 0,
    torch_path: Optional[bool] = None,
) -> Array: ...
def frechet_distance(
    p: GaussianLike,
    q: GaussianLike,
    *,
    details: bool = False,
    jitter: float = 0.0,
    memory_budget: Optional[int] = 0,
    threads: int = 0,
    torch_path: Optional[bool] = None,
) -> Union[Array, Tuple[Array, dict[str, np.ndarray]]]: ...
def frechet_from_features(
    x: Union[ArrayLike, FullGaussian, DiagGaussian],
    y: Union[ArrayLike, FullGaussian, DiagGaussian],
    *,
    ddof: int = 1,
    bootstrap: int = 0,
    fd_infinity: bool = False,
    points: int = 15,
    smallest: Optional[int] = None,
    seed: Any = None,
    chunk_rows: int = 4096,
    threads: int = 0,
    progress: Union[bool, Callable[[int, int], Any], None] = None,
) -> Union[float, Tuple[float, dict[str, Any]]]: ...
def fit_gaussian(
    x: ArrayLike, ddof: int = 1, *, family: str = "full", threads: int = 0
) -> Union[FullGaussian, DiagGaussian]: ...
def from_torch(dist: Any) -> Gaussian: ...
def kl(
    p: GaussianLike,
    q: GaussianLike,
    *,
    jitter: float = 0.0,
    memory_budget: Optional[int] = 0,
    threads: int = 0,
    torch_path: Optional[bool] = None,
) -> Array: ...
def kl_standard_normal(
    p: GaussianLike,
    *,
    jitter: float = 0.0,
    memory_budget: Optional[int] = 0,
    threads: int = 0,
    torch_path: Optional[bool] = None,
) -> Array: ...
def pairwise(
    p: GaussianLike,
    q: Optional[GaussianLike] = None,
    kind: str = "kl",
    alpha: Optional[float] = None,
    *,
    jitter: float = 0.0,
    tolerance: Optional[float] = 0.0,
    memory_budget: Optional[int] = 0,
    threads: int = 0,
    torch_path: Optional[bool] = None,
    progress: Union[bool, Callable[[int, int], Any], None] = None,
) -> Array: ...
def knn(
    p: GaussianLike,
    q: Optional[GaussianLike] = None,
    k: Optional[int] = None,
    *,
    kind: str = "kl",
    alpha: Optional[float] = None,
    exclude_self: bool = False,
    jitter: float = 0.0,
    tolerance: Optional[float] = 0.0,
    memory_budget: Optional[int] = 0,
    threads: int = 0,
    torch_path: Optional[bool] = None,
    progress: Union[bool, Callable[[int, int], Any], None] = None,
) -> Tuple[Array, Array]: ...
def pairwise_kl(
    p: GaussianLike,
    q: Optional[GaussianLike] = None,
    *,
    jitter: float = 0.0,
    tolerance: Optional[float] = 0.0,
    memory_budget: Optional[int] = 0,
    threads: int = 0,
    torch_path: Optional[bool] = None,
    progress: Union[bool, Callable[[int, int], Any], None] = None,
) -> Array: ...
def knn_kl(
    p: GaussianLike,
    q: Optional[GaussianLike] = None,
    k: Optional[int] = None,
    *,
    exclude_self: bool = False,
    jitter: float = 0.0,
    tolerance: Optional[float] = 0.0,
    memory_budget: Optional[int] = 0,
    threads: int = 0,
    torch_path: Optional[bool] = None,
    progress: Union[bool, Callable[[int, int], Any], None] = None,
) -> Tuple[Array, Array]: ...

# gausskl.dask (the extra "gausskl[dask]"), imported on first use of gk.dask.
from gausskl import dask as dask

# Gaussian mixtures (docs/mixtures.md).
MixtureLike = Union["GaussianMixture", GaussianLike]

class GaussianMixture:
    components: Gaussian
    log_weights: Array
    def __init__(
        self, components: GaussianLike, weights: Optional[ArrayLike] = None, *,
        logits: Optional[ArrayLike] = None
    ) -> None: ...
    @property
    def batch_shape(self) -> Tuple[int, ...]: ...
    @property
    def n_components(self) -> int: ...
    @property
    def d(self) -> int: ...
    @property
    def is_torch(self) -> bool: ...
    @property
    def weights(self) -> Array: ...
    @property
    def mean(self) -> Array: ...
    @property
    def covariance(self) -> Array: ...
    def log_prob(self, x: ArrayLike) -> Array: ...
    def sample(self, n: int, seed: int = 0) -> Array: ...

def log_overlap(p: GaussianLike, q: GaussianLike) -> Array: ...
def pairwise_log_overlap(p: GaussianLike, q: Optional[GaussianLike] = None) -> Array: ...
def mixture_kl_bounds(
    f: MixtureLike, g: MixtureLike, *, memory_budget: Optional[int] = None
) -> Tuple[Array, Array]: ...
def mixture_kl(
    f: MixtureLike, g: MixtureLike, method: str = "variational", *,
    memory_budget: Optional[int] = None
) -> Array: ...
def mixture_divergence(
    f: MixtureLike, g: MixtureLike, kind: str = "cauchy_schwarz", *,
    memory_budget: Optional[int] = None
) -> Array: ...
def mixture_kl_mc(
    f: MixtureLike, g: MixtureLike, samples: int = 10_000, seed: int = 0, *,
    memory_budget: Optional[int] = None
) -> Tuple[Array, Array]: ...
def reduce_mixture(
    f: MixtureLike, components: Optional[int] = None, *, method: str = "runnalls",
    threshold: Optional[float] = None, diagonal: bool = False
) -> GaussianMixture: ...
