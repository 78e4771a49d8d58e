# safeshare: the two commands of the quick start are `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUN    := $(BIN)/python

.PHONY: demo test test-all warm mutation bench lint typecheck clean spark-cluster spark-cluster-stop chromium

# The packages are installed by uv (Astral's installer: the same versions from the same registry
# as pip, resolved and unpacked in parallel; about 40 s instead of 100 s on a fresh machine,
# issue 36). Where uv cannot be installed, pip does the same work. Both compile the installed
# packages to bytecode (pip does by default, uv with --compile-bytecode): where the environment
# sets PYTHONDONTWRITEBYTECODE, Python never writes it itself, and every run of safeshare then
# compiled some 1,000 modules from source: about 2.5 s of CPU a run (a third of a 10-million-row
# run) and a fifth of the test suite's CPU, whose tests start many Python processes.
$(RUN):
	$(PYTHON) -m venv $(VENV)
	$(RUN) -m pip install --quiet uv || echo "uv not installed: pip installs the packages"
INSTALL = $(shell test -x $(BIN)/uv && echo "$(BIN)/uv pip install --quiet --compile-bytecode --python $(RUN)" || echo "$(RUN) -m pip install --quiet")
# pyspark (the spark extra) is published only as a source distribution of 456 MB, and the
# registry serves it without a validator (no ETag, no Last-Modified): uv cannot tell its cached
# copy is current, so every new environment downloaded it twice (metadata, then build) and built
# it again, 26 of the 43 s of the install (issue 36). Its wheel, built once by pip from the same
# registry, is kept in WHEELS (a cache outside the checkout, like pip's and uv's own; WHEELS=
# turns it off) and offered to uv with --find-links. pip is asked each time (1 s when the kept
# wheel is the newest version): a newer pyspark on the registry is built and kept beside the
# older wheel (`rm -r ~/.cache/safeshare/wheels` removes them all).
WHEELS ?= $(HOME)/.cache/safeshare/wheels
# the requirement of pyproject.toml's spark extra
SPARK_REQUIREMENT = pyspark>=4,<5
FIND_WHEELS = $(if $(WHEELS),$(shell test -d $(WHEELS) || mkdir -p $(WHEELS) 2>/dev/null; test -d $(WHEELS) && echo --find-links $(WHEELS)))
# safeshare's own modules (installed editable, so not compiled by the installer), to their
# __pycache__ (ignored by git); a module edited since is compiled from source again when imported,
# until the next `make warm`
COMPILE = $(RUN) -m compileall -q src
# The tests' processes write bytecode whatever the environment says: pytest caches each test
# module as it rewrote its asserts (under tests/__pycache__, ignored by git) only where bytecode
# may be written; under PYTHONDONTWRITEBYTECODE each worker rewrote all 260 test files on every
# run (collection: 18.9 s instead of 8.8 s)
WRITE_BYTECODE = PYTHONDONTWRITEBYTECODE=

# Runtime install (used by `make demo`).
# The compiled loops are compiled once into numba's on-disk cache (about 10 s), so that every
# later run loads them when it imports the search (safeshare.core.jit_cache; docs/benchmarks.md).
$(VENV)/.installed: pyproject.toml | $(RUN)
	$(INSTALL) -e .
	$(COMPILE)
	$(RUN) -m safeshare.search.warmup
	@touch $@

# Runtime + test tools (pytest, hypothesis, mypy, ruff, stubs) and pyspark (the spark engine's tests;
# they skip with their reason where Java is absent). pycanon, the independent
# checker of k / l / t in the tests, pins exact old numpy/pandas versions; it is installed
# without its dependencies so that the project's own versions are the ones tested; so is
# Anonymeter (the oracle of `safeshare attack`'s residual risks; it pins numpy<1.27, pyarrow<22).
$(VENV)/.installed-test: pyproject.toml | $(RUN)
	@if [ -n "$(FIND_WHEELS)" ] && [ -x $(BIN)/uv ]; then \
		$(RUN) -m pip wheel --quiet --no-deps $(FIND_WHEELS) --wheel-dir $(WHEELS) "$(SPARK_REQUIREMENT)" || \
		echo "pyspark's wheel not kept: uv builds it from its source distribution"; fi
	$(INSTALL) $(FIND_WHEELS) -e ".[test,spark]"
	$(INSTALL) --no-deps "pycanon==1.3.6" "anonymeter==1.1.0"
	@touch $@ $(VENV)/.installed

## warm: numba's on-disk cache of the compiled loops, compiled if the loops changed (about 20 s of
## CPU on a fresh clone, 1 s when it is warm), so that the test workers do not each compile them;
## and safeshare's modules compiled to bytecode (COMPILE, above)
warm: $(VENV)/.installed-test
	$(COMPILE)
	$(RUN) -m safeshare.search.warmup

## demo: anonymize the bundled UCI Adult data (k=5, 5% suppression, Prec) into out/demo/
demo: $(VENV)/.installed
	$(BIN)/safeshare anonymize examples/adult/adult.yaml --out out/demo
	@echo "release, report.json and report.html are in out/demo/"

## test: lint, type-check and the representative test suite (CI runs this), on every core the
## process may use, at most 4 (pytest-xdist; PYTEST_WORKERS=1 runs one process). Each test file
## runs whole in one worker (--dist loadfile: module fixtures such as the UI server, the browser
## and the Spark session are made once), the longest files first (tests/conftest.py, LONGEST_FILES).
## What comes before the tests runs two at a time (issue 36): the packages beside Chromium's install
## (both mostly download), then lint, mypy and the warm-up of numba's cache (CPU).
## The 25 slowest tests are listed at the end (docs/testing.md, "Test time").
PYTEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(max(1, min(4, len(os.sched_getaffinity(0)))))" 2>/dev/null || echo 2)
test:
	@$(MAKE) --no-print-directory -j2 $(VENV)/.installed-test chromium
	@$(MAKE) --no-print-directory -j2 lint typecheck warm
	$(WRITE_BYTECODE) $(RUN) -m pytest -q -m "not slow" -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25

## test-all: every test, including the exhaustive grids marked slow
test-all: $(VENV)/.installed-test lint typecheck chromium warm
	SAFESHARE_TEST_ALL=1 $(WRITE_BYTECODE) $(RUN) -m pytest -q

## chromium: Debian's Chromium for the browser tests of `safeshare ui` (tests/test_ui_browser.py),
## installed where apt-get can (as root); elsewhere those tests are skipped with the reason.
chromium:
	@test -x /usr/bin/chromium || { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && \
		(apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null) || \
		echo "chromium not installed: the browser tests of safeshare ui will be skipped"; }

## mutation: mutation testing of the core modules with their fast tests (slow; not part of
## `make test`): a score per module and the surviving mutants (docs/testing.md).
## TARGETS="ola evaluation" runs some of them.
mutation: $(VENV)/.installed-test warm
	nice -n 15 $(RUN) tools/mutation.py $(TARGETS)

## bench: speed figures, each against a baseline measured in the same run (the ARX comparison runs
## when SAFESHARE_ARX_CLASSPATH names the classpath.txt of an existing ARX 3.9 build; docs/benchmarks.md)
bench: $(VENV)/.installed-test warm
	$(RUN) benchmarks/run.py

## spark-cluster: a Spark standalone master (spark://127.0.0.1:7077) and two workers (1 core, 2 GB
## each) on 127.0.0.1 only, from the pip-installed pyspark (pip install -e ".[spark]"; Java 17+);
## logs in out/spark/. spark-cluster-stop stops them. See docs/engines.md.
SPARK_HOME_DIR = $(shell $(RUN) -c "import os, pyspark; print(os.path.dirname(pyspark.__file__))" 2>/dev/null)
SPARK_ENV = SPARK_HOME=$(SPARK_HOME_DIR) SPARK_LOCAL_IP=127.0.0.1 SPARK_MASTER_HOST=127.0.0.1 \
	SPARK_LOG_DIR=$(CURDIR)/out/spark/logs SPARK_PID_DIR=$(CURDIR)/out/spark/pids \
	SPARK_WORKER_DIR=$(CURDIR)/out/spark/work PYSPARK_PYTHON=$(abspath $(RUN))
SPARK_DAEMON = $(SPARK_ENV) bash $(SPARK_HOME_DIR)/sbin/spark-daemon.sh

spark-cluster:
	@test -n "$(SPARK_HOME_DIR)" || { echo "pyspark is not installed: pip install -e '.[spark]'"; exit 2; }
	$(SPARK_DAEMON) start org.apache.spark.deploy.master.Master 1 \
		--host 127.0.0.1 --port 7077 --webui-port 8080
	for i in 1 2; do $(SPARK_DAEMON) start org.apache.spark.deploy.worker.Worker $$i \
		--host 127.0.0.1 --cores 1 --memory 2g --webui-port 808$$i spark://127.0.0.1:7077; done

spark-cluster-stop:
	@test -n "$(SPARK_HOME_DIR)" || { echo "pyspark is not installed"; exit 2; }
	for i in 1 2; do $(SPARK_DAEMON) stop org.apache.spark.deploy.worker.Worker $$i; done
	$(SPARK_DAEMON) stop org.apache.spark.deploy.master.Master 1


## lint: ruff, and the import-linter contracts of pyproject.toml (layers: no upward import, no cycle)
lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/lint-imports

# mypy checks in two worker processes (its --num-workers, experimental in mypy 2; a clean clone
# 24 -> 13 s); MYPY_WORKERS=0 checks in one process
MYPY_WORKERS ?= 2
typecheck: $(VENV)/.installed-test
	$(BIN)/mypy --num-workers $(MYPY_WORKERS)

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache build/mutation mutants
