"""The verl adapter: the tool driven with verl's own schema objects, the parquet data, the YAML, the CLI.

docs/integrations.md, "verl". The tool and dataset tests need verl (extra ``verl``, its own venv:
``make test-verl``); there ``MIMESIS_REQUIRE_VERL=1`` turns a missing verl into a failure instead
of a skip. The data, YAML and CLI tests run without verl. The training step is
``tests/test_verl_training.py`` (gpu).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.integrations.episode import ToolEpisode
from mimesis_gym.integrations.verl_data import (
    AGENT_LOOP_NAME,
    ToolSettings,
    combined_tool_schema,
    dataset_rows,
    write_configs,
    write_dataset,
)
from tests.test_trl_adapter import tool_args

TRAINING_ENVS = [
    "mimesis/TravelGym-v0",
    "mimesis/TurtleGym-v0",
    "mimesis/FunctionGym-v0",
    "mimesis/TauGym-v0",
    "mimesis/PersuadeGym-v0",
]
TELEPATHY = "mimesis/TelepathyGym-v0"


def need_verl(module: str = "verl.tools.base_tool"):
    if os.environ.get("MIMESIS_REQUIRE_VERL") == "1":
        return __import__("importlib").import_module(module)
    return pytest.importorskip(module, reason="verl (extra `verl`) runs in .venv-verl: make test-verl")


def run(coroutine):
    return asyncio.run(coroutine)


def verl_call(arguments: dict, call_id: str = "call-0"):
    """A tool call as verl parses a model's output: the JSON string through verl's own schema classes."""
    schemas = need_verl("verl.tools.schemas")
    parsed = schemas.OpenAIFunctionParsedSchema(name="interact_with_env", arguments=json.dumps(arguments))
    function, decode_error = schemas.OpenAIFunctionCallSchema.from_openai_function_parsed_schema(parsed)
    assert not decode_error
    return schemas.OpenAIFunctionToolCall(id=call_id, function=function)


def make_tool(*env_ids: str, **config):
    verl_module = need_verl("mimesis_gym.integrations.verl")
    return verl_module.MimesisTool({"type": "native", "env_ids": list(env_ids), **config}, None)


# ------------------------------------------------------------------------ the tool


@pytest.mark.parametrize("env_id", [*TRAINING_ENVS, TELEPATHY])
def test_an_oracle_episode_through_the_tool_matches_gym_make(env_id):
    tool = make_tool(env_id)
    reference = gym.make(env_id, split="test", privileged=True)
    task_id = reference.unwrapped.task_pack.pool("test")[0].id
    obs, _ = reference.reset(seed=5, options={"task_id": task_id})
    instance, opening = run(tool.create("traj-1", create_kwargs={"env_id": env_id, "task_id": task_id, "seed": 5}))
    assert instance == "traj-1" and opening.text == obs
    done, total = False, 0.0
    while not done:
        arguments = tool_args(reference.unwrapped.oracle_action())
        call = verl_call(arguments)
        obs, reward, terminated, truncated, info = reference.step(arguments)
        response, tool_reward, metrics = run(tool.execute(instance, call.function.arguments))
        assert (response.text, tool_reward) == (obs, reward)
        assert (metrics["terminated"], metrics["truncated"]) == (terminated, truncated)
        total += reward
        done = terminated or truncated
    assert run(tool.calc_reward(instance)) == info["episode_score"] > 0
    assert tool.episode(instance).reward_sum == pytest.approx(total)
    response, reward, metrics = run(tool.execute(instance, {"choice": "action", "content": "one more"}))
    assert "terminated after" in response.text and reward == 0.0 and metrics == {"episode_over": True}
    run(tool.release(instance))
    with pytest.raises(ConfigurationError, match="no episode has instance id 'traj-1'"):
        tool.episode(instance)
    tool.close()


def test_the_tool_schema_is_the_envs_own_and_parses_as_verls_schema():
    schemas = need_verl("verl.tools.schemas")
    for env_id in TRAINING_ENVS:
        tool = make_tool(env_id)
        own = ToolEpisode(tool.settings.recipe(env_id))
        assert tool.tool_schema == schemas.OpenAIFunctionToolSchema.model_validate(own.schema)
        assert tool.name == "interact_with_env"
        assert tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True) == own.schema
        own.close()
        tool.close()


def test_a_schema_naming_another_function_is_refused():
    schemas = need_verl("verl.tools.schemas")
    from mimesis_gym.integrations.verl import MimesisTool

    schema = schemas.OpenAIFunctionToolSchema.model_validate(
        {"type": "function", "function": {"name": "search_web", "description": "Search."}}
    )
    with pytest.raises(ConfigurationError, match="the tool schema names 'search_web'"):
        MimesisTool({"type": "native", "env_ids": [TELEPATHY]}, schema)


def test_one_tool_serves_several_envs_with_the_union_of_their_choices():
    tool = make_tool("mimesis/PersuadeGym-v0", "mimesis/TauGym-v0")
    assert tool.tool_schema.function.parameters.properties["choice"].enum == ["action", "search", "answer", "finish"]
    with pytest.raises(ConfigurationError, match="no env_id and the tool serves several envs"):
        run(tool.create("x", create_kwargs={"task_id": "t", "seed": 0}))
    with pytest.raises(ConfigurationError, match="'mimesis/TelepathyGym-v0' is not served by this tool"):
        run(tool.create("x", create_kwargs={"env_id": TELEPATHY, "task_id": "t", "seed": 0}))
    tool.close()


def test_create_refuses_what_cannot_hold_an_episode():
    tool = make_tool(TELEPATHY)
    with pytest.raises(ConfigurationError, match="run the agent loop 'mimesis_agent'"):
        run(tool.create(create_kwargs={"task_id": "telepathy-demo-01", "seed": 0}))
    with pytest.raises(ConfigurationError, match=r"unknown keys \['answer'\]"):
        run(tool.create("x", create_kwargs={"task_id": "telepathy-demo-01", "seed": 0, "answer": "cat"}))
    with pytest.raises(ConfigurationError, match="needs task_id and seed"):
        run(tool.create("x", create_kwargs={"task_id": "telepathy-demo-01"}))
    run(tool.create("x", task_id="telepathy-demo-01", seed=np.int64(0)))  # verl's older call; a numpy seed
    assert tool.episode("x").seed == 0 and type(tool.episode("x").seed) is int
    with pytest.raises(ConfigurationError, match="already holds an episode"):
        run(tool.create("x", task_id="telepathy-demo-01", seed=0))
    tool.close()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"env_ids": []}, "at least 1 item"),
        ({"env_ids": ["mimesis/NoSuchGym-v0"]}, "unknown env id"),
        ({"env_ids": [TELEPATHY, TELEPATHY]}, "lists an env twice"),
        ({"env_ids": [TELEPATHY], "env_kwargs": {"privileged": True}}, "never expose privileged"),
        ({"env_ids": [TELEPATHY], "reward": "best"}, "episode_score"),
        ({"env_ids": [TELEPATHY], "surprise": 1}, "Extra inputs are not permitted"),
    ],
)
def test_bad_tool_settings_fail_with_the_fix(config, message):
    with pytest.raises(ValueError, match=message):
        ToolSettings.model_validate(config)


def test_truncation_turn_rewards_and_env_reuse_after_release():
    tool = make_tool(TELEPATHY, max_episode_steps=2, reward="turn_rewards")
    run(tool.create("a", create_kwargs={"task_id": "telepathy-demo-01", "seed": 0}))
    env = tool.episode("a").env
    assert run(tool.execute("a", {"choice": "action", "content": "Is it an animal?"}))[0].text == "Yes"
    response, _, metrics = run(tool.execute("a", {"choice": "action", "content": "Is it a bird?"}))
    assert metrics == {"turn": 2, "terminated": False, "truncated": True, "user_failure": False}
    assert run(tool.calc_reward("a")) == tool.episode("a").reward_sum
    run(tool.release("a"))
    run(tool.create("b", create_kwargs={"task_id": "telepathy-demo-01", "seed": 1}))
    assert tool.episode("b").env is env and tool.episode("b").actions == []
    response, reward, _ = run(tool.execute("b", {"choice": "shout", "content": "hello"}))
    assert response.text.startswith("Invalid action") and reward == 0.0  # malformed: costs the turn, as in process
    tool.close()


@pytest.mark.parametrize("step_in_thread", [False, True])
def test_concurrent_trajectories_keep_their_own_episodes(step_in_thread):
    tool = make_tool(TELEPATHY, step_in_thread=step_in_thread)
    assert tool.settings.threaded is step_in_thread
    questions = ["Is it an animal?", "Is it a bird?", "Is it big?"]

    async def trajectory(instance: str, seed: int) -> list[str]:
        await tool.create(instance, create_kwargs={"task_id": "telepathy-demo-01", "seed": seed})
        seen = []
        for question in questions:
            seen.append((await tool.execute(instance, {"choice": "action", "content": question}))[0].text)
            await asyncio.sleep(0)
        await tool.release(instance)
        return seen

    async def both():
        return await asyncio.gather(trajectory("p", 0), trajectory("q", 1))

    first, second = run(both())
    reference = gym.make(TELEPATHY)
    reference.reset(seed=0, options={"task_id": "telepathy-demo-01"})
    expected = [reference.step({"choice": "action", "content": q})[0] for q in questions]
    assert first == second == expected
    tool.close()


def test_verls_tool_loader_builds_the_tool_from_the_written_yaml(tmp_path):
    registry = need_verl("verl.tools.tool_registry")
    settings = ToolSettings(env_ids=TRAINING_ENVS[:2], max_episode_steps=3)
    rows, schema = dataset_rows(settings, split="test", limit=1)
    tool_path, loop_path = write_configs(settings, schema, tmp_path)
    [tool] = registry.initialize_tools_from_config(str(tool_path))
    assert type(tool).__name__ == "MimesisTool" and tool.settings == settings
    assert tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True) == schema
    create_kwargs = rows[0]["extra_info"]["tools_kwargs"]["interact_with_env"]["create_kwargs"]
    _, opening = run(tool.create("row-0", create_kwargs=create_kwargs))
    assert opening.text == rows[0]["prompt"][-1]["content"]
    tool.close()


def test_the_agent_loop_registers_under_the_name_the_data_and_yaml_use(tmp_path):
    agent_loop = need_verl("verl.experimental.agent_loop.agent_loop")
    from omegaconf import OmegaConf

    from mimesis_gym.integrations.verl_agent_loop import MimesisAgentLoop

    assert agent_loop._agent_loop_registry[AGENT_LOOP_NAME] == {
        "_target_": f"{MimesisAgentLoop.__module__}.{MimesisAgentLoop.__qualname__}"
    }
    _, loop_path = write_configs(ToolSettings(env_ids=[TELEPATHY]), {"type": "function"}, tmp_path)
    [entry] = OmegaConf.load(loop_path)
    assert entry.name == AGENT_LOOP_NAME
    module, _, name = entry._target_.rpartition(".")
    assert getattr(__import__(module, fromlist=[name]), name) is MimesisAgentLoop


def test_steps_run_in_a_thread_by_default_only_for_users_that_are_not_in_process():
    assert ToolSettings(env_ids=[TELEPATHY]).threaded is False
    assert ToolSettings(env_ids=[TELEPATHY], user="mimesis-9b").threaded is True
    assert ToolSettings(env_ids=[TELEPATHY], user="mimesis-9b", step_in_thread=False).threaded is False


# ------------------------------------------------------------------------ the parquet data


def test_rows_hold_the_public_prompt_and_the_episode_ids_no_secret():
    settings = ToolSettings(env_ids=[*TRAINING_ENVS, TELEPATHY])
    rows, schema = dataset_rows(settings, split="test", limit=2, seeds=[0, 7])
    assert len(rows) == 6 * 2 * 2
    assert schema == combined_tool_schema([ToolEpisode(settings.recipe(e)).schema for e in settings.env_ids])
    for index, row in enumerate(rows):
        info = row["extra_info"]
        env_id, task_id, seed = info["env_id"], info["task_id"], info["seed"]
        ids = {"env_id": env_id, "task_id": task_id, "seed": seed}
        assert info["tools_kwargs"] == {"interact_with_env": {"create_kwargs": ids}}
        assert info["interaction_kwargs"] == {"name": AGENT_LOOP_NAME, **ids}
        assert (info["index"], info["split"], row["data_source"], row["agent_name"]) == (
            index,
            "test",
            env_id,
            AGENT_LOOP_NAME,
        )
        assert row["reward_model"] == {"style": "mimesis_env", "ground_truth": task_id}
        reference = gym.make(env_id, split="test")
        obs, _ = reference.reset(seed=seed, options={"task_id": task_id})
        assert row["prompt"] == [
            {"role": "system", "content": reference.unwrapped.system_prompt},
            {"role": "user", "content": obs},
        ]
        text = json.dumps(row).lower()
        assert not [s for s in reference.unwrapped.secret_texts() if s.lower() in text], (env_id, task_id)
        reference.close()
    assert [row["extra_info"]["seed"] for row in rows[:4]] == [0, 7, 0, 7]


def test_the_parquet_file_reads_back_with_the_columns_verls_dataset_needs(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    rows, _ = dataset_rows(ToolSettings(env_ids=[TELEPATHY, "mimesis/FunctionGym-v0"]), split="test", limit=2)
    path = write_dataset(rows, tmp_path / "test.parquet")
    table = pq.read_table(path)
    assert set(table.column_names) == {"data_source", "agent_name", "prompt", "reward_model", "extra_info"}
    assert table.to_pylist() == rows


def test_verls_rlhf_dataset_loads_the_file_with_the_tiny_tokenizer(tmp_path):
    rl_dataset = need_verl("verl.utils.dataset.rl_dataset")
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer

    from mimesis_gym.core.tiny import ensure_tiny_model

    settings = ToolSettings(env_ids=[TELEPATHY, "mimesis/TurtleGym-v0"])
    rows, schema = dataset_rows(settings, split="test", limit=2, seeds=[0, 1])
    path = write_dataset(rows, tmp_path / "test.parquet")
    tool_path, _ = write_configs(settings, schema, tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(str(ensure_tiny_model()))
    config = OmegaConf.create(
        {
            "max_prompt_length": 4096,
            "filter_overlong_prompts": True,
            "filter_overlong_prompts_workers": 1,
            "return_raw_chat": True,
            "tool_config_path": str(tool_path),
            "need_tools_kwargs": True,
            "cache_dir": str(tmp_path / "cache"),
        }
    )
    dataset = rl_dataset.RLHFDataset(str(path), tokenizer, config)
    assert len(dataset) == len(rows) == 8
    assert dataset.tool_schemas == [schema]
    for index, row in enumerate(rows):
        item = dataset[index]
        assert item["raw_prompt"] == row["prompt"]
        assert item["tools_kwargs"] == row["extra_info"]["tools_kwargs"]
        assert item["interaction_kwargs"] == row["extra_info"]["interaction_kwargs"]
        assert (item["index"], item["agent_name"], item["data_source"]) == (index, AGENT_LOOP_NAME, row["data_source"])


def test_write_dataset_refuses_nothing(tmp_path):
    with pytest.raises(ConfigurationError, match="no rows"):
        write_dataset([], tmp_path / "x.parquet")


@pytest.mark.parametrize(("kwargs", "message"), [({"limit": 0}, "limit must be"), ({"seeds": []}, "seeds must be")])
def test_bad_limits_and_seeds_are_refused(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        dataset_rows(ToolSettings(env_ids=[TELEPATHY]), split="test", **kwargs)


# ------------------------------------------------------------------------ the command


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mimesis_gym.cli", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_verl_data_writes_every_split_and_both_configs(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    yaml = pytest.importorskip("yaml")
    out = tmp_path / "data"
    done = cli(
        "verl-data", "telepathy", "function", "--split", "test", "--split", "demo", "--limit", "1", "--seeds", "3,4",
        "--user", "scripted", "--max-turns", "5", "--env-arg", "lenient_parsing=true", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "agent_loop.yaml",
        "demo.parquet",
        "test.parquet",
        "tool_config.yaml",
    ]
    settings = ToolSettings(
        env_ids=[TELEPATHY, "mimesis/FunctionGym-v0"], max_episode_steps=5, env_kwargs={"lenient_parsing": True}
    )
    for split in ("test", "demo"):
        expected, schema = dataset_rows(settings, split=split, limit=1, seeds=[3, 4])
        assert pq.read_table(out / f"{split}.parquet").to_pylist() == expected
    [tool] = yaml.safe_load((out / "tool_config.yaml").read_text())["tools"]
    assert tool == {
        "class_name": "mimesis_gym.integrations.verl.MimesisTool",
        "config": settings.model_dump(mode="json"),
        "tool_schema": schema,
    }
    assert yaml.safe_load((out / "agent_loop.yaml").read_text()) == [
        {"name": AGENT_LOOP_NAME, "_target_": "mimesis_gym.integrations.verl_agent_loop.MimesisAgentLoop"}
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nosuch"], "nosuch"),
        (["telepathy", "--seeds", "1,x"], "argument --seeds: wants comma-separated integers >= 0, got '1,x'"),
        (["telepathy", "--split", "nosuchsplit"], "nosuchsplit"),
        (["telepathy", "--env-arg", "privileged=true"], "privileged"),
        (["telepathy", "--env-arg", "oops"], "--env-arg wants KEY=VALUE"),
        (["telepathy", "--user", "no-such-user"], "no-such-user"),
        (["telepathy", "--limit", "0"], "--limit"),
    ],
)
def test_verl_data_user_errors_are_one_line_and_exit_2(tmp_path, args, message):
    done = cli("verl-data", *args, "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


# ------------------------------------------------------------------------ the agent loop, with a scripted policy


class ScriptedPolicy:
    """verl's LLM server for the agent loop: writes the given tool calls in the hermes format, then plain text.

    The model is replaced by a script (as the scripted user replaces a user); everything between
    the policy's tokens and the env is verl's own: its tool parser, its token bookkeeping, its loop.
    """

    def __init__(self, tokenizer, calls: list[dict]) -> None:
        self.tokenizer, self.calls, self.prompts = tokenizer, list(calls), []

    async def generate(self, request_id, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.prompts.append(self.tokenizer.decode(prompt_ids))
        if self.calls:
            call = {"name": "interact_with_env", "arguments": self.calls.pop(0)}
            text = f"<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>"
        else:
            text = "I have nothing to ask.<|im_end|>"
        return TokenOutput(token_ids=self.tokenizer.encode(text, add_special_tokens=False))


def run_agent_loop(tmp_path, calls: list[dict], *, tools_kwargs: dict | None = None):
    """One trajectory of the first TelepathyGym test row through MimesisAgentLoop; (output, policy, row, tool)."""
    agent_loop = need_verl("verl.experimental.agent_loop.agent_loop")
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.tools.tool_registry import initialize_tools_from_config
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from mimesis_gym.core.tiny import ensure_tiny_model
    from mimesis_gym.integrations.verl_agent_loop import MimesisAgentLoop

    verl_root = os.path.dirname(agent_loop.__file__).rsplit(os.sep, 2)[0]
    config = OmegaConf.load(os.path.join(verl_root, "trainer", "config", "_generated_ppo_trainer.yaml"))
    config.actor_rollout_ref.rollout.prompt_length = 2048
    config.actor_rollout_ref.rollout.response_length = 4096
    tokenizer = AutoTokenizer.from_pretrained(str(ensure_tiny_model()))
    settings = ToolSettings(env_ids=[TELEPATHY])
    rows, schema = dataset_rows(settings, split="test", limit=1)
    tool_path, _ = write_configs(settings, schema, tmp_path)
    tools = initialize_tools_from_config(str(tool_path))
    policy = ScriptedPolicy(tokenizer, calls)
    loop = MimesisAgentLoop(
        trainer_config=agent_loop.DictConfigWrap(config),
        server_manager=policy,
        tokenizer=tokenizer,
        processor=None,
        dataset_cls=RLHFDataset,
        data_config=agent_loop.DictConfigWrap(config.data),
        tools=agent_loop.ToolListWrap(tools),
    )
    row = rows[0]
    prompt = [row["prompt"][0], {"role": "user", "content": ""}]  # the loop fills in the live opening
    tools_kwargs = row["extra_info"]["tools_kwargs"] if tools_kwargs is None else tools_kwargs
    kwargs = {"raw_prompt": prompt, "tools_kwargs": tools_kwargs, "extra_info": row["extra_info"]}
    output = loop.loop.run_until_complete(loop.run({"temperature": 1.0}, **kwargs))
    return output, policy, row, tools[0]


def test_the_agent_loop_plays_a_whole_episode_and_scores_it_like_gym_make(tmp_path):
    need_verl("verl.experimental.agent_loop.agent_loop")
    reference = gym.make(TELEPATHY, split="test", privileged=True)
    rows, _ = dataset_rows(ToolSettings(env_ids=[TELEPATHY]), split="test", limit=1)
    info = rows[0]["extra_info"]
    reference.reset(seed=info["seed"], options={"task_id": info["task_id"]})
    calls, observations, done = [], [], False
    for question in ["Is it an animal?", "Is it bigger than a cat?"]:
        calls.append({"choice": "action", "content": question})
        observations.append(reference.step(calls[-1])[0])
    while not done:
        calls.append(tool_args(reference.unwrapped.oracle_action()))
        obs, _, terminated, truncated, result = reference.step(calls[-1])
        observations.append(obs)
        done = terminated or truncated
    output, policy, row, tool = run_agent_loop(tmp_path, [*calls, {"choice": "action", "content": "after the end"}])
    assert output.reward_score == result["episode_score"] > 0
    assert output.extra_fields["mimesis_episode_score"] == result["episode_score"]
    assert output.extra_fields["mimesis_turns"] == len(calls) and output.extra_fields["mimesis_ended"] is True
    assert policy.calls == [{"choice": "action", "content": "after the end"}]  # the loop stopped when the env ended
    assert row["prompt"][1]["content"] in policy.prompts[0]  # the live opening observation is in the prompt
    text = policy.tokenizer.decode(output.response_ids)
    positions = [text.index(obs) for obs in observations]
    assert positions == sorted(positions)  # every observation reached the model, in order
    assert tool.instance_ids == []  # released


def test_a_trajectory_without_tool_calls_ends_and_is_scored_as_it_stands(tmp_path):
    output, policy, _, _ = run_agent_loop(tmp_path, [{"choice": "action", "content": "Is it an animal?"}])
    assert output.reward_score == 0.0
    assert output.extra_fields["mimesis_turns"] == 1 and output.extra_fields["mimesis_ended"] is False
    assert len(policy.prompts) == 2


def test_a_row_without_create_kwargs_is_refused_naming_the_fix(tmp_path):
    with pytest.raises(ConfigurationError, match="write the data with mimesis-gym verl-data"):
        run_agent_loop(tmp_path, [], tools_kwargs={"interact_with_env": {}})
