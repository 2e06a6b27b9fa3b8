"""make demo's two scripts, run as make demo runs them (smaller), so the demo cannot drift from
the package: every check passes and says why it matters, and the Python part runs to its end."""

import subprocess
import sys
import sysconfig
from pathlib import Path

from conftest import needs_torch

REPO = Path(__file__).resolve().parents[2]


def test_demo_computes_checks_and_explains(tmp_path):
    command = Path(sysconfig.get_path("scripts")) / "gausskl"  # the one pip installed
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "demo.py"), "--cli", str(command), "--workdir",
         str(tmp_path), "-n", "400", "-d", "8"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("What it computes: KL(p_i || p_j) in nats for all 400 x 400 pairs")
               for line in lines)
    checks = [i for i, line in enumerate(lines) if line.startswith("  [")]
    assert len(checks) == 4 and all(lines[i].startswith("  [ok] ") for i in checks)
    for i in checks:  # each check followed by its sentence on why it matters
        assert lines[i + 1].startswith("       ") and lines[i + 1].strip()


@needs_torch
def test_demo_python_session_runs_to_its_end():
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "demo_python.py")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = [line for line in result.stdout.splitlines() if line]
    # The last step shows the error the library gives for a negative scale.
    assert lines[-1].startswith("ValueError: [kl] p.scale (std) must be positive and finite, "
                                "found -")
    assert lines[-1].endswith(" at row 0, column 0")
    assert "Traceback" not in result.stdout
