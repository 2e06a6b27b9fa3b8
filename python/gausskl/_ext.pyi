"""
gausskl C++ library bindings; use the gausskl package, not this module.
"""

from typing import Annotated, overload

import numpy
from numpy.typing import NDArray


def version() -> str:
    """The linked C++ library's version."""

class Batch:
    """Views of the caller's arrays as one batch of Gaussians (no copy)."""

    @overload
    @staticmethod
    def diag(mean: Annotated[NDArray[numpy.float32], dict(shape=(None, None), device='cpu', writable=False)], scale: Annotated[NDArray[numpy.float32], dict(shape=(None, None), device='cpu', writable=False)], param: str) -> Batch: ...

    @overload
    @staticmethod
    def diag(mean: Annotated[NDArray[numpy.float64], dict(shape=(None, None), device='cpu', writable=False)], scale: Annotated[NDArray[numpy.float64], dict(shape=(None, None), device='cpu', writable=False)], param: str) -> Batch: ...

    @overload
    @staticmethod
    def full(mean: Annotated[NDArray[numpy.float32], dict(shape=(None, None), device='cpu', writable=False)], scale: Annotated[NDArray[numpy.float32], dict(shape=(None, None, None), device='cpu', writable=False)], param: str) -> Batch: ...

    @overload
    @staticmethod
    def full(mean: Annotated[NDArray[numpy.float64], dict(shape=(None, None), device='cpu', writable=False)], scale: Annotated[NDArray[numpy.float64], dict(shape=(None, None, None), device='cpu', writable=False)], param: str) -> Batch: ...

    @overload
    @staticmethod
    def low_rank(mean: Annotated[NDArray[numpy.float32], dict(shape=(None, None), device='cpu', writable=False)], cov_factor: Annotated[NDArray[numpy.float32], dict(shape=(None, None, None), device='cpu', writable=False)], cov_diag: Annotated[NDArray[numpy.float32], dict(shape=(None, None), device='cpu', writable=False)]) -> Batch: ...

    @overload
    @staticmethod
    def low_rank(mean: Annotated[NDArray[numpy.float64], dict(shape=(None, None), device='cpu', writable=False)], cov_factor: Annotated[NDArray[numpy.float64], dict(shape=(None, None, None), device='cpu', writable=False)], cov_diag: Annotated[NDArray[numpy.float64], dict(shape=(None, None), device='cpu', writable=False)]) -> Batch: ...

    @property
    def family(self) -> str: ...

    @property
    def n(self) -> int: ...

    @property
    def d(self) -> int: ...

    @property
    def is_double(self) -> bool: ...

    def addresses(self) -> list[int]: ...

MAX_TOLERANCE: float = 0.001

@overload
def kl(p: Batch, q: Batch, out: Annotated[NDArray[numpy.float32], dict(shape=(None,), order='C', device='cpu')], threads: int = 0, jitter: float = 0.0, memory_budget: int = 0) -> tuple[int, int]: ...

@overload
def kl(p: Batch, q: Batch, out: Annotated[NDArray[numpy.float64], dict(shape=(None,), order='C', device='cpu')], threads: int = 0, jitter: float = 0.0, memory_budget: int = 0) -> tuple[int, int]:
    """
    out[i] = KL(p_i || q_i); N = 1 on either side broadcasts. Returns how many p and q distributions were factored with jitter added to the diagonal.
    """

@overload
def kl_standard_normal(p: Batch, out: Annotated[NDArray[numpy.float32], dict(shape=(None,), order='C', device='cpu')], threads: int = 0, jitter: float = 0.0, memory_budget: int = 0) -> tuple[int, int]: ...

@overload
def kl_standard_normal(p: Batch, out: Annotated[NDArray[numpy.float64], dict(shape=(None,), order='C', device='cpu')], threads: int = 0, jitter: float = 0.0, memory_budget: int = 0) -> tuple[int, int]:
    """
    out[i] = KL(p_i || N(0, I)). Returns (count, 0): how many p distributions were factored with jitter added to the diagonal.
    """

@overload
def pairwise_kl(p: Batch, q: Batch | None, out: Annotated[NDArray[numpy.float32], dict(shape=(None, None), order='C', device='cpu')], threads: int = 0, jitter: float = 0.0, tolerance: float = 0.0, memory_budget: int = 0) -> tuple[int, int]: ...

@overload
def pairwise_kl(p: Batch, q: Batch | None, out: Annotated[NDArray[numpy.float64], dict(shape=(None, None), order='C', device='cpu')], threads: int = 0, jitter: float = 0.0, tolerance: float = 0.0, memory_budget: int = 0) -> tuple[int, int]:
    """
    out[i, j] = KL(p_i || q_j); q = None means q = p. Returns how many p and q distributions were factored with jitter added to the diagonal (q = p: counted as p).
    """

@overload
def knn_kl(p: Batch, q: Batch | None, k: int, indices: Annotated[NDArray[numpy.int64], dict(shape=(None, None), order='C', device='cpu')], values: Annotated[NDArray[numpy.float32], dict(shape=(None, None), order='C', device='cpu')], exclude_self: bool = False, threads: int = 0, jitter: float = 0.0, tolerance: float = 0.0, memory_budget: int = 0) -> tuple[int, int]: ...

@overload
def knn_kl(p: Batch, q: Batch | None, k: int, indices: Annotated[NDArray[numpy.int64], dict(shape=(None, None), order='C', device='cpu')], values: Annotated[NDArray[numpy.float64], dict(shape=(None, None), order='C', device='cpu')], exclude_self: bool = False, threads: int = 0, jitter: float = 0.0, tolerance: float = 0.0, memory_budget: int = 0) -> tuple[int, int]:
    """
    The k smallest KL(p_i || q_j) per i, ascending, ties to the lower j. Returns how many p and q distributions were factored with jitter on the diagonal (q = p: counted as p).
    """

MAPPED_BYTES: int = 1048576

def empty_bytes(nbytes: int) -> Annotated[NDArray[numpy.uint8], dict(shape=(None,))]:
    """
    Uninitialized uint8 NumPy array of nbytes bytes; from MAPPED_BYTES on, pages mapped for it alone and unmapped when it is freed.
    """
