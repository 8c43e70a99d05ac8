"""A real TRL ``GRPOTrainer`` trains the embedded tiny model through the adapter (docs/integrations.md, "TRL").

Two optimizer steps on CPU with one torch thread: the first on two KeywordEcho tasks, the second on
a third KeywordEcho task and a TelepathyGym task with the scripted user (one ``GRPOTrainer`` with a
dict ``environment_factory``, so each row is routed by its ``environment`` column). Every reward
TRL computed is checked against a fresh env replaying the same actions, every tool call in TRL's
completions against the actions the env received, and the model's weights must have moved.
A few supervised steps first teach the tiny model the tool-call format (``tests/support/tool_warmup.py``).
About 3-5 minutes on two busy cores.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mimesis_gym.algorithms import testing as keyword_echo
from mimesis_gym.integrations.trl import build_dataset, environment_factory, reward_function
from tests.support.tool_warmup import teach_tool_calls

pytestmark = pytest.mark.slow

GENERATIONS = 4
"""Rollouts per prompt (one GRPO group); a batch of 8 holds two groups."""

trl = pytest.importorskip("trl", reason="the TRL adapter's extra: pip install 'mimesis-gym[trl]'")
torch = pytest.importorskip("torch")
TELEPATHY = "mimesis/TelepathyGym-v0"


def tool_exchanges(completion: list[dict]) -> list[tuple[dict, str | None]]:
    """``(arguments, tool reply or None)`` of every tool call in a completion, in order."""
    exchanges: list[tuple[dict, str | None]] = []
    for message in completion:
        for call in message.get("tool_calls") or []:
            exchanges.append((call["function"]["arguments"], None))
        if message["role"] == "tool":
            pending = next(i for i, (_, reply) in enumerate(exchanges) if reply is None)
            exchanges[pending] = (exchanges[pending][0], message["content"])
    return exchanges


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Run the trainer once; return what the reward function saw, TRL's log and the weights before and after."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    from mimesis_gym.core.tiny import TinyModelUnavailable, ensure_tiny_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental
    try:
        path = str(ensure_tiny_model())
    except TinyModelUnavailable as error:
        pytest.skip(str(error))
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.chat_template = qwen2_5_chat_template  # SmolLM2's own template cannot render tool calls
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    factories = {
        "keyword": environment_factory(keyword_echo.ENV_ID),
        "telepathy": environment_factory(TELEPATHY, max_episode_steps=2),
    }
    teach_tool_calls(model, tokenizer, factories["keyword"])
    before = {name: tensor.detach().clone() for name, tensor in model.named_parameters()}

    from datasets import concatenate_datasets

    dataset = concatenate_datasets(
        [
            build_dataset(factories["keyword"], split="test", limit=3, environment="keyword"),
            build_dataset(factories["telepathy"], split="test", limit=1, seeds=[7], environment="telepathy"),
        ]
    )
    calls: list[dict] = []
    score = reward_function("episode_score")

    def recorded_score(**kwargs):
        rewards = score(**kwargs)
        calls.append(
            {
                "prompts": kwargs["prompts"],
                "completions": kwargs["completions"],
                "rewards": rewards,
                "episodes": [
                    {
                        "env_id": env.episode.recipe.env_id,
                        "recipe": env.episode.recipe,
                        "task_id": env.episode.task_id,
                        "seed": env.episode.seed,
                        "actions": list(env.episode.actions),
                        "observations": list(env.episode.observations),
                        "score": env.episode.episode_score,
                        "secrets": env.episode.env.unwrapped.secret_texts(),
                    }
                    for env in kwargs["environments"]
                ],
                "rows": list(zip(kwargs["task_id"], kwargs["seed"], kwargs["environment"], strict=True)),
            }
        )
        return rewards

    recorded_score.__name__ = score.__name__
    args = GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("trl")),
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        max_steps=2,
        per_device_train_batch_size=8,
        gradient_accumulation_steps=1,
        num_generations=GENERATIONS,
        max_completion_length=96,
        max_tool_calling_iterations=2,
        shuffle_dataset=False,
        learning_rate=1e-5,
        seed=0,
        disable_tqdm=True,
        activation_checkpointing=False,  # GRPOConfig turns it on by default; a 135M model needs no memory saving
        bf16=False,  # GRPOConfig defaults to bf16 autocast, slow on CPUs without bf16 units
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[recorded_score],
        train_dataset=dataset,
        environment_factory=factories,
        args=args,
    )
    trainer.train()
    for factory in factories.values():
        factory.close()
    torch.set_num_threads(threads)
    monkeypatch.undo()
    return {"calls": calls, "log": trainer.state.log_history, "before": before, "model": model}


def completions_of(trained):
    for call in trained["calls"]:
        yield from zip(
            call["prompts"], call["completions"], call["rewards"], call["episodes"], call["rows"], strict=True
        )


def test_two_optimizer_steps_route_each_row_to_its_env(trained):
    assert len(trained["calls"]) == 2  # one generation batch per optimizer step
    steps = [{row[2] for row in call["rows"]} for call in trained["calls"]]
    assert steps == [{"keyword"}, {"keyword", "telepathy"}]
    for _, _, _, episode, (task_id, seed, environment) in completions_of(trained):
        assert (episode["task_id"], episode["seed"]) == (task_id, seed)
        assert episode["env_id"] == (keyword_echo.ENV_ID if environment == "keyword" else TELEPATHY)


def test_the_env_received_exactly_the_tool_calls_of_each_completion(trained):
    executed_total = 0
    for prompt, completion, _, episode, _ in completions_of(trained):
        assert prompt[-1]["content"] == episode["observations"][0]  # reset's opening observation
        exchanges = tool_exchanges(completion)
        executed = [
            (args, reply) for args, reply in exchanges if reply is not None and not reply.startswith("{'error'")
        ]
        actions = episode["actions"]
        # A call whose reply TRL dropped for length was still executed: at most one extra action.
        assert [args for args, _ in executed] == actions[: len(executed)]
        assert len(actions) - len(executed) in (0, 1)
        assert [reply for _, reply in executed] == episode["observations"][1 : len(executed) + 1]
        executed_total += len(actions)
    assert executed_total > 0, "the tuned model made no tool call: the run tested nothing"


def test_rewards_equal_the_scores_of_replayed_episodes(trained):
    rewards = []
    for _, _, reward, episode, _ in completions_of(trained):
        env = episode["recipe"].make()  # the scripted user, as in training
        obs, _ = env.reset(seed=episode["seed"], options={"task_id": episode["task_id"]})
        observations, info = [obs], {"episode_score": 0.0}
        for action in episode["actions"]:
            obs, _, _, _, info = env.step(action)
            observations.append(obs)
        env.close()
        assert observations == episode["observations"]
        assert reward == info["episode_score"] == episode["score"]
        rewards.append(reward)
    if not 0.0 < sum(rewards) < len(rewards):  # which rewards come out is sampling's choice: it differs across CPUs
        pytest.skip("every rollout of this run scored alike; the replay above still checked each reward")


def test_trl_logged_the_rewards_the_adapter_returned(trained):
    steps = [entry for entry in trained["log"] if "rewards/mimesis_episode_score/mean" in entry]
    assert len(steps) == 2
    for entry, call in zip(steps, trained["calls"], strict=True):
        mean = sum(call["rewards"]) / len(call["rewards"])
        assert math.isclose(entry["rewards/mimesis_episode_score/mean"], mean, abs_tol=1e-6)
        assert entry["mimesis/user_failure_frac"] == 0.0


def test_no_privileged_text_reached_the_model(trained):
    for prompt, completion, _, episode, _ in completions_of(trained):
        seen = " ".join(m["content"] for m in prompt) + " ".join(
            m["content"] for m in completion if m["role"] == "tool"
        )
        for secret in episode["secrets"]:
            assert secret.lower() not in seen.lower()


def test_the_weights_changed(trained):
    groups = [call["rewards"][at : at + GENERATIONS] for call in trained["calls"] for at in range(0, 8, GENERATIONS)]
    if all(max(group) == min(group) for group in groups):  # rare: sampling differs slightly across CPUs
        pytest.skip("every group of rollouts tied, so GRPO had no advantage to learn from in this run")
    model = trained["model"]
    changed = [name for name, tensor in model.named_parameters() if not torch.equal(trained["before"][name], tensor)]
    assert changed, "two GRPO steps with mixed rewards left every weight unchanged"


def test_the_example_trains_one_step(tmp_path):
    example = Path(__file__).resolve().parents[1] / "examples" / "trl_grpo.py"
    assert len(example.read_text(encoding="utf-8").splitlines()) < 40
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    done = subprocess.run(
        [sys.executable, str(example), "tiny", "1"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1].startswith("[(1, ")  # (step, reward, tool calls per rollout)
