#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets: small files made by NumPy itself, covering the
variants the readers accept (and a few they reject), so that fuzzing starts from real files.

Run from anywhere; writes fuzz/corpus/{npy,npz,csv}/. Output is deterministic. One seed is not
NumPy's: npz/gausskl_knn_zip64.npz is what `gausskl knn ... -o out.npz` writes (Zip64 records).

Also writes the hand-made reproducers in fuzz/regressions/ (crash inputs found by fuzzing are
copied there as they are).
"""
import io
import pathlib
import struct
import zipfile
import zlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent / "corpus"
REGRESSIONS = HERE.parent / "regressions"
RNG = np.random.default_rng(6)


def arrays():
    """name -> array: the shapes, dtypes and layouts .npy files come in."""
    g = RNG.normal(size=(3, 4))
    return {
        "f8_c": g,
        "f4_c": g.astype("<f4"),
        "f8_big_endian": g.astype(">f8"),
        "f4_big_endian": g.astype(">f4"),
        "f8_fortran": np.asfortranarray(g),
        "f4_fortran_3d": np.asfortranarray(RNG.normal(size=(2, 3, 2)).astype("<f4")),
        "f8_1d": g[0],
        "f8_0d": np.array(2.5),
        "f8_empty": np.zeros((0, 3)),
        "f8_nonfinite": np.array([np.nan, np.inf, -np.inf, -0.0, 5e-324]),
        "i8_rejected": np.arange(6, dtype="<i8").reshape(2, 3),
        "structured_rejected": np.zeros(2, dtype=[("a", "<f4"), ("b", "<f8")]),
    }


def npy_bytes(array, version=None):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=version)
    return buffer.getvalue()


def npz_bytes(save, **named):
    buffer = io.BytesIO()
    save(buffer, **named)
    return buffer.getvalue()


def main():
    for folder in ("npy", "npz", "csv"):
        (HERE / folder).mkdir(parents=True, exist_ok=True)

    a = arrays()
    for name, array in a.items():
        (HERE / "npy" / f"{name}.npy").write_bytes(npy_bytes(array))
    (HERE / "npy" / "f8_v2.npy").write_bytes(npy_bytes(a["f8_c"], (2, 0)))
    (HERE / "npy" / "f8_v3.npy").write_bytes(npy_bytes(a["f8_c"], (3, 0)))

    diag = {"mean": a["f8_c"], "std": np.abs(a["f4_c"]) + np.float32(0.5)}
    full = {"mean": RNG.normal(size=(2, 2)), "scale_tril": np.tile(np.eye(2), (2, 1, 1))}
    npz = HERE / "npz"
    (npz / "savez.npz").write_bytes(npz_bytes(np.savez, **diag))
    (npz / "savez_compressed.npz").write_bytes(npz_bytes(np.savez_compressed, **diag))
    (npz / "savez_full.npz").write_bytes(npz_bytes(np.savez, **full))
    # Zeros deflate about 1000:1, the ratio a zip bomb lives on.
    zeros = {"mean": np.zeros((64, 16)), "std": np.ones((64, 16), dtype="<f4")}
    (npz / "savez_compressed_zeros.npz").write_bytes(npz_bytes(np.savez_compressed, **zeros))
    (npz / "savez_empty.npz").write_bytes(npz_bytes(np.savez))
    # Files as users have them: other arrays beside the distribution's, int64 among them.
    extra = dict(diag, labels=np.arange(3, dtype="<i8"), weights=RNG.normal(size=3))
    (npz / "savez_extra_arrays.npz").write_bytes(npz_bytes(np.savez, **extra))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr(zipfile.ZipInfo("mean.npy", (1980, 1, 1, 0, 0, 0)), npy_bytes(a["f8_1d"]))
        z.comment = b"an archive comment"
    (npz / "zipfile_comment.npz").write_bytes(buffer.getvalue())

    csv = HERE / "csv"
    for name, array, fmt in [
        ("table", a["f8_c"], "%.17g"),
        ("exponents", a["f8_c"] * 1e-300, "%.6e"),
        ("column", a["f8_1d"][:, None], "%.3f"),
        ("row", a["f8_1d"][None, :], "%g"),
    ]:
        buffer = io.BytesIO()
        np.savetxt(buffer, array, delimiter=",", fmt=fmt, header="written by np.savetxt")
        (csv / f"{name}.csv").write_bytes(buffer.getvalue())
    # Tables with named columns, in the separators np.savetxt and spreadsheets write.
    values = np.hstack([a["f8_c"][:, :2], np.abs(a["f8_c"][:, 2:])])
    names = ["mean_0", "mean_1", "std_0", "std_1"]
    for name, delimiter, comments in [
        ("header_comma", ",", ""),
        ("header_tab", "\t", ""),
        ("savetxt_default", " ", "# "),  # np.savetxt's defaults: spaces, the header a comment
    ]:
        buffer = io.BytesIO()
        np.savetxt(buffer, values, delimiter=delimiter, header=delimiter.join(names),
                   comments=comments, fmt="%.6g")
        (csv / f"{name}.csv").write_bytes(buffer.getvalue())
    (csv / "header_matrix.csv").write_bytes(
        b"mu_0,mu_1,scale_tril_0_0,scale_tril_1_1,scale_tril_1_0,scale_tril_0_1\n"
        b"0.5,-1,1,2,0.25,0\n1,1,1,1,0,0\n")
    # pandas' DataFrame.to_csv: an unnamed index column first (row labels, skipped), named
    # columns or, for a frame made from an array, 0, 1, ...; other columns beside the
    # distribution's (skipped with a note); a column missing (the error names it).
    rows = "\n".join(f"{i}," + ",".join(f"{v:.6g}" for v in row) for i, row in enumerate(values))
    (csv / "pandas_index.csv").write_bytes((",mean_0,mean_1,std_0,std_1\n" + rows + "\n").encode())
    (csv / "pandas_unnamed_columns.csv").write_bytes((",0,1,2,3\n" + rows + "\n").encode())
    tabbed = (",mean_0,mean_1,std_0,std_1\n" + rows + "\n").replace(",", "\t")
    (csv / "pandas_index.tsv").write_bytes(tabbed.encode())  # to_csv(sep="\t")
    (csv / "pandas_filtered_index.csv").write_bytes(
        b",mu_0,std_0,item_id\n3,0.5,1,17\n8,-1,2,21\n")
    (csv / "extra_columns.csv").write_bytes(b"item_id,mean_0,std_0,label\n1,0.5,1,0\n2,-1,2,1\n")
    (csv / "missing_column.csv").write_bytes(b"mean_0,mean_1,std_0\n1,2,3\n")
    # A one-array file whose header names its columns otherwise: np.savetxt(header="a,b,c").
    buffer = io.BytesIO()
    np.savetxt(buffer, values[:, :3], delimiter=",", header="a,b,c", comments="", fmt="%.6g")
    (csv / "header_other_names.csv").write_bytes(buffer.getvalue())
    # .tsv and .txt are read as CSV: their seeds are tab- and space-separated tables.
    buffer = io.BytesIO()
    np.savetxt(buffer, values, delimiter="\t", header="\t".join(names), comments="", fmt="%.6g")
    (csv / "table.tsv").write_bytes(buffer.getvalue())
    buffer = io.BytesIO()
    np.savetxt(buffer, values, fmt="%.18e")  # np.savetxt's defaults exactly, as st.txt has it
    (csv / "savetxt.txt").write_bytes(buffer.getvalue())
    (csv / "mixed_rejected.csv").write_bytes(b"1,2\n3 4\n")
    (csv / "spacing_crlf.csv").write_bytes(
        b"# comment\r\n 0.5 ,\t1.5\r\n\r\n+2.5,-3.5e+1\r\nnan,inf\r\n"
    )


def deflate_size_lie():
    """A deflate entry of 100 KB of random bytes behind a .npy header claiming 100 MB: within
    deflate's 1032:1, so only inflating reveals the lie. The reader used to allocate the 100 MB
    first (over the fuzzers' -malloc_limit_mb); now it inflates once to check the claim."""
    data = np.random.default_rng(7).bytes(100_000)
    claimed = 100_000_000
    image = npy_bytes(np.zeros(1))
    header = image[: len(image) - 8].replace(b"(1,)", f"({claimed // 8},)".encode())
    header = header[:8] + struct.pack("<H", len(header) - 10) + header[10:]
    image = header + data
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = packer.compress(image) + packer.flush()
    name = b"mean.npy"
    fields = struct.pack("<HHHHHIIIHH", 20, 0, 8, 0, 0, zlib.crc32(image), len(packed),
                         len(header) + claimed, len(name), 0)
    local = b"PK\x03\x04" + fields + name + packed
    central = b"PK\x01\x02" + struct.pack("<H", 20) + fields + bytes(14) + name
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local), 0)
    (REGRESSIONS / "npz").mkdir(parents=True, exist_ok=True)
    (REGRESSIONS / "npz" / "deflate_size_lie.npz").write_bytes(local + central + end)


if __name__ == "__main__":
    main()
    deflate_size_lie()
