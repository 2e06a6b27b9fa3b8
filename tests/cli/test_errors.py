"""Bad input and usage: exit 2, one line on stderr naming the array, index and rule, and the
output folder exactly as it was (an existing output untouched, no temporary files left)."""

import re

import numpy as np
import pytest

from cli_helpers import Target, gaussians, save


def assert_rejected(result, target, *patterns):
    """Exit 2, stderr one line "gausskl: error: ..." matching every regex, folder unchanged."""
    err = result.stderr
    assert result.returncode == 2, f"exit {result.returncode}, stderr:\n{err}"
    assert err.startswith("gausskl: error: ") and err.count("\n") == 1 and err.endswith("\n"), (
        f"stderr is not one 'gausskl: error: ' line:\n{err}"
    )
    for pattern in patterns:
        assert re.search(pattern, err), f"stderr does not match {pattern!r}:\n{err}"
    assert target.snapshot() == target.before, "the output folder changed"


@pytest.fixture
def target(tmp_path):
    return Target(tmp_path / "out", "result.npy")


@pytest.fixture
def q_args(tmp_path, rng):
    return ["--q", *save(tmp_path, "q", gaussians(rng, "std", 3, 4))]


OUTPUT_NAMES = {"kl": "result.npy", "pairwise": "result.npy", "knn": "result.npz"}


@pytest.mark.parametrize("existing", [True, False])
@pytest.mark.parametrize("command", ["kl", "pairwise", "knn"])
def test_negative_std(gausskl, tmp_path, rng, q_args, command, existing):
    p = gaussians(rng, "std", 3, 4)
    p["std"][1, 2] = -0.5
    target = Target(tmp_path / "out", OUTPUT_NAMES[command], existing)
    k = ["-k", 2] if command == "knn" else []
    result = gausskl(command, "--p", *save(tmp_path, "p", p), *q_args, *k, "-o", target.path)
    assert_rejected(result, target, r"p\.(std|scale \(std\))", r"row 1, column 2", r"-0\.5",
                    r"positive")


def test_nan_mean(gausskl, tmp_path, rng, target, q_args):
    p = gaussians(rng, "std", 3, 4)
    p["mean"][2, 0] = np.nan
    result = gausskl("kl", "--p", *save(tmp_path, "p", p), *q_args, "-o", target.path)
    assert_rejected(result, target, r"p\.mean", r"row 2, column 0", r"(?i)nan", r"finite")


def test_covariance_not_positive_definite(gausskl, tmp_path, rng, target):
    p = gaussians(rng, "covariance", 3, 2)
    q = gaussians(rng, "covariance", 3, 2)
    q["covariance"][1] = [[1.0, 2.0], [2.0, 1.0]]  # symmetric, eigenvalues 3 and -1
    result = gausskl("kl", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q),
                     "-o", target.path)
    assert_rejected(result, target, r"q\.(covariance|scale \(covariance\))",
                    r"(distribution|row|index) 1\b", r"(?i)positive.definite")


def test_scale_tril_with_upper_entry(gausskl, tmp_path, rng, target, q_args):
    p = gaussians(rng, "scale_tril", 3, 4)
    p["scale_tril"][0, 0, 1] = 0.25
    result = gausskl("kl", "--p", *save(tmp_path, "p", p), *q_args, "-o", target.path)
    assert_rejected(result, target, r"p\.(scale_tril|scale \(scale_tril\))",
                    r"distribution 0\b", r"row 0, column 1", r"(?i)lower.triangular")


def test_mismatched_d(gausskl, tmp_path, rng, target):
    p = gaussians(rng, "std", 3, 3)
    q = gaussians(rng, "std", 3, 4)
    result = gausskl("pairwise", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q),
                     "-o", target.path)
    assert_rejected(result, target, r"\bD\b", r"\b3\b", r"\b4\b")


def test_mismatched_n_between_p_and_q(gausskl, tmp_path, rng, target):
    p = gaussians(rng, "std", 3, 4)
    q = gaussians(rng, "std", 5, 4)
    result = gausskl("kl", "--p", *save(tmp_path, "p", p), "--q", *save(tmp_path, "q", q),
                     "-o", target.path)
    assert_rejected(result, target, r"\bN\b", r"\b3\b", r"\b5\b")


def test_mismatched_n_within_a_spec(gausskl, tmp_path, rng, target, q_args):
    p = gaussians(rng, "std", 3, 4)
    p["std"] = gaussians(rng, "std", 5, 4)["std"]
    result = gausskl("kl", "--p", *save(tmp_path, "p", p, "npy"), *q_args, "-o", target.path)
    assert_rejected(result, target, r"p\.(std|scale)", r"\b3\b", r"\b5\b")


def test_missing_mean(gausskl, tmp_path, rng, target):
    p = gaussians(rng, "std", 3, 4)
    del p["mean"]
    result = gausskl("kl", "--p", *save(tmp_path, "p", p), "-o", target.path)
    assert_rejected(result, target, r"\bp\b", r"mean")


def test_two_scale_descriptions(gausskl, tmp_path, rng, target):
    p = gaussians(rng, "std", 3, 4)
    p["var"] = p["std"] ** 2
    result = gausskl("kl", "--p", *save(tmp_path, "p", p), "-o", target.path)
    assert_rejected(result, target, r"\bstd\b", r"\bvar\b")


def test_cov_factor_without_cov_diag(gausskl, tmp_path, rng, target):
    p = gaussians(rng, "lowrank", 3, 4)
    del p["cov_diag"]
    result = gausskl("kl", "--p", *save(tmp_path, "p", p), "-o", target.path)
    assert_rejected(result, target, r"\bp\b", r"cov_diag")


def test_unknown_array_name(gausskl, tmp_path, rng, target):
    # An .npz's other arrays are ignored (test_user_files.py); a NAME=FILE item names one.
    p = gaussians(rng, "std", 3, 4)
    p["sigma"] = p["std"]
    result = gausskl("kl", "--p", *save(tmp_path, "p", p, "npy"), "-o", target.path)
    assert_rejected(result, target, r"unknown array 'sigma'")


def test_truncated_npy(gausskl, tmp_path, rng, target):
    args = save(tmp_path, "p", gaussians(rng, "std", 3, 4), "npy")
    path = tmp_path / "p_std.npy"
    path.write_bytes(path.read_bytes()[:-7])
    result = gausskl("kl", "--p", *args, "-o", target.path)
    assert_rejected(result, target, r"p_std\.npy|p\.std")


def test_truncated_npz(gausskl, tmp_path, rng, target):
    (path,) = save(tmp_path, "p", gaussians(rng, "std", 3, 4), "npz_compressed")
    data = (tmp_path / "p.npz").read_bytes()
    (tmp_path / "p.npz").write_bytes(data[: len(data) // 2])
    result = gausskl("kl", "--p", path, "-o", target.path)
    assert_rejected(result, target, r"p\.npz")


def test_text_file_named_npz(gausskl, tmp_path, target):
    path = tmp_path / "p.npz"
    path.write_text("mean,std\n1,2\n")
    result = gausskl("kl", "--p", path, "-o", target.path)
    assert_rejected(result, target, r"p\.npz")


def test_int64_array(gausskl, tmp_path, rng, target):
    p = gaussians(rng, "std", 3, 4)
    p["std"] = np.ones((3, 4), dtype=np.int64)
    result = gausskl("kl", "--p", *save(tmp_path, "p", p, "npy"), "-o", target.path)
    assert_rejected(result, target, r"p_std\.npy|p\.std|\bstd\b", r"int64|<i8")


def test_nonexistent_input(gausskl, tmp_path, target):
    result = gausskl("kl", "--p", tmp_path / "absent.npz", "-o", target.path)
    assert_rejected(result, target, r"absent\.npz")


def test_unknown_output_extension(gausskl, tmp_path, rng):
    target = Target(tmp_path / "out", "result.txt")
    result = gausskl("kl", "--p", *save(tmp_path, "p", gaussians(rng, "std", 3, 4)),
                     "-o", target.path)
    assert_rejected(result, target, r"\.txt")


def test_knn_npy_output_is_not_allowed(gausskl, tmp_path, rng, target):
    result = gausskl("knn", "--p", *save(tmp_path, "p", gaussians(rng, "std", 3, 4)), "-k", 1,
                     "-o", target.path)
    assert_rejected(result, target, r"\.npy")


def test_bad_dtype(gausskl, tmp_path, rng, target):
    result = gausskl("kl", "--p", *save(tmp_path, "p", gaussians(rng, "std", 3, 4)),
                     "--dtype", "float16", "-o", target.path)
    assert_rejected(result, target, r"float16")


def test_missing_output(gausskl, tmp_path, rng, target):
    result = gausskl("kl", "--p", *save(tmp_path, "p", gaussians(rng, "std", 3, 4)))
    assert_rejected(result, target, r"-o|--output")


def test_unknown_option(gausskl, tmp_path, rng, target):
    result = gausskl("kl", "--p", *save(tmp_path, "p", gaussians(rng, "std", 3, 4)),
                     "--frobnicate", "-o", target.path)
    assert_rejected(result, target, r"--frobnicate")


@pytest.mark.parametrize("k, flags", [(6, []), (5, ["--exclude-self"]), (0, [])])
def test_knn_k_out_of_range(gausskl, tmp_path, rng, k, flags):
    # M = 5 candidates (4 once each row's own is excluded).
    target = Target(tmp_path / "out", "result.npz")
    result = gausskl("knn", "--p", *save(tmp_path, "p", gaussians(rng, "std", 5, 4)),
                     "-k", k, "-o", target.path, *flags)
    assert_rejected(result, target, r"\bk\b|\bK\b", rf"\b{k}\b")


def test_error_with_stdout_output_prints_nothing(gausskl, tmp_path, rng, target):
    p = gaussians(rng, "std", 3, 4)
    p["std"][0, 0] = 0.0
    result = gausskl("pairwise", "--p", *save(tmp_path, "p", p), "-o", "-")
    assert_rejected(result, target, r"p\.(std|scale \(std\))", r"row 0, column 0")
    assert result.stdout == ""


@pytest.mark.parametrize("existing", [True, False])
@pytest.mark.parametrize("command", ["kl", "pairwise", "knn"])
def test_log_diagonal_without_packed_input(gausskl, tmp_path, rng, q_args, command, existing):
    p = gaussians(rng, "scale_tril", 3, 4)
    target = Target(tmp_path / "out", OUTPUT_NAMES[command], existing)
    k = ["-k", 2] if command == "knn" else []
    result = gausskl(command, "--p", *save(tmp_path, "p", p), *q_args, *k, "--log-diagonal",
                     "-o", target.path)
    assert_rejected(result, target, r"--log-diagonal", r"packed_scale_tril",
                    r"neither p nor q has")


def test_log_diagonal_without_packed_input_or_q(gausskl, tmp_path, rng, target):
    p = gaussians(rng, "std", 3, 4)
    result = gausskl("kl", "--p", *save(tmp_path, "p", p), "--log-diagonal", "-o", target.path)
    assert_rejected(result, target, r"--log-diagonal", r"p does not have")


def test_scale_tril_and_packed_scale_tril(gausskl, tmp_path, rng, target):
    p = gaussians(rng, "packed_scale_tril", 3, 4)
    p["scale_tril"] = gaussians(rng, "scale_tril", 3, 4)["scale_tril"]
    result = gausskl("kl", "--p", *save(tmp_path, "p", p), "-o", target.path)
    assert_rejected(result, target, r"two scale descriptions", r"\bpacked_scale_tril\b",
                    r"\bscale_tril\b")


@pytest.mark.parametrize("fmt", ["npz", "npy"])
def test_packed_length_is_not_d_d_plus_1_over_2(gausskl, tmp_path, rng, target, fmt):
    p = gaussians(rng, "packed_scale_tril", 3, 3)
    p["packed_scale_tril"] = p["packed_scale_tril"][:, :5]  # K = 5, D = 3 needs 6
    result = gausskl("kl", "--p", *save(tmp_path, "p", p, fmt), "-o", target.path)
    assert_rejected(result, target, r"p\.scale \(packed_scale_tril\)", r"shape \[3, 5\]",
                    r"expected \[3, 6\]", r"D \(D \+ 1\) / 2", r"D = 3")


def test_packed_rank_does_not_match_mean(gausskl, tmp_path, rng, target):
    p = gaussians(rng, "packed_scale_tril", 3, 3)
    p["mean"] = p["mean"][0]  # one distribution: packed_scale_tril must then be [K]
    result = gausskl("kl", "--p", *save(tmp_path, "p", p), "-o", target.path)
    assert_rejected(result, target, r"p\.packed_scale_tril", r"\[3, 6\]", r"1-D")


def test_packed_negative_diagonal_suggests_log_diagonal(gausskl, tmp_path, rng, target):
    p = gaussians(rng, "packed_scale_tril", 3, 3)
    p["packed_scale_tril"][1, 2] = -0.5  # L[1, 1]
    result = gausskl("pairwise", "--p", *save(tmp_path, "p", p), "-o", target.path)
    assert_rejected(result, target, r"p\.scale \(packed_scale_tril\)", r"positive diagonal",
                    r"-0\.5", r"row 1, column 2 \(L\[1, 1\]\)", r"pass --log-diagonal")


def test_packed_log_diagonal_out_of_range(gausskl, tmp_path, rng, target, q_args):
    p = gaussians(rng, "packed_scale_tril", 3, 4, log_diagonal=True)
    p["packed_scale_tril"][2, 9] = 400.0  # log L[3, 3]: exp(800) is past 1e300
    result = gausskl("kl", "--p", *save(tmp_path, "p", p), *q_args, "--log-diagonal",
                     "-o", target.path)
    assert_rejected(result, target, r"p\.scale \(packed_scale_tril\)", r"log L_rr",
                    r"exp\(2 x\) in \[1e-300, 1e300\]", r"\b400\b", r"row 2, column 9 \(L\[3, 3\]\)")


def test_packed_nan(gausskl, tmp_path, rng, target):
    p = gaussians(rng, "packed_scale_tril", 3, 4, log_diagonal=True)
    p["packed_scale_tril"][0, 4] = np.nan  # L[2, 1]
    result = gausskl("knn", "--p", *save(tmp_path, "p", p), "-k", 1, "--log-diagonal",
                     "-o", target.path.with_suffix(".npz"))
    assert_rejected(result, target, r"p\.scale \(packed_scale_tril\)", r"(?i)nan", r"finite",
                    r"row 0, column 4 \(L\[2, 1\]\)")
