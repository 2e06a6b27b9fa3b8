"""gausskl-dask: gausskl's pairwise and knn commands on a Dask cluster.

The flags and input files of ``gausskl pairwise`` and ``gausskl knn``, plus Zarr stores in and
out, ``--scheduler`` (the address of a running ``dask scheduler``, or ``local:W`` for a
LocalCluster of W single-threaded worker processes on this machine) and the chunking. Errors as
in gausskl: one line on stderr, exit status 2 for bad input or usage, 1 for resources and
anything else; no output (file or store) is left behind by a failed run.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import re
import shutil
import sys

EXIT_CODES = """
Exit status: 0 success; 2 bad input or usage (one line on stderr naming the array, the global
row and the rule); 1 resource or internal error. On any error no output file or store is
created and an existing one is left untouched.
"""

SPEC_HELP = ("distributions: FILE.npz or STORE.zarr (a Zarr group) holding `mean` [N, D] and one "
             "scale description, named as for gausskl (std | var | logvar | precision; "
             "scale_tril | covariance | precision_matrix | packed_scale_tril; cov_factor with "
             "cov_diag), or NAME=FILE items, each FILE a .npy (memory-mapped), .csv or .zarr array")


def _size(text: str) -> int:
    """'512M', '2G', '1GiB', '1000000' -> bytes (K, M, G, T: powers of 1024, as gausskl)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(i?[bB])?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 512M, 2G)")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def _library_rule(option: str):
    """An argparse type for a float option the library checks (gausskl::check_options): its
    rule's words, as gausskl's."""

    def parse(text: str) -> float:
        from gausskl import _ext
        from gausskl._errors import OptionError

        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, found {text}") from None
        options = {"threads": 0, "jitter": 0.0, "tolerance": 0.0, "memory_budget": 0}
        try:
            _ext.check_options("gausskl-dask", **{**options, option: value})
        except OptionError as e:
            raise argparse.ArgumentTypeError(f"{e.rule}, found {text}") from None
        return value

    return parse


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, found {text}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, found {text}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line, exit 2, as gausskl's usage errors.
        sys.stderr.write(f"gausskl-dask: error: {message} (see gausskl-dask --help)\n")
        sys.exit(2)


def parser() -> argparse.ArgumentParser:
    top = _Parser(prog="gausskl-dask", epilog=EXIT_CODES,
                  formatter_class=argparse.RawDescriptionHelpFormatter,
                  description="gausskl's all pairs and nearest neighbours on Dask: one task per "
                              "pair of row chunks, on a running Dask scheduler or a local "
                              "cluster of worker processes.")
    top.add_argument("--version", action="store_true", help="print the version and exit")
    sub = top.add_subparsers(dest="command", parser_class=_Parser)

    def common(cmd, out_help):
        cmd.add_argument("--p", nargs="+", required=True, metavar="SPEC", help=SPEC_HELP)
        cmd.add_argument("--q", nargs="+", metavar="SPEC", help="distributions q, as --p")
        cmd.add_argument("-o", "--output", required=True, help=out_help)
        cmd.add_argument("--dtype", choices=("float32", "float64"),
                         help="result precision (default: float64 if any input is float64 or "
                              "CSV, else float32)")
        cmd.add_argument("--threads", type=int, default=1,
                         help="threads of each task's library call (default 1: the workers "
                              "are the parallelism; 0: all cores)")
        cmd.add_argument("--memory-budget", type=_size, default=0, metavar="SIZE",
                         help="the most the library may allocate in one task (one block), e.g. "
                              "256M; the block's result and input chunks besides (default: no "
                              "limit, blocks of 128M)")
        cmd.add_argument("--jitter", type=_library_rule("jitter"), default=0.0, metavar="EPS",
                         help="add EPS to the diagonal of each covariance or precision matrix "
                              "that is not positive definite (only those); default: such a "
                              "matrix is an error")
        cmd.add_argument("--log-diagonal", action="store_true",
                         help="the diagonal entries of packed_scale_tril hold log L_rr")
        cmd.add_argument("--tolerance", type=_library_rule("tolerance"), default=0.0, metavar="EPS",
                         help="as gausskl's --tolerance, for each block")
        cmd.add_argument("--quiet", action="store_true",
                         help="no progress bar on stderr (none is shown when stderr is not a "
                              "terminal either)")
        cmd.add_argument("--scheduler", default=None, metavar="ADDRESS|local:W",
                         help="a running Dask scheduler (tcp://host:8786), or local:W for a "
                              "LocalCluster of W single-threaded worker processes (default "
                              "local:<cores>)")
        cmd.add_argument("--worker-memory", type=_size, default=None, metavar="SIZE",
                         help="local:W only: each worker's memory limit (Dask's memory_limit; "
                              "default: Dask's share of this machine's memory)")
        cmd.add_argument("--chunk-rows", type=_positive_int, default=None, metavar="R",
                         help="rows per chunk of p (default: pairwise blocks of up to 64 MiB; "
                              "knn: at least 8 chunks per worker)")
        cmd.add_argument("--q-chunk-rows", type=_positive_int, default=None, metavar="R",
                         help="rows per chunk of q (default: as p for pairwise, up to 65536 "
                              "for knn, also without --q, when q = p is cut apart from p)")

    pairwise = sub.add_parser("pairwise", epilog=EXIT_CODES,
                              formatter_class=argparse.RawDescriptionHelpFormatter,
                              help="all pairs: out[i, j] = KL(p_i || q_j), [N, M]; without "
                                   "--q, q = p")
    common(pairwise, "output: a .zarr store (chunk by chunk), .npy, or .csv (- for CSV on "
                     "stdout)")
    knn = sub.add_parser("knn", epilog=EXIT_CODES,
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         help="nearest neighbours: the K smallest KL(p_i || q_j) per i, ties to "
                              "the lower j; without --q, q = p")
    common(knn, "output: a .zarr store (arrays indices and kl), .npz (indices int64 [N, K], "
                "kl [N, K]) or .csv (lines p,rank,q,kl; - for CSV on stdout)")
    knn.add_argument("-k", type=int, required=True, help="neighbours per row, 1 <= K <= M")
    knn.add_argument("--exclude-self", action="store_true",
                     help="without --q: leave out each distribution itself (K <= N - 1)")
    return top


# -- the cluster --------------------------------------------------------------------------------

@contextlib.contextmanager
def client_for(scheduler: str | None, worker_memory: int | None):
    """A distributed Client of the scheduler at ADDRESS, or of a LocalCluster for local:W."""
    from distributed import Client, LocalCluster

    if scheduler is None:
        scheduler = f"local:{os.cpu_count() or 1}"
    if scheduler == "local" or scheduler.startswith("local:"):
        workers = os.cpu_count() or 1
        if scheduler != "local":
            try:
                workers = int(scheduler[len("local:"):])
            except ValueError:
                workers = 0
            if workers < 1:
                raise UsageError(f"--scheduler {scheduler}: local:W needs W >= 1 workers")
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               memory_limit=worker_memory if worker_memory else "auto",
                               dashboard_address=None, silence_logs=logging.CRITICAL)
        with cluster, Client(cluster) as client:
            yield client
    else:
        if worker_memory:
            raise UsageError("--worker-memory applies to --scheduler local:W only")
        with Client(scheduler, timeout="30s") as client:
            yield client


class UsageError(ValueError):
    pass


def _worker_count(client) -> int:
    info = client.scheduler_info()
    return max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))


def _computer(client, show: bool):
    """compute(*collections) on the cluster, with Dask's progress bar on stderr when show; a
    failed run returns once no task of it is running any more."""
    from gausskl.dask import compute_all

    def compute(*collections):
        return compute_all(list(collections), client, show)

    return compute


# -- the commands -------------------------------------------------------------------------------

def _pow2_floor(x: float) -> int:
    return 1 << max(0, int(math.floor(math.log2(max(1.0, x)))))


def _sides(args):
    from gausskl.dask import _files

    p_arrays = _files.read_side("p", args.p)
    q_arrays = _files.read_side("q", args.q) if args.q else None
    has_packed = "packed_scale_tril" in p_arrays or (q_arrays and "packed_scale_tril" in q_arrays)
    if args.log_diagonal and not has_packed:
        raise _files.LoadError(
            "[load] --log-diagonal applies to packed_scale_tril, which "
            + ("neither p nor q has" if q_arrays else "p does not have")
            + " (it reads the packed diagonals as log L_rr)")
    kinds = _files.kinds(p_arrays) | (_files.kinds(q_arrays) if q_arrays else set())
    compute64 = "float64" in kinds
    out64 = compute64 if args.dtype is None else args.dtype == "float64"
    return p_arrays, q_arrays, compute64, out64


def _rows(arrays) -> int:
    shape = arrays["mean"].shape
    return int(shape[0]) if len(shape) == 2 else 1


def _gaussians(args, p_arrays, q_arrays, p_rows, q_rows, dtype):
    from gausskl.dask import _files

    p = _files.gaussian(p_arrays, p_rows, args.log_diagonal, dtype)
    q = None if q_arrays is None else _files.gaussian(q_arrays, q_rows, args.log_diagonal, dtype)
    return p, q


def run(args, client, show):
    import numpy as np

    import gausskl as gk
    from gausskl.dask import _files, to_zarr

    compute = _computer(client, show)
    out = args.output
    p_arrays, q_arrays, compute64, out64 = _sides(args)
    n = _rows(p_arrays)
    m = _rows(q_arrays) if q_arrays is not None else n
    # --dtype float64 on float32 inputs: computed from float64 copies (exact), as gausskl
    # computes float32 inputs into float64 results.
    dtype = np.float64 if out64 and not compute64 else None
    out_dtype = np.dtype("float64" if out64 else "float32")
    workers = _worker_count(client)
    if args.command == "pairwise":
        formats = (".zarr", ".npy", ".csv")
        if out != "-" and not out.rstrip("/").endswith(formats):
            raise UsageError(f"[write] {out}: this command writes .zarr stores, .npy or .csv "
                             "files, or - for CSV on stdout")
        side = _pow2_floor(math.sqrt((64 << 20) / out_dtype.itemsize))
        p_rows = args.chunk_rows or min(max(n, 1), side)
        q_rows = args.q_chunk_rows or (p_rows if args.q is None else min(max(m, 1), side))
        if args.q is None:
            q_rows = p_rows
        p, q = _gaussians(args, p_arrays, q_arrays, p_rows, q_rows, dtype)
        # Rows the user chose are kept (a graph beyond gk.dask.MAX_TASKS then warns).
        kl = gk.dask.pairwise_kl(p, q, jitter=args.jitter, tolerance=args.tolerance,
                                 memory_budget=args.memory_budget, threads=args.threads,
                                 p_rows=args.chunk_rows,
                                 q_rows=args.q_chunk_rows if args.q else None)
        kl = kl.astype(out_dtype, copy=False)
        if out.rstrip("/").endswith(".zarr"):
            to_zarr(kl, out.rstrip("/"), overwrite=True, client=client, progress=show)
        elif out.endswith(".npy"):
            _store_npy(kl, out, compute)
        else:
            _write_matrix_csv(kl, out, compute)
        return
    formats = (".zarr", ".npz", ".csv")
    if out != "-" and not out.rstrip("/").endswith(formats):
        raise UsageError(f"[write] {out}: this command writes .zarr stores, .npz or .csv files, "
                         "or - for CSV on stdout")
    if args.exclude_self and args.q:
        raise ValueError("[knn] --exclude-self needs q = p (leave out --q)")
    p_rows = args.chunk_rows or max(256, math.ceil(n / max(8 * workers, math.ceil(n / 16384))))
    # q in chunks of up to 65,536 rows, also when q = p (cut apart from p): each block
    # re-scores its rows' best candidates, so few chunks of q cost less (docs/scaling.md).
    q_rows = args.q_chunk_rows or math.ceil(m / math.ceil(max(m, 1) / 65536))
    p, q = _gaussians(args, p_arrays, q_arrays, p_rows, q_rows, dtype)
    indices, kl = gk.dask.knn_kl(p, q, k=args.k, exclude_self=args.exclude_self,
                                 jitter=args.jitter, tolerance=args.tolerance,
                                 memory_budget=args.memory_budget, threads=args.threads,
                                 q_rows=q_rows if q is None else None)
    kl = kl.astype(out_dtype, copy=False)
    if out.rstrip("/").endswith(".zarr"):
        to_zarr({"indices": indices, "kl": kl}, out.rstrip("/"), overwrite=True,
                client=client, progress=show)
        return
    idx, val = compute(indices, kl)
    if out.endswith(".npz"):
        temporary = _files.temporary_beside(out) + ".npz"
        try:
            np.savez(temporary, indices=idx, kl=val)
            _files.replace(temporary, out)
        except BaseException:
            _remove(temporary)
            raise
    else:
        _write_text(out, _knn_lines(idx, val))


def _remove(path: str):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.exists(path):
        os.remove(path)


def _store_npy(x, out: str, compute):
    import dask.array as da

    from gausskl.dask import _files

    temporary = _files.temporary_beside(out) + ".npy"
    try:
        target = _files.NpyTarget(temporary, x.dtype, x.shape)
        compute(da.store(x, target, lock=False, compute=False))
        _files.replace(temporary, out)
    except BaseException:
        _remove(temporary)
        raise


def _knn_lines(idx, val):
    from gausskl.dask._files import shortest

    yield "p,rank,q,kl\n"
    for i in range(idx.shape[0]):
        for r in range(idx.shape[1]):
            yield f"{i},{r},{idx[i, r]},{shortest(val[i, r])}\n"


def _matrix_lines(x, compute):
    from gausskl.dask._files import shortest

    for a in range(x.numblocks[0]):
        (block,) = compute(x.blocks[a])
        for row in block:
            yield ",".join(shortest(v) for v in row) + "\n"


def _write_matrix_csv(x, out: str, compute):
    _write_text(out, _matrix_lines(x, compute))


def _write_text(out: str, lines):
    from gausskl.dask import _files

    if out == "-":
        # Lines go out as they come; an error part way leaves what was written, as gausskl's
        # own "-" does.
        for line in lines:
            sys.stdout.write(line)
        sys.stdout.flush()
        return
    temporary = _files.temporary_beside(out) + ".csv"
    try:
        with open(temporary, "w") as f:
            f.writelines(lines)
        _files.replace(temporary, out)
    except BaseException:
        _remove(temporary)
        raise


def _message(e: BaseException) -> str:
    from gausskl._jitter import HINT, jitter_hint

    message = str(e)
    # The Python package's hints name its keywords; here they are flags.
    if getattr(e, "kind", None) == "not_positive_definite":
        message = message.replace(HINT, jitter_hint("--jitter EPS"))
    option = getattr(e, "hint_option", None)
    if option and e.hint.endswith(f"set {option}"):
        flag = "pass --" + option.replace("_", "-")
        message = message.replace(e.hint, e.hint[:-len(f"set {option}")] + flag)
    return message


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.version:
        import gausskl

        print(f"gausskl-dask {gausskl.__version__}")
        return 0
    if args.command is None:
        sys.stderr.write("gausskl-dask: error: a command is required: pairwise or knn "
                         "(see gausskl-dask --help)\n")
        return 2
    show = not args.quiet and sys.stderr.isatty()
    try:
        with client_for(args.scheduler, args.worker_memory) as client:
            run(args, client, show)
    except (ValueError, TypeError) as e:
        # Bad input: the library's ValueError (raised by the task whose chunk holds it, with the
        # global row), a file or name that cannot be read ([load]), usage.
        sys.stderr.write(f"gausskl-dask: error: {_message(e)}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("gausskl-dask: interrupted\n")
        return 130
    except MemoryError:
        sys.stderr.write("gausskl-dask: error: out of memory\n")
        return 1
    except Exception as e:  # noqa: BLE001 - resources, workers lost, I/O: one line, exit 1
        what = type(e).__name__
        text = str(e).strip().splitlines()
        detail = text[0] if text else ""
        if what == "KilledWorker":
            detail = ("a task's workers kept dying (" + detail + "); is --worker-memory or "
                      "--memory-budget too small for the chunks?")
        kind = getattr(e, "kind", None)  # the library's errors (gausskl._errors) have one
        if kind == "memory_budget":
            detail += " (--memory-budget is per task)"
        plain = what == "RuntimeError" or kind is not None  # the message says it all
        sys.stderr.write(f"gausskl-dask: error: {detail if plain else what + ': ' + detail}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
