#!/usr/bin/env python3
"""Writes the small NumPy files the io tests read (run from anywhere; writes next to itself).

Every float array holds `grid(shape)`: element k in C order is k + 0.5, so a test can compute
the expected values from the index alone. Archives hold `mean = grid(...)` and
`std = grid(...) + 0.5` (element k is k + 1) so the two entries cannot be mistaken for each other.
"""
import io
import pathlib
import warnings
import zipfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent


def grid(shape, dtype="<f8"):
    return (np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) + 0.5).astype(dtype)


def npy(name, array, version=None):
    with open(HERE / name, "wb") as f:
        np.lib.format.write_array(f, array, version=version)


def npy_bytes(array):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array)
    return buffer.getvalue()


def entry(name):
    # A fixed timestamp (as np.savez uses) so that rerunning the script gives identical files.
    return zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))


def main():
    npy("f8_c.npy", grid((3, 4), "<f8"))
    npy("f4_c.npy", grid((3, 4), "<f4"))
    npy("f8_big_endian.npy", grid((3, 4), ">f8"))
    npy("f4_big_endian.npy", grid((3, 4), ">f4"))
    npy("f8_fortran.npy", np.asfortranarray(grid((3, 4), "<f8")))
    npy("f4_big_endian_fortran_3d.npy", np.asfortranarray(grid((2, 3, 4), ">f4")))
    npy("f8_1d.npy", grid((5,), "<f8"))
    npy("f8_0d.npy", np.array(2.5))
    npy("f8_empty.npy", np.zeros((0, 3)))
    npy("i8.npy", np.arange(6, dtype="<i8").reshape(2, 3))
    npy("f8_v2.npy", grid((3, 4), "<f8"), version=(2, 0))
    npy("f8_v3.npy", grid((3, 4), "<f8"), version=(3, 0))

    mean = grid((3, 4), "<f8")
    std = grid((3, 4), "<f4") + np.float32(0.5)
    np.savez(HERE / "savez.npz", mean=mean, std=std)
    np.savez_compressed(HERE / "savez_compressed.npz", mean=mean, std=std, big=grid((64, 32)))

    with zipfile.ZipFile(HERE / "not_npy.npz", "w") as z:
        z.writestr(entry("mean.npy"), npy_bytes(mean))
        z.writestr(entry("notes.txt"), "not an array\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name we want
        with zipfile.ZipFile(HERE / "duplicate.npz", "w") as z:
            z.writestr(entry("mean.npy"), npy_bytes(mean))
            z.writestr(entry("mean.npy"), npy_bytes(mean))

    # grid((3, 4)) written with the spellings a CSV reader meets: spaces, a tab, an exponent,
    # a comment, a blank line and Windows line endings.
    rows = [
        "# mean, one row per distribution",
        "0.5,1.5,2.5,3.5",
        " 4.5 ,\t5.5, 6.5,7.5",
        "",
        "8.5,9.5,1.05e1,11.5",
    ]
    (HERE / "table.csv").write_bytes(("\r\n".join(rows) + "\r\n").encode())


if __name__ == "__main__":
    main()
