"""Usage and error messages that say the right thing, checked for their exact text: the flag a
command does not take (not CLI11's reversed "not expected" list), -V, the command's own tag,
and a --memory-budget too small in the numbers the user gave."""

import pytest

from cli_helpers import gaussians, save


def stderr_of_usage_error(result):
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    return result.stderr


@pytest.fixture
def p_args(tmp_path, rng):
    return ["--p", *save(tmp_path, "p", gaussians(rng, "std", 4, 3))]


@pytest.mark.parametrize("args, message", [
    (["kl", "--tolerance", "1e-5"],
     "kl has no --tolerance: row-wise results are always exact (see gausskl kl --help)"),
    (["kl", "--tolerance=1e-5"],
     "kl has no --tolerance: row-wise results are always exact (see gausskl kl --help)"),
    (["pairwise", "-k", "3"], "pairwise has no -k (knn takes it) (see gausskl pairwise --help)"),
    (["kl", "--exclude-self"], "kl has no --exclude-self (knn takes it) (see gausskl kl --help)"),
    (["knn", "-k", "2", "--frobnicate"], "knn has no --frobnicate (see gausskl knn --help)"),
    (["pairwise", "extra"], "pairwise takes no argument 'extra' (see gausskl pairwise --help)"),
    # Near misses of the command's own flags: dashes, '_' for '-', case, one or two letters off.
    (["knn", "--k", "2"], "knn has no --k; did you mean -k? (see gausskl knn --help)"),
    (["knn", "-k", "2", "--exclude_self"],
     "knn has no --exclude_self; did you mean --exclude-self? (see gausskl knn --help)"),
    (["pairwise", "--toleranse", "1e-5"],
     "pairwise has no --toleranse; did you mean --tolerance? (see gausskl pairwise --help)"),
    (["kl", "--Dtype", "float32"], "kl has no --Dtype; did you mean --dtype? (see gausskl kl "
                                   "--help)"),
    (["kl", "-divergence", "jeffreys"],
     "kl has no -divergence; did you mean --divergence? (see gausskl kl --help)"),
    (["kl", "--z"], "kl has no --z (see gausskl kl --help)"),  # one letter: no guess
])
def test_a_flag_the_command_does_not_take(gausskl, tmp_path, p_args, args, message):
    out = tmp_path / "out.npz"
    result = gausskl(args[0], *p_args, "-o", out, *args[1:])
    assert stderr_of_usage_error(result) == f"gausskl: error: {message}\n"
    assert not out.exists()


def test_an_unknown_flag_comes_before_a_missing_one(gausskl, tmp_path, rng):
    # --pp is a misspelt --p: saying "--p is required" would send the user the wrong way.
    (path,) = save(tmp_path, "p", gaussians(rng, "std", 4, 3))
    result = gausskl("kl", "--pp", path, "-o", tmp_path / "kl.npy")
    assert stderr_of_usage_error(result) == (
        "gausskl: error: kl has no --pp; did you mean --p? (see gausskl kl --help)\n")
    result = gausskl("kl", "--tolerance", "1e-5")
    assert stderr_of_usage_error(result) == (
        "gausskl: error: kl has no --tolerance: row-wise results are always exact (see gausskl "
        "kl --help)\n")


def test_without_a_command(gausskl):
    assert stderr_of_usage_error(gausskl()) == (
        "gausskl: error: give a command: kl, pairwise, knn, mixture-kl or fit (see gausskl --help)\n")
    assert stderr_of_usage_error(gausskl("--frobnicate")) == (
        "gausskl: error: gausskl has no --frobnicate (see gausskl --help)\n")
    assert stderr_of_usage_error(gausskl("--verison")) == (
        "gausskl: error: gausskl has no --verison; did you mean --version? (see gausskl --help)\n")


def test_dash_v_is_version(gausskl):
    short, long = gausskl.ok("-V"), gausskl.ok("--version")
    assert short.stdout == long.stdout and short.stdout.startswith("gausskl ")


def test_kl_without_q_says_kl(gausskl, tmp_path, rng):
    # kl without --q computes KL(p || N(0, I)); the user ran kl, so the message says [kl].
    g = gaussians(rng, "std", 3, 2)
    g["std"][0, 1] = -0.5
    result = gausskl("kl", "--p", *save(tmp_path, "p", g), "-o", tmp_path / "kl.npy")
    assert result.returncode == 2
    assert result.stderr == ("gausskl: error: [kl] p.scale (std) must be positive and finite, "
                             "found -0.5 at row 0, column 1\n")


def test_a_budget_too_small_says_what_was_asked_taken_and_left(gausskl, tmp_path, rng):
    # 20000 float64 distributions, D = 4: mean and std take 1.2 MiB, the result 156.2 KiB, and
    # the row-wise work 156.2 KiB more than the 1.5 MiB leaves.
    g = {"mean": rng.normal(size=(20000, 4)), "std": rng.uniform(0.5, 2, (20000, 4))}
    out = tmp_path / "kl.npy"
    result = gausskl("kl", "--p", *save(tmp_path, "p", g), "--memory-budget", "1500k",
                     "--threads", 2, "-o", out)
    assert result.returncode == 1
    assert result.stderr == (
        "gausskl: error: [kl] --memory-budget 1.5 MiB is too small: the inputs took 1.2 MiB and "
        "the result 156.2 KiB, which left 93.8 KiB, but the row-wise work takes 156.2 KiB\n")
    assert not out.exists()


def test_the_budget_message_with_q(gausskl, tmp_path, rng):
    g = {"mean": rng.normal(size=(20000, 4)), "std": rng.uniform(0.5, 2, (20000, 4))}
    (path,) = save(tmp_path, "p", g)
    result = gausskl("kl", "--p", path, "--q", path, "--memory-budget", "2700k", "--threads", 2,
                     "-o", tmp_path / "kl.npy")
    assert result.returncode == 1
    assert result.stderr == (
        "gausskl: error: [kl] --memory-budget 2.6 MiB is too small: the inputs took 2.4 MiB and "
        "the result 156.2 KiB, which left 43.8 KiB, but the row-wise work takes 156.2 KiB\n")


# -- the tag: the command's name, whatever --divergence is (README, "Messages") --------------------

@pytest.mark.parametrize("command", [["kl"], ["pairwise"], ["knn", "-k", "2"]])
@pytest.mark.parametrize("kind", [[], ["--divergence", "wasserstein2"], ["--divergence", "renyi",
                                                                         "--alpha", "0.5"]])
def test_the_tag_is_the_commands_name(gausskl, tmp_path, command, kind):
    import numpy as np
    path = tmp_path / "p.npz"
    np.savez(path, mean=np.zeros((3, 2)), covariance=np.tile([[1.0, 2.0], [2.0, 1.0]], (3, 1, 1)))
    out = tmp_path / ("out.npz" if command[0] == "knn" else "out.npy")
    result = gausskl(*command, "--p", path, *kind, "-o", out)
    assert result.returncode == 2
    # wasserstein2 accepts positive semi-definite covariances; the others need definite ones
    definite = "semi-definite" if "wasserstein2" in kind else "definite"
    assert result.stderr.startswith(f"gausskl: error: [{command[0]}] p.scale (covariance) is not "
                                    f"positive {definite} at distribution 0"), result.stderr
    assert result.stderr.count("--jitter EPS does that") == 1


def test_knn_options_are_tagged_knn(gausskl, tmp_path, p_args):
    result = gausskl("knn", *p_args, "-k", "10", "-o", tmp_path / "nn.npz")
    assert result.stderr == "gausskl: error: [knn] k = 10 must be between 1 and M = 4\n"
    result = gausskl("knn", *p_args, "--q", *p_args[1:], "-k", "1", "--exclude-self",
                     "-o", tmp_path / "nn.npz")
    assert result.stderr == "gausskl: error: [knn] --exclude-self needs q = p (leave out --q)\n"
