"""Runs the gausskl binary: $GAUSSKL_CLI, or <repo>/build/gausskl."""

import os
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


class Cli:
    def __init__(self, path):
        self.path = path

    def __call__(self, *args):
        """Runs gausskl with the arguments (str() applied); returns the CompletedProcess."""
        return subprocess.run(
            [str(self.path), *map(str, args)], capture_output=True, text=True, timeout=60
        )

    def ok(self, *args):
        result = self(*args)
        assert result.returncode == 0, (
            f"gausskl {' '.join(map(str, args))}\nexit {result.returncode}\n{result.stderr}"
        )
        return result


@pytest.fixture(scope="session")
def gausskl():
    path = Path(os.environ.get("GAUSSKL_CLI", REPO / "build" / "gausskl"))
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"gausskl CLI not found at {path}: build it (cmake --build build) "
            "or point GAUSSKL_CLI at it",
            pytrace=False,
        )
    return Cli(path)


@pytest.fixture
def rng(request):
    # Seeded by the test's id, so each test sees the same data on every run.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
