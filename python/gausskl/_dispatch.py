"""One call's request and the path it takes, for every operation and kind.

The extension answers a call with its result, or with a status naming the path to take, decided
here once (Request.run): NEEDS_GRAD, the library's values with gradients (gausskl._autograd for
KL; the kinds' closed forms in torch operations for the others); TORCH_PATH (or a torch.func
transform), torch operations (gausskl._torch_path, gausskl._divergence_torch); CONVERT, arrays
brought to one dtype (an all-pairs q made contiguous) and handed over again. A training step's
row-wise KL with gradients takes step() instead: one predicate, its fast paths, and None for
the general path. torch.compile's operators (gausskl._compile) run eager() under tracing.
"""

from __future__ import annotations

from gausskl import _arrays
from gausskl import _ext
from gausskl import _options
from gausskl._batches import contiguous
from gausskl._distributions import FORMS
from gausskl._errors import for_caller
from gausskl._jitter import Jitter, with_hint

NEEDS_GRAD, TORCH_PATH, CONVERT = _ext.NEEDS_GRAD, _ext.TORCH_PATH, _ext.CONVERT
_KEPT = _ext.Kept
KINDS = tuple(_ext.DIVERGENCES)
_PAIRS = frozenset(("pairwise_kl", "knn_kl", "pairwise", "knn"))


class Request:
    """One call's inputs and options, for every path but a plain result and the training step's.
    kind and alpha: the divergence of divergence, pairwise and knn (kl for the KL operations)."""

    def __init__(self, op: str, p, q, *, threads, jitter, budget, torch_path, tolerance=0.0,
                 k=None, exclude_self=False, self_pairs=False, progress=None, kind="kl",
                 alpha=0.0):
        self.op, self.p, self.q = op, p, q
        self.progress = progress  # the extension's callable (gausskl._progress.callback)
        self.threads, self.budget, self.tolerance = threads, budget, tolerance
        self.jitter = Jitter(op, jitter)
        self.torch_path = torch_path
        self.k, self.exclude_self = k, exclude_self
        # pairwise and knn without q: q = p (the library then uses p's batch on both sides)
        self.self_pairs = self_pairs
        self.kind, self.alpha = kind, alpha
        self.paths = _PATHS[op]

    @property
    def gaussians(self):
        return [self.p] if self.q is None else [self.p, self.q]

    def library(self, for_grad: bool = False):
        """The extension's call: a result (or (result, counts) with a jitter), or a status."""
        p, q, op = self.p._spec, None if self.q is None else self.q._spec, self.op
        eps, threads, budget = self.jitter.eps, self.threads, self.budget
        torch_path = self.torch_path
        try:
            if op == "kl":
                return _ext.kl(p, q, threads, eps, budget, torch_path, for_grad)
            if op == "kl_standard_normal":
                return _ext.kl_standard_normal(p, threads, eps, budget, torch_path, for_grad)
            if op == "pairwise_kl":
                return _ext.pairwise_kl(p, q, threads, eps, self.tolerance, budget, torch_path,
                                        for_grad, self.progress)
            if op == "knn_kl":
                return _ext.knn_kl(p, q, self.k, self.exclude_self, threads, eps, self.tolerance,
                                   budget, torch_path, for_grad, self.progress)
            kind = KINDS.index(self.kind)
            if op == "divergence":
                return _ext.divergence(p, q, kind, self.alpha, threads, eps, budget, torch_path,
                                       for_grad)
            if op == "pairwise":
                return _ext.pairwise(p, q, kind, self.alpha, threads, eps, self.tolerance, budget,
                                     torch_path, for_grad, self.progress)
            return _ext.knn(p, q, self.k, self.exclude_self, kind, self.alpha, threads, eps,
                            self.tolerance, budget, torch_path, for_grad, self.progress)
        except ValueError as e:
            raise with_hint(e) from None

    def values(self, got):
        """The result of a library call, its jitter counts taken."""
        if self.jitter.eps > 0:
            got, count_p, count_q = got
            self.jitter.add("p", count_p)
            self.jitter.add("q", count_q)
        return got

    def run(self, got=None):
        """The result by whichever path the extension's answer `got` names (None: ask it)."""
        if got is None:
            got = self.library()
        if got.__class__ is _KEPT:  # this path finishes results itself: the autograd path's way
            got = NEEDS_GRAD
        gradients, torch_ops, refused = self.paths
        converted = False
        while got.__class__ is int:
            # A torch.func transform active: its wrapped tensors have no memory the library could
            # read (refused: the kinds' check first, which refuses vmap).
            moved = refused is not None and refused(self)
            if got == NEEDS_GRAD and not moved:
                return self.finish(gradients(self))
            if got == TORCH_PATH or moved or _arrays.transformed():
                return self.finish(torch_ops(self))
            if converted:
                if any(_arrays.escaped(a) for g in self.gaussians for a in g._spec[1:]):
                    raise RuntimeError(
                        f"[{self.op}] a tensor escaped from inside torch.func.vmap after its "
                        "transform exited (torch's own operations refuse it too): return it from "
                        "the vmapped function instead of keeping it")
                raise RuntimeError(f"[{self.op}] internal error: inputs not readable after "
                                   "conversion")
            self.convert()
            converted = True
            got = self.library()
        return self.finish(self.values(got))

    def convert(self):
        """Every array in the common dtype the library reads in place; an all-pairs q batch (p
        without q) contiguous."""
        gs = self.gaussians
        if any(_arrays.is_torch(a) and a.is_meta for g in gs for a in g._spec[1:]):
            # no DLPack export, no values to check or compute with
            raise ValueError(f"[{self.op}] the tensors are on torch's meta device, which holds no "
                             "values to compute with (torch.compile's fake tensors are taken)")
        if any(_arrays.is_dask(a) for g in gs for a in g._spec[1:]):
            raise TypeError(f"[{self.op}] the distributions hold Dask arrays: use "
                            f"gausskl.dask.{self.op} (lazy, chunk by chunk), or compute them first")
        k = _arrays.common_kind(a for g in gs for a in g._spec[1:])
        gs = [g._replace([_widened(g, i, a, k) for i, a in enumerate(g._spec[1:])]) for g in gs]
        if self.op in _PAIRS:
            i = len(gs) - 1
            gs[i] = contiguous(gs[i])
        self.p, self.q = gs[0], (gs[1] if len(gs) > 1 else None)

    def unify(self):
        """With a torch tensor among the inputs: every array a tensor on its device (NumPy
        arrays wrapped in place on the CPU), one device for all, or the error."""
        torch = _arrays.torch_module()
        tensors = [a for g in self.gaussians for a in g._spec[1:] if _arrays.is_torch(a)]
        if not tensors:
            return None
        devices = {a.device for a in tensors}
        if len(devices) > 1:
            raise ValueError(f"[{self.op}] arrays are on different devices: "
                             + ", ".join(sorted(map(str, devices))))
        device = devices.pop()

        def as_tensor(g):
            if g is None or all(_arrays.is_torch(a) for a in g._spec[1:]):
                return g
            return g._replace([a if _arrays.is_torch(a) else torch.as_tensor(a, device=device)
                               for a in g._spec[1:]])

        self.p, self.q = as_tensor(self.p), as_tensor(self.q)
        return torch

    def out_dtype(self):
        torch = _arrays.torch_module()
        f64 = _arrays.common_kind(a for g in self.gaussians for a in g._spec[1:]) == "float64"
        return torch.float64 if f64 else torch.float32

    def finish(self, result):
        """The result in the caller's framework, after the call's JitterWarnings (attributed to
        the caller of the operation). The kinds' tensors from their torch paths are kept."""
        if self.jitter.eps > 0:  # only a jitter counts
            self.jitter.warn(stacklevel=4)
        if self.kind != "kl" and _arrays.is_torch(result):
            return result
        p, q = self.p, self.q
        ns = p._namespace if p._namespace is not None or q is None else q._namespace
        if ns is not None and hasattr(ns, "from_dlpack"):
            if isinstance(result, tuple):
                return tuple(ns.from_dlpack(x) for x in result)
            return ns.from_dlpack(result)
        return result


def _widened(g, i: int, a, k: str):
    """Array i of g's spec (after the code) in dtype k; a symmetric matrix by its own round-off."""
    if i == 1 and FORMS[g._spec[0]].factored:
        return _arrays.widened_symmetric(a, k)
    return _arrays.converted(a, k)


# -- the paths of the KL operations ---------------------------------------------------------------

def _kl_gradients(request):
    from gausskl import _autograd

    return _autograd.run(request)


def _kl_torch_path(request):
    from gausskl import _torch_path

    request.unify()
    return _torch_path.run(request)


# -- the paths of the other kinds -----------------------------------------------------------------

def _kinds_transformed(request) -> bool:
    """Whether torch.func.grad (jvp, ...) is active: its wrapped tensors have no memory the
    library could read, so the call takes the torch path (torch.func.vmap: gausskl._compile)."""
    return _arrays.transformed()


def _rowwise_with_grad(request, on_host):
    """Tensors with gradients on the CPU (on_host): the library's values forward, the formula's
    gradient backward; or the torch path."""
    from gausskl import _divergence_torch as dt

    r = request
    torch = r.unify()
    if not on_host or (r.jitter.eps and any(map(dt.factored, r.gaussians))):
        # As gk.kl: a jitter on matrices the library would factor runs in torch operations
        # forward and backward (a backward factoring again could jitter other matrices).
        _options.check_torch_path(r.op, r.jitter, 0.0, r.budget)
        return dt.rowwise(r.op, r.kind, r.alpha, r.p, r.q, r.jitter).to(r.out_dtype())
    exact = torch.as_tensor(r.values(r.library(for_grad=True))).to(r.out_dtype())
    formula = dt.formula(r.kind, r.alpha, r.p, r.q).to(exact.dtype)
    return exact + (formula - formula.detach())


def _pairs_torch_path(r):
    from gausskl import _divergence_torch as dt

    _options.check_torch_path(r.op, r.jitter, r.tolerance, r.budget)
    if r.op == "pairwise":
        return dt.pairwise(r.op, r.kind, r.alpha, r.p, r.q, r.jitter, r.budget, r.out_dtype())
    return dt.knn(r.op, r.kind, r.alpha, r.p, r.q, r.k, r.exclude_self, r.jitter, r.budget,
                  r.out_dtype())


def _pairs_with_grad(r, on_host):
    """The library's values with the formula's gradients (on_host), or the torch path."""
    from gausskl import _divergence_torch as dt
    from gausskl._autograd import _tensors

    torch = r.unify()
    if not on_host or (r.jitter.eps and any(map(dt.factored, r.gaussians))):
        return _pairs_torch_path(r)
    got = r.values(r.library(for_grad=True))
    specs = tuple(g._spec for g in r.gaussians)
    slots, tensors = _tensors(specs)
    if r.op == "pairwise":
        info = (r.op, r.kind, r.alpha, specs, slots, r.budget, None, None)
        return dt.PairsBackward.apply(lambda: got, info, *tensors)
    indices, chosen = got
    k = indices.shape[-1]
    rows = torch.arange(indices.numel() // k, device=indices.device).repeat_interleave(k)
    info = (r.op, r.kind, r.alpha, specs, slots, r.budget, rows, indices.reshape(-1))
    flat = chosen.reshape(-1)
    values = dt.PairsBackward.apply(lambda: flat.clone(), info, *tensors)
    return indices, values.reshape(chosen.shape)


# Each operation's (gradients, torch path, the check of an active transform before gradients or
# None) for Request.run.
_KL_PATHS = (_kl_gradients, _kl_torch_path, None)
_PATHS = {
    "kl": _KL_PATHS, "kl_standard_normal": _KL_PATHS, "pairwise_kl": _KL_PATHS,
    "knn_kl": _KL_PATHS,
    "divergence": (lambda r: _rowwise_with_grad(r, True), lambda r: _rowwise_with_grad(r, False),
                   _kinds_transformed),
    "pairwise": (lambda r: _pairs_with_grad(r, True), lambda r: _pairs_with_grad(r, False),
                 _kinds_transformed),
}
_PATHS["knn"] = _PATHS["pairwise"]


# -- the training step ---------------------------------------------------------------------------

_AUTOGRAD = None
# gausskl._autograd's application of a Kept (None where this torch lacks its C apply) and torch's
# test for an active torch.func transform, set when it is imported (it imports torch).
_KEPT_APPLY = _TRANSFORMS = None


def _autograd():
    global _AUTOGRAD, _KEPT_APPLY, _TRANSFORMS
    if _AUTOGRAD is None:
        from gausskl import _autograd as module

        _AUTOGRAD = module
        _KEPT_APPLY, _TRANSFORMS = module._KEPT_APPLY, module._TRANSFORMS
    return _AUTOGRAD


def step(op: str, out, p, q, jitter, threads: int, budget: int):
    """kl's or kl_standard_normal's (q None) training-step fast paths, behind this one predicate:
    arrays of torch or NumPy (no foreign namespace), and the extension's answer a Kept (the values
    and their gradients, made in one pass: applied here with no call of ours between), or
    NEEDS_GRAD without a jitter (gausskl._autograd.rowwise, the step Functions). None: the
    general path (Request.run), the one fallback."""
    if p._namespace is not None or (q is not None and q._namespace is not None):
        return None
    if out.__class__ is _KEPT:
        autograd = _AUTOGRAD or _autograd()
        # No functorch wrapper to unwrap: a Kept means the extension read every tensor.
        if _KEPT_APPLY is not None and not _TRANSFORMS():
            pa = p._spec
            if q is None:
                return _KEPT_APPLY(out, pa[1], pa[2])
            qa = q._spec
            return _KEPT_APPLY(out, pa[1], pa[2], qa[1], qa[2])
        return autograd.rowwise(op, p, q, threads, budget)
    if out.__class__ is int and out == NEEDS_GRAD and not jitter:
        return (_AUTOGRAD or _autograd()).rowwise(op, p, q, threads, budget)
    return None


# -- torch.compile's operators: the eager operation on checked arguments ------------------------

def eager(op: str, p, q, *, jitter=0.0, memory_budget=0, threads=0, tolerance=0.0, k=None,
          exclude_self=False, kind="kl", alpha=0.0):
    """The operation on batches and options the public function has checked, by the general
    path (what gausskl._compile's operators run)."""
    try:
        return Request(op, p, q, threads=threads, jitter=jitter, budget=memory_budget,
                       torch_path=None, tolerance=tolerance, k=k, exclude_self=exclude_self,
                       self_pairs=q is None and op in _PAIRS, kind=kind, alpha=alpha).run()
    except (ValueError, TypeError, RuntimeError) as e:
        raise for_caller(e, op, {"p": p} if q is None and op not in _PAIRS else
                         {"p": p, "q": q}) from None


def kl(p, q, **options):
    return eager("kl", p, q, **options)


def kl_standard_normal(p, **options):
    return eager("kl_standard_normal", p, None, **options)


def pairwise_kl(p, q=None, **options):
    return eager("pairwise_kl", p, q, **options)


def knn_kl(p, q=None, **options):
    return eager("knn_kl", p, q, **options)
