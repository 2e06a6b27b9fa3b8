"""The dask extra: one list of packages in pyproject.toml and the Makefile, and `import gausskl`
never imports Dask."""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_extra_is_the_makefile_s():
    pyproject = (REPO / "pyproject.toml").read_text()
    extra = re.search(r"^dask = \[(.*)\]$", pyproject, re.M).group(1)
    packages = [p.strip().strip('"') for p in extra.split(",")]
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^DASK_EXTRA := (.*)$", makefile, re.M).group(1).split() == packages


def test_import_gausskl_does_not_import_dask():
    code = ("import sys, gausskl as gk\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('dask', 'distributed', 'zarr'))\n"
            "assert loaded == [], loaded\n"
            "assert callable(gk.dask.knn_kl) and 'dask.array' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)
