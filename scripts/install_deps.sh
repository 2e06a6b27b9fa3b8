#!/usr/bin/env bash
# Installs what building and testing gausskl needs on a bare Debian 12 machine, and nothing
# twice: Debian packages through apt-get, Python packages into the virtual environment .venv.
set -euo pipefail
cd "$(dirname "$0")/.."

# clang + libclang-rt-14-dev: libFuzzer for the fuzz targets of the file readers (fuzz/).
APT_PACKAGES=(g++ make libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev zlib1g-dev libhwy-dev
              clang-format clang libclang-rt-14-dev)
# scipy-openblas64: OpenBLAS (BLAS, LAPACK) that the library links (cmake/openblas.cmake).
# pytest-xdist: make test runs the Python suites on every core (pytest -n).
PIP_PACKAGES=(cmake ninja numpy pytest pytest-xdist mpmath scikit-build-core nanobind matplotlib
              scipy-openblas64 hypothesis psutil)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "install_deps: apt-get install ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --system-site-packages: reuse what the machine's Python already has (numpy, cmake, ...).
if [ ! -x .venv/bin/python ]; then
  python3 -m venv --system-site-packages .venv
fi
if ! .venv/bin/python - "${PIP_PACKAGES[@]}" <<'PY' >/dev/null 2>&1
import importlib.metadata, sys
for name in sys.argv[1:]:
    importlib.metadata.version(name)
PY
then
  echo "install_deps: pip install ${PIP_PACKAGES[*]}"
  .venv/bin/python -m pip install -q "${PIP_PACKAGES[@]}"
fi

# PyTorch CPU for the Python package's tests: exactly 2.13.0, which pip takes from a file on
# this kind of machine; any other version pulls a CUDA build of several GB.
if ! .venv/bin/python -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" \
    2>/dev/null; then
  echo "install_deps: pip install torch==2.13.0"
  .venv/bin/python -m pip install -q torch==2.13.0
fi
