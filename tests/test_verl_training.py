"""One real verl GRPO step on a GPU: the tiny model, TelepathyGym, the scripted user, our tool and agent loop.

docs/integrations.md, "verl". Needs a CUDA device, verl (extra ``verl``) and vLLM in the same
environment (verl's rollout server); it is marked ``gpu`` and runs in no CPU target. It writes the
data and configs with ``mimesis-gym verl-data`` and launches verl's own entry point
(``python -m verl.trainer.main_ppo``) for one training step with the launch flags the docs give,
then checks that the step finished and logged the rewards our agent loop set.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu


def test_one_verl_grpo_step_trains_through_the_tool(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    pytest.importorskip("verl.trainer.main_ppo", reason="the extra `verl`")
    pytest.importorskip("vllm", reason="verl's rollout server")
    from mimesis_gym.core.tiny import ensure_tiny_model

    data = tmp_path / "data"
    prepared = subprocess.run(
        [sys.executable, "-m", "mimesis_gym.cli", "verl-data", "telepathy", "--split", "train", "--split", "test",
         "--limit", "4", "--seeds", "0,1", "--max-turns", "4", "--out", str(data)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert prepared.returncode == 0, prepared.stderr
    command = [
        sys.executable, "-m", "verl.trainer.main_ppo",
        "algorithm.adv_estimator=grpo",
        f"data.train_files={data / 'train.parquet'}",
        f"data.val_files={data / 'test.parquet'}",
        "data.train_batch_size=4",
        "data.max_prompt_length=1024",
        "data.max_response_length=512",
        "data.return_raw_chat=True",
        f"actor_rollout_ref.model.path={ensure_tiny_model()}",
        "actor_rollout_ref.actor.optim.lr=1e-6",
        "actor_rollout_ref.actor.ppo_mini_batch_size=4",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
        "actor_rollout_ref.actor.use_kl_loss=False",
        "actor_rollout_ref.rollout.name=vllm",
        "actor_rollout_ref.rollout.mode=async",
        "actor_rollout_ref.rollout.n=2",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
        "actor_rollout_ref.rollout.gpu_memory_utilization=0.3",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
        "actor_rollout_ref.rollout.multi_turn.enable=True",
        "actor_rollout_ref.rollout.multi_turn.format=hermes",
        "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=4",
        f"actor_rollout_ref.rollout.multi_turn.tool_config_path={data / 'tool_config.yaml'}",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={data / 'agent_loop.yaml'}",
        "trainer.n_gpus_per_node=1",
        "trainer.nnodes=1",
        "trainer.total_training_steps=1",
        "trainer.val_before_train=False",
        "trainer.test_freq=-1",
        "trainer.save_freq=-1",
        "trainer.logger=['console']",
        f"trainer.default_local_dir={tmp_path / 'checkpoints'}",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, cwd=tmp_path)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-8000:]
    # verl logs the step's metrics on the console: the step ran and scored every trajectory.
    assert re.search(r"step:1\b", log), log[-8000:]
    assert "critic/score/mean" in log, log[-8000:]
