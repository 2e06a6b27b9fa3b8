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


def test_readme_dask_snippet_runs_as_pasted(client, tmp_path, monkeypatch):
    """The README's Dask example, executed as written, on the module's cluster."""
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Millions of Gaussians: Dask"):readme.index("## C++")]
    code = section[section.index("```python\n") + 10:]
    code = code[:code.index("```")]
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["idx"].shape == (10_000, 10) and namespace["val"].dtype.name == "float64"
    assert (tmp_path / "kl-rows.zarr").is_dir()
