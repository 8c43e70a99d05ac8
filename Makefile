# The two commands of the README: `make run` (the main job on embedded defaults) and `make test`.
# Each creates .venv when it is missing and installs what it needs first.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# PyTorch is pinned here, not in pyproject ranges: an unpinned torch pulls a multi-GB CUDA build.
# Used by the targets that need the local model stack (transformers, the embedded tiny model).
TORCH_SPEC ?= torch==2.13.0
PYTEST_ARGS ?=

.PHONY: run test test-slow lint bench check clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PIP) install --quiet -e '.[dev,userrl]'
	touch $@

run: $(VENV)/.installed-dev
	$(PY) examples/quickstart.py

test: $(VENV)/.installed-dev
	$(PY) -m pytest -m "not slow and not vllm and not gpu" $(PYTEST_ARGS)

test-slow: $(VENV)/.installed-dev
	$(PY) -m pytest -m "slow" $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check mimesis_gym tests benchmarks examples
	$(PY) -m ruff format --check mimesis_gym tests benchmarks examples

check: $(VENV)/.installed-dev
	$(VENV)/bin/mimesis-gym check

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/env_overhead.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache
