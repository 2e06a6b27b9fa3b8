"""Files as users have them: .npz files with other arrays (ignored with a note), arrays under
other names (--keys, --p-keys, --q-keys), CSV tables from np.savetxt or a spreadsheet (comma,
tab or space separated, a header row or np.savetxt's '#' header line), and the exact errors
when a file cannot be read without guessing."""

import numpy as np
import pytest

from cli_helpers import Target, assert_close, gaussians, save
import reference_np as ref


def table(g):
    """One row per distribution: the columns of mean, then of the scale, and their names."""
    (kind,) = [k for k in g if k != "mean"]
    names = [f"mean_{i}" for i in range(g["mean"].shape[1])]
    names += [f"{kind}_{i}" for i in range(g[kind].shape[1])]
    return np.hstack([g["mean"], g[kind]]), names


def one_error_line(result):
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("gausskl: error: ") and result.stderr.count("\n") == 1
    return result.stderr[len("gausskl: error: "):-1]


# -- .npz files with other arrays ------------------------------------------------------------------

def test_other_arrays_are_ignored_with_a_note(gausskl, tmp_path, rng):
    g = gaussians(rng, "std", 5, 3)
    path = tmp_path / "p.npz"
    np.savez(path, labels=np.arange(5), **g, weights=rng.normal(size=5))  # int64 labels
    result = gausskl.ok("kl", "--p", path, "-o", tmp_path / "kl.npy")
    assert result.stderr == f"gausskl: note: {path}: ignoring arrays 'labels', 'weights' (not " \
                            "distribution parameters)\n"
    assert_close(np.load(tmp_path / "kl.npy"), ref.kl(g), np.float64)


def test_one_other_array(gausskl, tmp_path, rng):
    path = tmp_path / "p.npz"
    np.savez_compressed(path, **gaussians(rng, "scale_tril", 4, 2), ids=np.arange(4, dtype="i4"))
    result = gausskl.ok("pairwise", "--p", path, "-o", tmp_path / "kl.npy")
    assert result.stderr == f"gausskl: note: {path}: ignoring array 'ids' (not distribution " \
                            "parameters)\n"


def test_a_missing_mean_names_what_the_file_holds(gausskl, tmp_path, rng):
    g = gaussians(rng, "std", 3, 2)
    path = tmp_path / "p.npz"
    np.savez(path, mu=g["mean"], std=g["std"], labels=np.arange(3))
    result = gausskl("kl", "--p", path, "-o", tmp_path / "kl.npy")
    assert one_error_line(result) == (
        "[load] p: no mean array; expected mean and one of std, var, logvar, precision, "
        "scale_tril, covariance, precision_matrix, packed_scale_tril, or cov_factor with "
        f"cov_diag; {path} holds 'mu', 'labels' (not read; --keys mean=mu would read mean from "
        "'mu')")


# -- --keys ----------------------------------------------------------------------------------------

def test_keys_read_arrays_under_other_names(gausskl, tmp_path, rng):
    p, q = gaussians(rng, "std", 4, 3), gaussians(rng, "std", 4, 3)
    np.savez(tmp_path / "p.npz", mu=p["mean"], sigma=p["std"], labels=np.arange(4))
    np.savez(tmp_path / "q.npz", mu=q["mean"], sigma=q["std"])
    result = gausskl.ok("kl", "--p", tmp_path / "p.npz", "--q", tmp_path / "q.npz",
                        "--keys", "mean=mu,std=sigma", "-o", tmp_path / "kl.npy")
    assert "'labels'" in result.stderr and "'mu'" not in result.stderr
    assert_close(np.load(tmp_path / "kl.npy"), ref.kl(p, q), np.float64)


def test_per_side_keys(gausskl, tmp_path, rng):
    p, q = gaussians(rng, "std", 4, 3), gaussians(rng, "logvar", 5, 3)
    np.savez(tmp_path / "p.npz", mu=p["mean"], sigma=p["std"])
    np.savez(tmp_path / "q.npz", loc=q["mean"], logvar=q["logvar"])
    gausskl.ok("pairwise", "--p", tmp_path / "p.npz", "--q", tmp_path / "q.npz",
               "--p-keys", "mean=mu,std=sigma", "--q-keys", "mean=loc", "-o", tmp_path / "kl.npy")
    assert_close(np.load(tmp_path / "kl.npy"), ref.pairwise(p, q), np.float64)
    # --keys applies to both sides; a side's own keys replace it for that side.
    gausskl.ok("pairwise", "--p", tmp_path / "p.npz", "--q", tmp_path / "q.npz",
               "--keys", "mean=mu,std=sigma", "--q-keys", "mean=loc", "-o", tmp_path / "kl2.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "kl2.npy"), np.load(tmp_path / "kl.npy"))


def test_a_key_the_file_lacks(gausskl, tmp_path, rng):
    (path,) = save(tmp_path, "p", gaussians(rng, "std", 3, 2))
    result = gausskl("kl", "--p", path, "--keys", "mean=mu", "-o", tmp_path / "kl.npy")
    assert one_error_line(result).endswith(f"; {path} has no array 'mu' (--keys mean=mu)")


@pytest.mark.parametrize("text, message", [
    ("mean", "'mean' has no '='"),
    ("mean=mu,", "'' has no '='"),
    ("mu=mean", "'mu' is not an array gausskl reads (mean, std, var, logvar, precision, "
                "scale_tril, covariance, precision_matrix, packed_scale_tril, cov_factor, "
                "cov_diag)"),
    ("mean=", "'mean=' names no array"),
    ("mean=a,mean=b", "mean given twice"),
    ("mean=a,std=a", "'a' given for both mean and std"),
])
def test_bad_keys_are_usage_errors(gausskl, tmp_path, text, message):
    result = gausskl("kl", "--p", tmp_path / "missing.npz", "--keys", text, "-o", tmp_path / "o.npy")
    assert one_error_line(result) == (f"--keys: {message}; expected ARRAY=NAME[,ARRAY=NAME...], "
                                      "e.g. mean=mu,std=sigma (see gausskl kl --help)")


# -- CSV tables ------------------------------------------------------------------------------------

@pytest.mark.parametrize("delimiter", [",", "\t", " "])
def test_csv_table_with_a_header_row(gausskl, tmp_path, rng, delimiter):
    g = gaussians(rng, "var", 6, 3)
    values, names = table(g)
    path = tmp_path / "p.csv"
    np.savetxt(path, values, delimiter=delimiter, header=delimiter.join(names), comments="",
               fmt="%.17g")
    gausskl.ok("kl", "--p", path, "-o", tmp_path / "kl.npy")
    assert_close(np.load(tmp_path / "kl.npy"), ref.kl(g), np.float64)


def test_csv_table_as_np_savetxt_writes_it(gausskl, tmp_path, rng):
    # np.savetxt's defaults: space-separated, the header as a '# ' comment line.
    g = gaussians(rng, "std", 6, 2)
    values, names = table(g)
    path = tmp_path / "p.csv"
    np.savetxt(path, values, header=" ".join(names), fmt="%.17g")
    assert path.read_text().startswith("# mean_0 mean_1 std_0 std_1\n")
    gausskl.ok("pairwise", "--p", path, "-o", tmp_path / "kl.npy")
    assert_close(np.load(tmp_path / "kl.npy"), ref.pairwise(g, g), np.float64)


def test_csv_table_of_full_covariances_with_keys(gausskl, tmp_path, rng):
    g = gaussians(rng, "scale_tril", 4, 2)
    names = ["m_0", "m_1"] + [f"scale_tril_{i}_{j}" for i in range(2) for j in range(2)]
    values = np.hstack([g["mean"], g["scale_tril"].reshape(4, 4)])
    path = tmp_path / "p.csv"
    np.savetxt(path, values, delimiter=",", header=",".join(names), comments="", fmt="%.17g")
    gausskl.ok("kl", "--p", path, "--keys", "mean=m", "-o", tmp_path / "kl.npy")
    assert_close(np.load(tmp_path / "kl.npy"), ref.kl(g), np.float64)


def test_one_array_per_csv_with_a_header(gausskl, tmp_path, rng):
    g = gaussians(rng, "std", 5, 3)
    for key in g:
        np.savetxt(tmp_path / f"{key}.csv", g[key], fmt="%.17g", delimiter="\t",
                   header="\t".join(f"{key}_{i}" for i in range(3)), comments="")
    gausskl.ok("kl", "--p", f"mean={tmp_path / 'mean.csv'}", f"std={tmp_path / 'std.csv'}",
               "-o", tmp_path / "kl.npy")
    assert_close(np.load(tmp_path / "kl.npy"), ref.kl(g), np.float64)


def test_csv_errors_name_file_line_and_column(gausskl, tmp_path, rng):
    target = Target(tmp_path / "out", "kl.npy", existing=True)
    cases = {
        "ragged": ("mean_0,std_0\n1,2\n3\n",
                   "line 3 has 1 value, the header on line 1 names 2 columns"),
        "number": ("mean_0,std_0\n1,2\n1.5.3,4\n", "line 3, column 1: '1.5.3' is not a number"),
        "mixed": ("mean_0 std_0\n1 2\n3,4\n",
                  "line 3, column 1: '3,4' holds a comma, but line 1 separates values with "
                  "spaces (one separator per file)"),
        "missing": ("mean_0,mean_2,std_0,std_1,std_2\n1,2,3,4,5\n",
                    "line 1: no column 'mean_1' (mean has 2 of 3 elements)"),
    }
    for name, (text, where) in cases.items():
        path = tmp_path / f"{name}.csv"
        path.write_text(text)
        result = gausskl("kl", "--p", path, "-o", target.path)
        assert one_error_line(result) == f"[read] {path}: {where}", name
        assert target.snapshot() == target.before


def test_csv_table_without_names(gausskl, tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("# written by hand\n1,2\n")
    result = gausskl("kl", "--p", path, "-o", tmp_path / "kl.npy")
    assert one_error_line(result) == (
        f"[load] --p {path}: a table needs a header row naming its columns, e.g. "
        "mean_0,mean_1,std_0,std_1 (or give each array as NAME=FILE)")


def test_a_per_array_csv_header_must_name_that_array(gausskl, tmp_path):
    (tmp_path / "mean.csv").write_text("std_0,std_1\n1,2\n")
    (tmp_path / "std.csv").write_text("1,2\n")
    result = gausskl("kl", "--p", f"mean={tmp_path / 'mean.csv'}", f"std={tmp_path / 'std.csv'}",
                     "-o", tmp_path / "kl.npy")
    assert one_error_line(result) == (
        f"[read] {tmp_path / 'mean.csv'}: line 1, column 1: 'std_0' is not an element of mean "
        f"(the file is given as mean={tmp_path / 'mean.csv'}; name its columns mean_0, mean_1, "
        "...)")


# -- CSV as pandas and NumPy write it --------------------------------------------------------------

def pandas_csv(values, names, index=None, header_names=True, sep=","):
    """The text pandas' DataFrame(values, columns=names).to_csv(sep=sep) writes (written here by
    hand: pandas is not a test dependency): an unnamed index column of row numbers first."""
    index = range(len(values)) if index is None else index
    head = sep + sep.join(names if header_names else map(str, range(values.shape[1])))
    rows = [f"{i}{sep}" + sep.join(f"{v:.17g}" for v in row) for i, row in zip(index, values)]
    return head + "\n" + "\n".join(rows) + "\n"


@pytest.mark.parametrize("name, sep", [("p.csv", ","), ("p.tsv", "\t")])
def test_pandas_row_labels_are_skipped_with_a_note(gausskl, tmp_path, rng, name, sep):
    g = gaussians(rng, "std", 5, 3)
    values, names = table(g)
    path = tmp_path / name
    path.write_text(pandas_csv(values, names, index=[3, 7, 8, 20, 21], sep=sep))  # filtered
    result = gausskl.ok("kl", "--p", path, "-o", tmp_path / "kl.npy")
    assert result.stderr == (f"gausskl: note: {path}: skipping column 1 (unnamed in the header: "
                             "row labels, as pandas' to_csv writes them)\n")
    assert_close(np.load(tmp_path / "kl.npy"), ref.kl(g), np.float64)


def test_other_columns_are_ignored_with_a_note(gausskl, tmp_path, rng):
    g = gaussians(rng, "var", 4, 2)
    values, names = table(g)
    path = tmp_path / "p.csv"
    ids = np.arange(4)[:, None] + 100
    np.savetxt(path, np.hstack([ids, values, ids]), delimiter=",", comments="", fmt="%.17g",
               header=",".join(["item_id", *names, "label"]))
    result = gausskl.ok("pairwise", "--p", path, "-o", tmp_path / "kl.npy")
    assert result.stderr == (f"gausskl: note: {path}: ignoring columns 'item_id', 'label' (not "
                             "distribution parameters)\n")
    assert_close(np.load(tmp_path / "kl.npy"), ref.pairwise(g, g), np.float64)


def test_row_labels_shift_the_column_numbers_of_errors(gausskl, tmp_path):
    path = tmp_path / "p.csv"
    path.write_text(",mean_0,std_0,std_0\n0,1,2,3\n")
    result = gausskl("kl", "--p", path, "-o", tmp_path / "kl.npy")
    assert one_error_line(result) == (f"[read] {path}: line 1, column 4: 'std_0' appears twice "
                                      "(also column 3)")


@pytest.mark.parametrize("header, missing, why", [
    ("mean_0,mean_1,std_0", "std_1", "mean has 2 columns, so std needs 2 columns; it has 1 column"),
    ("mean_0,std_0,std_1", "mean_1", "std has 2 columns, for D = 2; mean has 1 column"),
    ("mean_0,mean_1,mean_2,scale_tril_0_0,scale_tril_0_1,scale_tril_1_0,scale_tril_1_1",
     "scale_tril_0_2",
     "mean has 3 columns, so scale_tril needs 3 x 3 columns; it has 2 x 2 columns"),
    ("mean_0,mean_1,packed_scale_tril_0,packed_scale_tril_1", "packed_scale_tril_2",
     "mean has 2 columns, so packed_scale_tril needs 3 columns; it has 2 columns"),
    ("mean_0,mean_1,cov_factor_0_0,cov_diag_0,cov_diag_1", "cov_factor_1_0",
     "mean has 2 columns, so cov_factor needs 2 x 1 columns; it has 1 x 1 columns"),
])
def test_a_missing_column_is_named(gausskl, tmp_path, header, missing, why):
    path = tmp_path / "p.csv"
    path.write_text(header + "\n" + ",".join(["1"] * len(header.split(","))) + "\n")
    result = gausskl("kl", "--p", path, "-o", tmp_path / "kl.npy")
    assert one_error_line(result) == f"[read] {path}: line 1: no column '{missing}' ({why})"


def test_a_missing_column_under_keys_is_named_as_written(gausskl, tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("mu_0,mu_1,sigma_0\n1,2,3\n")
    result = gausskl("kl", "--p", path, "--keys", "mean=mu,std=sigma", "-o", tmp_path / "kl.npy")
    assert one_error_line(result) == (f"[read] {path}: line 1: no column 'sigma_1' (mean has 2 "
                                      "columns, so std needs 2 columns; it has 1 column)")


def test_hints_take_the_keys_into_account(gausskl, tmp_path, rng):
    (p,) = save(tmp_path, "p", gaussians(rng, "std", 2, 2))
    q = tmp_path / "q.csv"
    q.write_text("loc0,loc1,scale0,scale1\n1,2,3,4\n")
    result = gausskl("kl", "--p", p, "--q", q, "--q-keys", "mean=loc", "-o", tmp_path / "kl.npy")
    assert one_error_line(result).endswith(
        f"; {q} has no column 'loc_0' (--q-keys mean=loc reads mean from columns loc_0, loc_1, "
        "...); its columns 'loc0', 'loc1', 'scale0', 'scale1' are not read")


def test_columns_under_other_names_get_a_keys_hint(gausskl, tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("mu_0,mu_1,sigma_0,sigma_1\n1,2,3,4\n")
    result = gausskl("kl", "--p", path, "-o", tmp_path / "kl.npy")
    assert one_error_line(result).endswith(
        f"; {path} has columns 'mu_0', 'mu_1', 'sigma_0', 'sigma_1' (not read; --keys mean=mu "
        "would read mean from 'mu_0', 'mu_1', ...)")
    path.write_text("mean_0,weights_0\n1,2\n")
    result = gausskl("kl", "--p", path, "-o", tmp_path / "kl.npy")
    assert one_error_line(result).startswith("[load] p: no scale array; ")
    assert one_error_line(result).endswith(
        f"; {path} has columns 'weights_0' (not read; --keys std=weights would read std from "
        "'weights_0', 'weights_1', ...)")


@pytest.mark.parametrize("form", ["pandas", "pandas_unnamed", "savetxt_header", "plain_header"])
def test_one_array_files_with_headers_naming_columns_otherwise(gausskl, tmp_path, rng, form):
    g = gaussians(rng, "logvar", 4, 3)
    args, notes = [], []
    for key in g:
        path = tmp_path / f"{key}.csv"
        if form == "pandas":
            path.write_text(pandas_csv(g[key], ["a", "b", "c"]))
            notes += [f"{path}: skipping column 1 (unnamed in the header: row labels, as pandas' "
                      "to_csv writes them)",
                      f"{path}: skipping the header on line 1 ('a', 'b', 'c' name no array "
                      f"gausskl reads); its columns are read as {key}'s elements, in order"]
        elif form == "pandas_unnamed":  # pd.DataFrame(array).to_csv(): columns 0, 1, 2
            path.write_text(pandas_csv(g[key], None, header_names=False))
            notes += [f"{path}: skipping column 1 (unnamed in the header: row labels, as pandas' "
                      "to_csv writes them)",
                      f"{path}: skipping the header on line 1 ('0', '1', '2' name no array "
                      f"gausskl reads); its columns are read as {key}'s elements, in order"]
        elif form == "savetxt_header":  # a '# a,b,c' comment line: skipped as every comment
            np.savetxt(path, g[key], delimiter=",", header="a,b,c", fmt="%.17g")
        else:
            np.savetxt(path, g[key], delimiter=",", header="a,b,c", comments="", fmt="%.17g")
            notes.append(f"{path}: skipping the header on line 1 ('a', 'b', 'c' name no array "
                         f"gausskl reads); its columns are read as {key}'s elements, in order")
        args.append(f"{key}={path}")
    result = gausskl.ok("kl", "--p", *args, "-o", tmp_path / "kl.npy")
    assert result.stderr == "".join(f"gausskl: note: {n}\n" for n in notes)
    assert_close(np.load(tmp_path / "kl.npy"), ref.kl(g), np.float64)


@pytest.mark.parametrize("name, delimiter", [("p.txt", " "), ("p.tsv", "\t"), ("P.CSV", ",")])
def test_txt_and_tsv_read_as_csv(gausskl, tmp_path, rng, name, delimiter):
    g = gaussians(rng, "std", 3, 2)
    values, names = table(g)
    np.savetxt(tmp_path / name, values, delimiter=delimiter, header=delimiter.join(names),
               fmt="%.17g")  # np.savetxt's '# ' header line
    gausskl.ok("kl", "--p", tmp_path / name, "-o", tmp_path / "kl.npy")
    assert_close(np.load(tmp_path / "kl.npy"), ref.kl(g), np.float64)
    for key in g:
        np.savetxt(tmp_path / f"{key}.TXT", g[key], fmt="%.17g")
    with open(tmp_path / "mean.NPY", "wb") as f:  # np.save would add ".npy" to the name
        np.save(f, g["mean"])
    gausskl.ok("kl", "--p", f"mean={tmp_path / 'mean.NPY'}", f"std={tmp_path / 'std.TXT'}",
               "-o", tmp_path / "kl2.npy")
    assert_close(np.load(tmp_path / "kl2.npy"), ref.kl(g), np.float64)


def test_output_extensions_in_any_case(gausskl, tmp_path, rng):
    (p,) = save(tmp_path, "p", gaussians(rng, "std", 3, 2))
    gausskl.ok("pairwise", "--p", p, "-o", tmp_path / "out.NPY")
    gausskl.ok("knn", "--p", p, "-k", "2", "-o", tmp_path / "nn.Npz")
    gausskl.ok("kl", "--p", p, "-o", tmp_path / "kl.CSV")
    np.testing.assert_array_equal(np.load(tmp_path / "out.NPY").shape, (3, 3))
    assert sorted(np.load(tmp_path / "nn.Npz").files) == ["indices", "kl"]
    assert len((tmp_path / "kl.CSV").read_text().splitlines()) == 3


@pytest.mark.parametrize("command", [["kl"], ["pairwise"], ["knn", "-k", "2"]])
def test_output_to_dev_null(gausskl, tmp_path, rng, command):
    (p,) = save(tmp_path, "p", gaussians(rng, "std", 3, 2))
    before = sorted(tmp_path.iterdir())
    result = gausskl.ok(*command, "--p", p, "-o", "/dev/null")
    assert result.stdout == "" and result.stderr == ""
    assert sorted(tmp_path.iterdir()) == before
