"""The gausskl-dask console script: gausskl.dask._cli, or what to install when Dask is missing.

Console scripts are installed with the package whatever the extras, so this entry point imports
nothing of Dask until it knows Dask is there.
"""

from __future__ import annotations

import importlib.util
import sys


def main() -> int:
    missing = [m for m in ("dask", "distributed", "zarr") if importlib.util.find_spec(m) is None]
    if missing:
        sys.stderr.write(f"gausskl-dask: error: needs {', '.join(missing)}: pip install "
                         "\"gausskl[dask]\" (or pip install \".[dask]\" in the source tree)\n")
        return 1
    from gausskl.dask._cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
