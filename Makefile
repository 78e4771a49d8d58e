# safeshare: the two commands of the quick start are `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUN    := $(BIN)/python

.PHONY: demo test test-all mutation bench lint typecheck clean

$(RUN):
	$(PYTHON) -m venv $(VENV)
	$(RUN) -m pip install --quiet --upgrade pip

# Runtime install (used by `make demo`).
$(VENV)/.installed: pyproject.toml | $(RUN)
	$(RUN) -m pip install --quiet -e .
	@touch $@

# Runtime + test tools (pytest, hypothesis, mypy, ruff, stubs). pycanon, the independent
# checker of k / l / t in the tests, pins exact old numpy/pandas versions; it is installed
# without its dependencies so that the project's own versions are the ones tested.
$(VENV)/.installed-test: pyproject.toml | $(RUN)
	$(RUN) -m pip install --quiet -e ".[test]"
	$(RUN) -m pip install --quiet --no-deps "pycanon==1.3.6"
	@touch $@ $(VENV)/.installed

## demo: anonymize the bundled UCI Adult data (k=5, 5% suppression, Prec) into out/demo/
demo: $(VENV)/.installed
	$(BIN)/safeshare anonymize examples/adult/adult.yaml --out out/demo
	@echo "release, report.json and report.html are in out/demo/"

## test: lint, type-check and the representative test suite (CI runs this)
test: $(VENV)/.installed-test lint typecheck
	$(RUN) -m pytest -q -m "not slow"

## test-all: every test, including the exhaustive grids marked slow
test-all: $(VENV)/.installed-test lint typecheck
	$(RUN) -m pytest -q

## mutation: mutation testing of the core modules with their fast tests (slow; not part of
## `make test`): a score per module and the surviving mutants (docs/testing.md).
## TARGETS="ola evaluation" runs some of them.
mutation: $(VENV)/.installed-test
	nice -n 15 $(RUN) tools/mutation.py $(TARGETS)

## bench: speed figures, each against a baseline measured in the same run
bench: $(VENV)/.installed-test
	$(RUN) benchmarks/run.py

## lint: ruff, and the import-linter contracts of pyproject.toml (layers: no upward import, no cycle)
lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/lint-imports

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache build/mutation mutants
