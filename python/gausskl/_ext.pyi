"""
gausskl C++ library bindings; use the gausskl package, not this module.
"""



def version() -> str:
    """The linked C++ library's version."""

REGULARIZE_HINT: str = ...

LOG_DIAGONAL_HINT: str = 'for log L_rr on the diagonal, set log_diagonal'

def not_positive_definite_error(op: str, side: str, param: str, index: int, pivot: int, value: str) -> object:
    """The library's NotPositiveDefiniteError (gausskl._errors), to raise."""

def memory_budget_error(op: str, budget: int, needs: str) -> object:
    """The library's MemoryBudgetError (gausskl._errors), to raise."""

MAX_TOLERANCE: float = 0.001

DEFAULT_TOLERANCE_FLOAT32: float = 1e-07

DEFAULT_TOLERANCE_FLOAT64: float = 1e-13

DEFAULT_BLOCK_BYTES: int = 134217728

MIN_VARIANCE: float = 1e-300

MAX_VARIANCE: float = 1e+300

VARIANCE_RANGE: str = '[1e-300, 1e300]'

RULES: dict = ...

def show(x: float, float32: bool) -> str:
    """A value as the library's messages write it (shortest text)."""

def renyi_infinite_text(where: str, pivot: int, value: str) -> str:
    """
    The library's text of a Renyi divergence of order > 1 that is infinite.
    """

def show_bytes(bytes: int) -> str:
    """A size as the library's messages write it: "512 B", "12.0 MiB"."""

DIAG_PARAMS: tuple = ('std', 'var', 'logvar', 'precision')

FULL_PARAMS: tuple = ...

FAMILIES: tuple = ...

CODES: dict = ...

KINDS: tuple = ...

def check_options(op: str, threads: int, jitter: float, tolerance: float, memory_budget: int) -> None:
    """
    The library's rules for the options (gausskl::check_options): ValueError, its message.
    """

NEEDS_GRAD: int = 1

TORCH_PATH: int = 2

CONVERT: int = 3

def kl(p: object, q: object, threads: int, jitter: float, memory_budget: int, torch_path: object | None, for_grad: bool = False) -> object:
    """
    out[...] = KL(p || q) over the broadcast batch; a Status int when not the library's, or a Kept (the values and their gradients) for a training step's tensors.
    """

DIVERGENCES: tuple = ...

def divergence(p: object, q: object, kind: int, alpha: float, threads: int, jitter: float, memory_budget: int, torch_path: object | None, for_grad: bool = False) -> object:
    """
    out[...] = D(p || q) of the kind DIVERGENCES[kind] (alpha: renyi's order, else 0); a Status int when not the library's.
    """

def kl_standard_normal(p: object, threads: int, jitter: float, memory_budget: int, torch_path: object | None, for_grad: bool = False) -> object:
    """
    out[...] = KL(p || N(0, I)); a Status int when not the library's, or a Kept for a training step's tensors.
    """

def pairwise_kl(p: object, q: object | None, threads: int, jitter: float, tolerance: float, memory_budget: int, torch_path: object | None, for_grad: bool = False, progress: object | None = None) -> object:
    """
    out[i..., j...] = KL(p_i || q_j); q None: q = p. A Status int when not the library's.
    """

def pairwise(p: object, q: object | None, kind: int, alpha: float, threads: int, jitter: float, tolerance: float, memory_budget: int, torch_path: object | None, for_grad: bool = False, progress: object | None = None) -> object:
    """
    out[i..., j...] = D(p_i || q_j) of the kind DIVERGENCES[kind]; q None: q = p. A Status int when not the library's.
    """

def knn(p: object, q: object | None, k: int, exclude_self: bool, kind: int, alpha: float, threads: int, jitter: float, tolerance: float, memory_budget: int, torch_path: object | None, for_grad: bool = False, progress: object | None = None) -> object:
    """
    (indices, values) of the k smallest D(p_i || q_j) per i; a Status int when not the library's.
    """

def knn_kl(p: object, q: object | None, k: int, exclude_self: bool, threads: int, jitter: float, tolerance: float, memory_budget: int, torch_path: object | None, for_grad: bool = False, progress: object | None = None) -> object:
    """
    (indices, values) of the k smallest KL(p_i || q_j) per i; a Status int when not the library's.
    """

def addresses(spec: object) -> list:
    """The data addresses of a spec's arrays as the library reads them."""

def kl_backward(p: object, q: object | None, grad: object, needs: object, threads: int) -> object:
    """
    Gradients of sum(grad * kl(p, q)) (q None: N(0, I)) for the arrays flagged in needs, each [*batch, *event]; None for the others.
    """

class Kept:
    """
    A training step's row-wise KL with each row's own gradients, made by kl and kl_standard_normal for tensors that require grad.
    """

    def take_values(self) -> object:
        """
        The result, handed over once: the result's autograd node holds the Kept, which then holds no reference back to it (a cycle only the garbage collector would free, with the kept gradients).
        """

    @property
    def codes(self) -> tuple:
        """The parameterization codes of p and q (p's alone against N(0, I))."""

    @property
    def versions(self) -> tuple:
        """
        Each array's version counter (torch's _version) at the call, in the order of p's mean and scale, then q's.
        """

    @property
    def threads(self) -> int:
        """The call's threads, for a second backward."""

    @property
    def inputs(self) -> tuple:
        """The call's tensors, in the order of p's mean and scale, then q's."""

def kept_backward(kept: Kept, grad: object) -> object:
    """
    The gradients of sum(grad * values), values the result of the call that made kept: (None, then one per array: p's mean and scale, then q's), each [*batch, D], None for those that did not require grad; as an autograd Function's backward returns them. The first backward has them: None for a later one (retain_graph), and where grad mode is on (a backward with create_graph, whose gradients must be differentiable).
    """

def pairwise_kl_backward(p: object, q: object | None, grad: object, needs: object, threads: int) -> object:
    """
    Gradients of sum(grad * pairwise_kl(p, q)) (q None: q = p) for the arrays flagged in needs, each [*batch, *event]; None for the others. A grad of one value broadcast (every stride 0, as a sum's or a mean's) is taken as that value, with no [N, M] copy.
    """

def install_diag_init(cls: type, native: dict, floats: set, torch_kind: object, std_code: object, logvar_code: object) -> bool:
    """
    Makes DiagGaussian's common construction (mean and logvar= or std= of one type, shape and float dtypes) C code, every other case going to its Python __init__. Once: False when already done.
    """

class MomentAccumulator:
    def __init__(self, d: int, family: str, threads: int) -> None: ...

    @staticmethod
    def from_state(count: int, mean: object, scatter: object, family: str, threads: int) -> MomentAccumulator: ...

    def update(self, x: object, first_row: int) -> None: ...

    def merge(self, other: MomentAccumulator) -> None: ...

    @property
    def count(self) -> int: ...

    @property
    def d(self) -> int: ...

    @property
    def threads(self) -> int: ...

    @property
    def family(self) -> str: ...

    def mean(self) -> object: ...

    def scatter(self) -> object: ...

    def covariance(self, ddof: int) -> object: ...

def fit_gaussian(x: object, ddof: int, family: str, threads: int) -> tuple[object, object]: ...
