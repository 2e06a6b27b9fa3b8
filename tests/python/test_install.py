"""`pip install .` gives both: the package and the `gausskl` command beside this interpreter."""

import subprocess
import sysconfig
from pathlib import Path

import gausskl as gk


def test_the_gausskl_command_is_installed_with_the_package():
    # The environment's scripts directory (.venv/bin), where pip puts the wheel's scripts and
    # what `source .venv/bin/activate` puts on PATH.
    command = Path(sysconfig.get_path("scripts")) / "gausskl"
    assert command.is_file(), f"{command} is missing: pip install . should have installed it"
    result = subprocess.run([str(command), "--version"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"gausskl {gk.__version__}"
