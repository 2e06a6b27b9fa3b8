# The commands a newcomer runs. See README.md.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
CMAKE := cmake
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
JOBS ?= $(shell nproc)
CMAKE_FLAGS := -G Ninja -DCMAKE_BUILD_TYPE=Release

.PHONY: deps build python dask-extra demo test test-quick test-release test-asan asan-build \
  test-tsan test-fuzz fuzz format format-check bench-build bench bench-peers bench-dask bench-soak \
  clean

deps:
	@scripts/install_deps.sh

# The one Release build: the library, the CLI (build/gausskl), the C++ tests (ctest there) and the
# Python extension, which `make python` installs from this same tree (the library is compiled once).
RELEASE_FLAGS := -DGAUSSKL_WERROR=ON -DGAUSSKL_BUILD_PYTHON=ON -DGAUSSKL_BUILD_CLI=ON \
  -DGAUSSKL_BUILD_TESTS=ON
build: deps
	@$(CMAKE) -S . -B build $(CMAKE_FLAGS) $(RELEASE_FLAGS) -DPython_EXECUTABLE=$(CURDIR)/$(PY) \
	  >/dev/null
	@$(CMAKE) --build build -j $(JOBS)

# The Python package and the gausskl command into .venv: pip install . (scikit-build-core +
# nanobind) with build/ as its build tree and the same flags, so that it compiles nothing that
# `make build` compiled; it installs the CMake component "python" (the package, the extension,
# the command into .venv/bin). The pip run's output goes to a log: a person sees one line saying
# where, and its last lines if it fails.
PY_LOG := build/pip-install.log
python: build
	@echo "Installing the Python package and the gausskl command from build/ into $(VENV)" \
	  "(the pip run's output goes to $(PY_LOG))"
	@SKBUILD_BUILD_DIR=build SKBUILD_CMAKE_ARGS="$(subst $() ,;,$(strip $(RELEASE_FLAGS)))" \
	  CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) \
	  $(PY) -m pip install -v --no-build-isolation . >$(PY_LOG) 2>&1 || { tail -n 30 $(PY_LOG); \
	  echo "make python: the build failed; its whole output is in $(PY_LOG)"; exit 1; }

# The dask extra's packages (pyproject.toml, [project.optional-dependencies] dask; the test
# tests/dask/test_packaging.py keeps the two lists equal), from PyPI by name, for gausskl.dask
# and gausskl-dask.
DASK_EXTRA := dask[array]>=2024.1 distributed>=2024.1 zarr>=2.16
dask-extra: deps
	@$(PY) -c "import dask.array, distributed, zarr" 2>/dev/null || \
	  { echo "dask-extra: pip install $(DASK_EXTRA)"; $(PY) -m pip install -q $(foreach p,$(DASK_EXTRA),"$(p)"); }

# Runs the command pip installed (.venv/bin/gausskl), as a user of the package would.
demo: python
	@echo
	@$(PY) scripts/demo.py --cli $(VENV)/bin/gausskl --workdir demo-data
	@echo; echo "== the same from Python: an interpreter session to paste (scripts/demo_python.py)"
	@$(PY) scripts/demo_python.py

# Everything: format check; the one Release build (warnings as errors) with ctest, the CLI,
# Python and Dask suites; beside them the C++ and CLI suites under AddressSanitizer +
# UndefinedBehaviorSanitizer, ThreadSanitizer and the fuzz replay. scripts/test_stages.sh runs
# the stages in two lanes side by side and ends with a table of each stage's time.
test: deps
	@scripts/test_stages.sh full

# The Release stages only (build, ctest, CLI, Python and Dask suites): the inner loop.
test-quick: deps
	@scripts/test_stages.sh quick

# The Python suites on every core (pytest-xdist); the Dask suite starts its own processes.
XDIST := -n $(JOBS)
test-release: build python dask-extra
	@echo "== ctest (Release)"
	@cd build && ctest --output-on-failure -j $(JOBS)
	@echo "== pytest: CLI (Release)"
	@GAUSSKL_CLI=$(CURDIR)/build/gausskl $(PY) -m pytest -q $(XDIST) tests/cli
	@echo "== pytest: Python package"
	@$(PY) -m pytest -q $(XDIST) tests/python
	@echo "== pytest: gausskl.dask and gausskl-dask (LocalCluster of worker processes)"
	@GAUSSKL_CLI=$(CURDIR)/build/gausskl $(PY) -m pytest -q tests/dask

# The sanitizer builds at -O1 with line tables (-g1): as -O2 -g they took 40 of CI's 90 minutes,
# one kernel file 25 of them (bench/README.md, "CI time"); ASan's reports need no more.
SANITIZER_OPT := -O1 -g1 -DNDEBUG

asan-build: deps
	@$(CMAKE) -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(SANITIZER_OPT)" -DGAUSSKL_WERROR=ON \
	  -DGAUSSKL_SANITIZE=ON >/dev/null
	@$(CMAKE) --build build-asan -j $(JOBS)

test-asan: asan-build
	@echo "== ctest (ASan + UBSan)"
	@cd build-asan && ctest --output-on-failure -j $(JOBS)
	@echo "== pytest: CLI (ASan + UBSan)"
	@GAUSSKL_CLI=$(CURDIR)/build-asan/gausskl $(PY) -m pytest -q $(XDIST) tests/cli

# The library under ThreadSanitizer: concurrent calls, and the operations' own worker threads.
test-tsan: deps
	@$(CMAKE) -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(SANITIZER_OPT)" -DGAUSSKL_TSAN=ON \
	  -DGAUSSKL_BUILD_CLI=OFF >/dev/null
	@$(CMAKE) --build build-tsan -j $(JOBS) --target gausskl_core_tests gausskl_cpu_tests
	@echo "== ThreadSanitizer: concurrency, threaded operations and the thread pool"
	@build-tsan/tests/gausskl_core_tests \
	  --gtest_filter='Concurrency.*:PairwiseKl.SameResults*:KnnKl.SameResults*:Kl.SameResults*' \
	  --gtest_brief=1
	@build-tsan/tests/gausskl_cpu_tests --gtest_filter='ParallelFor.*' --gtest_brief=1

# The file readers' libFuzzer targets (clang, ASan + UBSan): replay the seed corpus and every
# crash reproducer, then fuzz each reader for a few seconds.
test-fuzz: deps
	@echo "== fuzz: corpus replay and smoke"
	@scripts/fuzz.sh smoke

# Longer fuzzing, FUZZ_SECONDS per reader; the growing corpus stays in build-fuzz/corpus. Then the
# Python API's property tests on hypothesis's long profile (tests/python/test_properties.py).
FUZZ_SECONDS ?= 300
fuzz: deps
	@scripts/fuzz.sh run $(FUZZ_SECONDS)
	@GAUSSKL_HYPOTHESIS_PROFILE=gausskl-fuzz $(PY) -m pytest -q $(XDIST) tests/python/test_properties.py

FORMAT_FILES = $(shell git ls-files '*.cpp' '*.hpp')
format:
	@clang-format -i $(FORMAT_FILES)

format-check:
	@clang-format --dry-run -Werror $(FORMAT_FILES) && echo "clang-format: clean"

bench-build: deps
	@$(CMAKE) -S . -B build $(CMAKE_FLAGS) $(RELEASE_FLAGS) -DPython_EXECUTABLE=$(CURDIR)/$(PY) \
	  -DGAUSSKL_BUILD_BENCH=ON >/dev/null
	@$(CMAKE) --build build -j $(JOBS)

# The C++ benchmarks, then the seeds' own calls from Python beside the same calls from C++ (the
# per-call cost of the Python layer) and the users' PyTorch code: bench/peers.py --only seeds.
bench: bench-build python
	@build/bench/gausskl_bench_calls --benchmark_counters_tabular=true
	@build/bench/gausskl_bench_rowwise --benchmark_counters_tabular=true
	@build/bench/gausskl_bench_rowwise_kernel --benchmark_counters_tabular=true
	@build/bench/gausskl_bench_pairwise_kernel --benchmark_filter='/(AVX3|AVX2)/' \
		--benchmark_counters_tabular=true
	@build/bench/gausskl_bench_full_pairs --benchmark_counters_tabular=true
	@build/bench/gausskl_bench_pairwise_backward --benchmark_counters_tabular=true
	@build/bench/gausskl_bench_pool
	@$(PY) bench/peers.py --only seeds

# gausskl side by side with PyTorch (forum broadcast, torch.distributions, GEMM in torch, SGEMM
# floor, the seeds' own calls against the same calls from C++; the other divergences against the
# broadcasts users write and POT): rewrites the results sections of bench/README.md and
# bench/plots/*.png (~20-25 min; run it on a quiet machine). POT (Python Optimal Transport), the
# W2 peer, is installed here: only this target needs it (without it its jobs are skipped).
# `.venv/bin/python bench/peers.py --quick` is a smoke run of about a minute.
POT := pot==0.9.7.post1
bench-peers: bench-build python
	@$(PY) -c "import ot" 2>/dev/null || \
	  { echo "bench-peers: pip install $(POT)"; $(PY) -m pip install -q "$(POT)"; }
	@$(PY) bench/peers.py --out bench/README.md

# gausskl-dask against gausskl on this machine (bench/dask_scale.py; see bench/README.md, "Scaling
# out on Dask"): knn N = M = 200,000 (~15 min in all) and pairwise N = M = 40,000 to Zarr.
bench-dask: build python dask-extra
	@$(PY) bench/dask_scale.py --cli build/gausskl --out bench/README.md

# The soak (bench/soak.py): SOAK_MINUTES of training steps calling every op with gradients (NumPy
# and torch, the library's paths and the torch path, all families, threads 1 and 2) and a CLI run
# a minute; RSS, open fds and threads each minute to build/soak.csv, plotted to
# bench/plots/soak.png, slopes printed. Not part of `make test` (test_soak_bounded.py is).
SOAK_MINUTES ?= 60
bench-soak: python
	@$(PY) bench/soak.py --minutes $(SOAK_MINUTES) --csv build/soak.csv --plot bench/plots/soak.png \
	  --cli $(CURDIR)/$(VENV)/bin/gausskl

clean:
	rm -rf build build-asan build-tsan build-python build-fuzz build-logs demo-data
