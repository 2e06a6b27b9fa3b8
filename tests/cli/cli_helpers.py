"""Random Gaussians, their input files, and reading the CLI's outputs."""

import io

import numpy as np

DIAG_PARAMS = ("std", "var", "logvar", "precision")
FULL_PARAMS = ("scale_tril", "covariance", "precision_matrix", "packed_scale_tril")
# One representative per family, for the family x family grids.
FAMILIES = ("std", "scale_tril", "lowrank")


def gaussians(rng, kind, n, d, dtype=np.float64, rank=2, log_diagonal=False):
    """n Gaussians in dimension d; kind is a diagonal or full parameter name, or 'lowrank'.

    packed_scale_tril is L's lower triangle row by row (np.tril_indices order, as torch's), with
    log_diagonal its diagonal as log L_rr.
    """
    mean = rng.normal(0.0, 2.0, (n, d))
    if kind in DIAG_PARAMS:
        var = rng.uniform(0.5, 2.0, (n, d)) ** 2
        scale = {"std": np.sqrt(var), "var": var, "logvar": np.log(var), "precision": 1 / var}
        g = {"mean": mean, kind: scale[kind]}
    elif kind in FULL_PARAMS:
        L = np.tril(rng.normal(0.0, 0.3, (n, d, d)), -1)
        L += np.einsum("nd,de->nde", rng.uniform(0.5, 1.5, (n, d)), np.eye(d))
        if kind == "packed_scale_tril":
            if log_diagonal:
                L[:, np.arange(d), np.arange(d)] = np.log(np.diagonal(L, axis1=1, axis2=2))
            rows, cols = np.tril_indices(d)
            g = {"mean": mean, kind: L[:, rows, cols]}
        else:
            g = {"mean": mean, kind: L if kind == "scale_tril" else _matrix(L, kind)}
    else:
        assert kind == "lowrank"
        g = {
            "mean": mean,
            "cov_factor": rng.normal(0.0, 0.5, (n, d, rank)),
            "cov_diag": rng.uniform(0.5, 1.5, (n, d)),
        }
    return {k: v.astype(dtype) for k, v in g.items()}


def _matrix(L, kind):
    m = L @ L.transpose(0, 2, 1)
    if kind == "precision_matrix":
        m = np.linalg.inv(m)
    return (m + m.transpose(0, 2, 1)) / 2  # exactly symmetric, as the CLI checks


def save(folder, name, g, fmt="npz"):
    """Writes g under folder in the given format; returns the SPEC arguments naming it.

    fmt: npz, npz_compressed, or per array: npy, csv, fortran (.npy in Fortran order),
    bigendian (.npy as '>f8' / '>f4').
    """
    folder.mkdir(parents=True, exist_ok=True)
    if fmt in ("npz", "npz_compressed"):
        path = folder / f"{name}.npz"
        (np.savez_compressed if fmt == "npz_compressed" else np.savez)(path, **g)
        return [str(path)]
    args = []
    for key, a in g.items():
        path = folder / f"{name}_{key}.{'csv' if fmt == 'csv' else 'npy'}"
        if fmt == "csv":
            np.savetxt(path, a, delimiter=",", fmt="%.17g")
        elif fmt == "fortran":
            np.save(path, np.asfortranarray(a))
        elif fmt == "bigendian":
            np.save(path, a.astype(a.dtype.newbyteorder(">")))
        else:
            assert fmt == "npy"
            np.save(path, a)
        args.append(f"{key}={path}")
    return args


def assert_close(got, ref, dtype):
    """|got - ref| <= tol * (|ref| + 1): tol 1e-6 for float32 results, 1e-10 for float64."""
    tol = 1e-6 if np.dtype(dtype) == np.float32 else 1e-10
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == ref.shape, f"shape {got.shape}, expected {ref.shape}"
    err = np.abs(got - ref) / (np.abs(ref) + 1)
    worst = np.unravel_index(np.argmax(err), err.shape) if err.size else ()
    assert np.all(err <= tol), (
        f"max scaled error {err.max():.3g} > {tol:g} at {worst}: got {got[worst]!r}, "
        f"expected {ref[worst]!r}"
    )


def parse_csv(text):
    """A 2-D float64 table from CSV text (a single column or row stays 2-D)."""
    return np.loadtxt(io.StringIO(text), delimiter=",", ndmin=2, dtype=np.float64)


def parse_knn_csv(text, n, k):
    """(indices, kl) from the knn CSV layout: header `p,rank,q,kl`, rows in (p, rank) order."""
    lines = text.splitlines()
    assert lines[0] == "p,rank,q,kl", f"header {lines[0]!r}"
    table = parse_csv("\n".join(lines[1:]))
    assert table.shape == (n * k, 4), table.shape
    np.testing.assert_array_equal(table[:, 0], np.repeat(np.arange(n), k))
    np.testing.assert_array_equal(table[:, 1], np.tile(np.arange(k), n))
    return table[:, 2].astype(np.int64).reshape(n, k), table[:, 3].reshape(n, k)


def run_to_npy(gausskl, tmp_path, command, p, q=None):
    """Runs `gausskl COMMAND --p P [--q Q] -o out.npy` on the batches; returns the result."""
    out = tmp_path / "out.npy"
    args = [command, "--p", *save(tmp_path, "p", p)]
    if q is not None:
        args += ["--q", *save(tmp_path, "q", q)]
    gausskl.ok(*args, "-o", out)
    return np.load(out)


class Target:
    """An output path in a folder of its own, optionally with an earlier result in it, and the
    folder's contents as they were, to check that a failed run changed nothing."""

    def __init__(self, folder, name, existing=True):
        folder.mkdir()
        self.path = folder / name
        if existing:
            self.path.write_bytes(b"\x93NUMPY an earlier result, to be left alone\n")
        self.before = self.snapshot()

    def snapshot(self):
        return {f.name: f.read_bytes() for f in self.path.parent.iterdir()}
