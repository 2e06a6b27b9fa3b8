"""--help and --version."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("command", ["kl", "pairwise", "knn"])
def test_command_help_shows_an_example(gausskl, command):
    out = gausskl.ok(command, "--help").stdout
    assert re.search(r"(?i)example", out), out
    assert re.search(rf"gausskl {command} .*--p ", out), out


def test_help_lists_the_commands(gausskl):
    out = gausskl.ok("--help").stdout
    for command in ("kl", "pairwise", "knn"):
        assert re.search(rf"\b{command}\b", out), out


def test_version(gausskl):
    project = (REPO / "CMakeLists.txt").read_text()
    version = re.search(r"project\(gausskl VERSION ([0-9.]+)", project).group(1)
    out = gausskl.ok("--version").stdout
    assert version in out, out


@pytest.mark.parametrize("command", ["kl", "pairwise", "knn"])
def test_command_help_documents_the_file_forms(gausskl, command):
    out = gausskl.ok(command, "--help").stdout
    for text in ("--keys", "--p-keys", "--q-keys", "mean=mu,std=sigma", "FILE.csv", "mean_0",
                 "NAME_i_j", "tab", "not read"):
        assert text in out, text


def test_short_version_flag_is_listed(gausskl):
    assert "-V,--version" in gausskl.ok("--help").stdout
