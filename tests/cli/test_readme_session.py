"""The README's example session, run as typed: each `$ ` command through bash in an empty
directory, its output (stdout and stderr, as a terminal shows them) compared with the lines the
README shows after it.

`gausskl` is the CLI under test and `python3` this interpreter (which has NumPy), as they are
after the README's set-up (`source .venv/bin/activate`).
"""

import os
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

END = "@@gausskl-readme-end@@"


def readme_session():
    """[(command, expected output lines)] of the first ```console block under ## Example session."""
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Example session") :]
    block = section[section.index("```console\n") + len("```console\n") :]
    lines = block[: block.index("```")].splitlines()
    steps = []
    for line in lines:
        if line.startswith("$ "):
            steps.append([line[2:], []])
        elif steps and not complete(steps[-1][0]):
            steps[-1][0] += "\n" + line  # a quoted argument spanning lines
        else:
            assert steps, f"README.md: output before the first command: {line!r}"
            steps[-1][1].append(line)
    return [(command, output) for command, output in steps]


def complete(command):
    try:
        shlex.split(command, comments=True)
        return True
    except ValueError:  # "No closing quotation"
        return False


def test_readme_example_session_runs_as_typed(gausskl, tmp_path):
    steps = readme_session()
    assert len(steps) >= 5, "README.md: the example session was not found"

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gausskl").symlink_to(gausskl.path)
    work = tmp_path / "session"
    work.mkdir()
    env = dict(os.environ, PATH=os.pathsep.join(
        [str(bin_dir), os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    # One shell for the whole session, so `echo $?` sees the previous command's status; after
    # each command a marker line, then the status restored.
    script = "".join(
        f"{command}\n__status=$?; echo {END}; (exit $__status)\n" for command, _ in steps)
    result = subprocess.run(["bash", "-c", script], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=300)

    outputs = result.stdout.split(END + "\n")
    assert len(outputs) == len(steps) + 1, result.stdout
    for (command, want), got in zip(steps, outputs):
        assert got.splitlines() == want, f"$ {command}"
    # The session's last claim, in its comment: the failed command created no kl.csv.
    assert not (work / "kl.csv").exists()
