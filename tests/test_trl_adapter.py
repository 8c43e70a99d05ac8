"""The TRL adapter without a trainer: recipe checks, the tool TRL sees, episodes, the dataset, the reward.

docs/integrations.md, "TRL". The real ``GRPOTrainer`` run is ``tests/test_trl_training.py`` (slow).
"""

from __future__ import annotations

import inspect

import gymnasium as gym
import pytest

import mimesis_gym
from mimesis_gym.algorithms import testing as keyword_echo
from mimesis_gym.core.actions import ParsedAction, parse_action
from mimesis_gym.core.errors import UserUnavailableError
from mimesis_gym.integrations.episode import EnvRecipe, EpisodeOverError, ToolEpisode
from mimesis_gym.integrations.trl import (
    EnvironmentFactory,
    MimesisEnvironment,
    build_dataset,
    environment_factory,
    reward_function,
)
from tests.support.chat_models import ScriptedChatModel, refusal
from tests.support.echo_env import EchoEnv
from tests.test_env_recipe import wrapper_names

ALL_ENVS = [*mimesis_gym.ENV_IDS, keyword_echo.ENV_ID]
TELEPATHY = "mimesis/TelepathyGym-v0"


@pytest.fixture
def datasets_installed():
    pytest.importorskip("datasets", reason="build_dataset needs the extra `trl`")


def tool_args(action: str | dict) -> dict:
    """An env action (grammar string or tool-call dict) as ``interact_with_env`` arguments."""
    if isinstance(action, dict):
        return {"choice": action["choice"], "content": action.get("content", "")}
    parsed = parse_action(action, {"action", "search", "answer", "finish"})
    assert isinstance(parsed, ParsedAction), action
    return {"choice": parsed.tag, "content": parsed.content}


# ------------------------------------------------------------------------ the recipe


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"env_id": "mimesis/NoSuchGym-v0"}, "unknown env id 'mimesis/NoSuchGym-v0'"),
        ({"env_id": "no_such_module:x/Y-v0"}, "cannot import module 'no_such_module'"),
        ({"env_id": TELEPATHY, "env_kwargs": {"user": "scripted"}}, "pass the user as user="),
        ({"env_id": TELEPATHY, "env_kwargs": {"privileged": True}}, "never expose privileged information"),
        ({"env_id": "mimesis/TelepathyDiscrete-v0"}, "is not a conversation env"),
        ({"env_id": TELEPATHY, "max_episode_steps": 0}, "greater than or equal to 1"),
        ({"env_id": TELEPATHY, "surprise": 1}, "Extra inputs are not permitted"),
        ({"env_id": TELEPATHY, "env_kwargs": {"splitt": "test"}}, "takes no 'splitt'; it takes .*split"),
    ],
)
def test_a_bad_recipe_fails_at_construction_with_the_fix(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EnvRecipe(**kwargs)


def test_an_unknown_user_alias_fails_when_the_factory_is_built():
    with pytest.raises(ValueError, match="no-such-user"):
        environment_factory(TELEPATHY, user="no-such-user")


def test_a_recipe_takes_the_envs_own_and_gym_makes_keywords():
    recipe = EnvRecipe(
        env_id=TELEPATHY, env_kwargs={"split": "test", "disable_env_checker": False, "reward_profile": "train"}
    )
    env = recipe.make()
    assert env.unwrapped.reward_profile == "train"
    env.close()


def test_a_module_prefixed_id_is_imported_first():
    recipe = EnvRecipe(env_id=f"mimesis_gym.algorithms.testing:{keyword_echo.ENV_ID}")
    env = recipe.make()
    assert env.spec.id == keyword_echo.ENV_ID
    env.close()


def test_recipe_envs_are_never_privileged_and_keep_the_turn_limit_override():
    recipe = EnvRecipe(env_id=TELEPATHY, env_kwargs={"privileged": False}, max_episode_steps=2)
    env = recipe.make()
    assert env.unwrapped.privileged is False and env.spec.max_episode_steps == 2
    env.close()


def test_recipe_envs_keep_the_time_limit_without_the_checker_and_order_wrappers():
    env = EnvRecipe(env_id=TELEPATHY, max_episode_steps=2).make()
    assert wrapper_names(env) == ["TimeLimit"]
    env.reset(seed=0)
    assert env.step("[action] Is it alive?")[3] is False
    assert env.step("[action] Is it a place?")[3] is True  # truncated by the TimeLimit at 2 turns
    env.close()
    checked = EnvRecipe(env_id=TELEPATHY, env_kwargs={"disable_env_checker": False}).make()
    assert wrapper_names(checked) == ["TimeLimit", "PassiveEnvChecker"]
    checked.close()


# ------------------------------------------------------------------------ the tool TRL sees


@pytest.mark.parametrize("env_id", ALL_ENVS)
def test_the_tool_trl_builds_is_the_envs_own_schema(env_id):
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema

    factory = environment_factory(env_id)
    environment = factory()
    # TRL's rule: every public function of the class except reset (and get_reward) is a tool.
    public = [name for name, _ in inspect.getmembers(type(environment), inspect.isfunction) if not name.startswith("_")]
    assert public == ["interact_with_env", "reset"]
    schema = get_json_schema(environment.interact_with_env)
    assert schema == factory.tool_schema
    advertised = environment.episode.env.unwrapped.tools
    assert schema == (advertised[0] if advertised else factory.tool_schema)
    assert set(schema["function"]["parameters"]["properties"]["choice"]["enum"]) <= {
        "action",
        "search",
        "answer",
        "finish",
    }
    factory.close()


def test_the_tool_renders_into_a_tool_calling_chat_template():
    from mimesis_gym.core.tiny import TinyModelUnavailable, ensure_tiny_model

    trl = pytest.importorskip("trl.chat_template_utils", reason="the extra `trl`")
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(ensure_tiny_model()))
    except TinyModelUnavailable as error:
        pytest.skip(str(error))
    tokenizer.chat_template = trl.qwen2_5_chat_template
    environment = environment_factory(TELEPATHY)()
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tools=[environment.interact_with_env], tokenize=False
    )
    assert '"name": "interact_with_env"' in text
    assert "Ask a yes-or-no question about the entity, or guess it." in text
    assert '"enum": ["action", "answer", "finish"]' in text


# ------------------------------------------------------------------------ episodes


@pytest.mark.parametrize("env_id", ["mimesis/FunctionGym-v0", TELEPATHY, "mimesis/TravelGym-v0"])
def test_an_oracle_episode_through_the_tool_matches_the_env_in_process(env_id):
    reference = gym.make(env_id, split="test", privileged=True)
    task_id = reference.unwrapped.task_pack.pool("test")[0].id
    obs, _ = reference.reset(seed=3, options={"task_id": task_id})
    environment = environment_factory(env_id)()
    assert environment.reset(prompt=[], task_id=task_id, seed=3, extra_column="ignored") == obs
    rewards, sent, seen, done = [], [], [obs], False
    while not done:
        args = tool_args(reference.unwrapped.oracle_action())
        obs, reward, terminated, truncated, info = reference.step(args)
        assert environment.interact_with_env(**args) == obs
        rewards.append(reward)
        sent.append(args)
        seen.append(obs)
        done = terminated or truncated
    episode = environment.episode
    assert (episode.actions, episode.observations) == (sent, seen)
    assert (episode.terminated, episode.truncated) == (terminated, truncated)
    assert episode.rewards == rewards and episode.episode_score == info["episode_score"] > 0
    assert episode.reward_sum == sum(rewards)
    with pytest.raises(EpisodeOverError, match="terminated after"):
        environment.interact_with_env(choice="action", content="one more")
    assert len(episode.actions) == len(rewards)  # the refused call did not step the env


def test_truncation_ends_the_episode_and_reset_starts_a_fresh_one():
    environment = environment_factory(TELEPATHY, max_episode_steps=2)()
    environment.reset(task_id="telepathy-demo-01", seed=0)
    assert environment.interact_with_env(choice="action", content="Is it an animal?") == "Yes"
    assert environment.interact_with_env(choice="action", content="Is it a bird?") == "No"
    assert environment.episode.truncated and not environment.episode.terminated
    with pytest.raises(EpisodeOverError, match="was truncated after 2 turns"):
        environment.interact_with_env(choice="action", content="Is it big?")
    environment.reset(task_id="telepathy-demo-01", seed=1)
    assert environment.episode.actions == [] and not environment.episode.done
    assert environment.episode.seed == 1


def test_malformed_arguments_cost_the_turn_like_in_process():
    environment = environment_factory(TELEPATHY)()
    environment.reset(task_id="telepathy-demo-01", seed=0)
    obs = environment.interact_with_env(choice="shout", content="hello")
    assert obs.startswith("Invalid action: the tool call's choice is 'shout'")
    assert environment.episode.rewards == [0.0] and len(environment.episode.actions) == 1


def test_reset_needs_task_id_and_seed_columns():
    environment = environment_factory(TELEPATHY)()
    with pytest.raises(ValueError, match=r"no seed column.*trl\.build_dataset"):
        environment.reset(prompt=[], task_id="telepathy-demo-01")
    with pytest.raises(ValueError, match="task_id must be a non-empty string"):
        environment.reset(task_id=None, seed=0)
    with pytest.raises(EpisodeOverError, match="has not started"):
        environment.interact_with_env(choice="action", content="Is it big?")


def test_the_factory_serves_its_probe_env_first_and_closes_every_env():
    factory = environment_factory(TELEPATHY)
    probe = factory._spare
    first, second = factory(), factory()
    assert first.episode is probe and second.episode is not probe
    assert type(first) is type(second) and type(first).__name__ == "TelepathyGym_v0"
    assert isinstance(first, MimesisEnvironment) and factory.environments == [first, second]
    factory.close()
    assert all(env.episode.env.unwrapped._closed for env in (first, second))
    factory.close()  # idempotent


# ------------------------------------------------------------------------ the dataset


@pytest.mark.usefixtures("datasets_installed")
def test_dataset_rows_are_tasks_times_seeds_in_pack_order():
    dataset = build_dataset(TELEPATHY, split="test", limit=3, seeds=[5, 9])
    tasks = [task.id for task in gym.make(TELEPATHY).unwrapped.task_pack.pool("test")[:3]]
    assert dataset.column_names == ["prompt", "task_id", "seed"]
    assert dataset["task_id"] == [t for t in tasks for _ in (5, 9)]
    assert dataset["seed"] == [5, 9] * 3
    env = gym.make(TELEPATHY)
    env.reset(options={"task_id": tasks[0]})
    assert dataset[0]["prompt"] == [
        {"role": "system", "content": env.unwrapped.system_prompt},
        {"role": "user", "content": ""},
    ]


class PersonaEchoEnv(EchoEnv):
    """EchoEnv whose system prompt depends on a constructor argument."""

    def __init__(self, *, persona: str = "a friend", **common):
        super().__init__(**common)
        self.persona = persona

    def _system_prompt(self, task):
        return f"Talk to the listener as {self.persona}."


@pytest.mark.usefixtures("datasets_installed")
def test_dataset_of_a_factory_uses_its_kwargs_and_the_environment_column(clean_env_table):
    gym.register("test_trl/PersonaEcho-v0", entry_point=PersonaEchoEnv, max_episode_steps=4)
    factory = environment_factory("test_trl/PersonaEcho-v0", persona="a pirate")
    dataset = build_dataset(factory, split="test", environment="echo")
    assert dataset["task_id"] == ["e1", "e2"] and set(dataset["environment"]) == {"echo"}
    assert dataset[0]["prompt"][0]["content"] == "Talk to the listener as a pirate."
    plain = build_dataset("test_trl/PersonaEcho-v0", split="test")
    assert plain[0]["prompt"][0]["content"] == "Talk to the listener as a friend."
    assert "environment" not in plain.column_names


@pytest.mark.usefixtures("datasets_installed")
def test_building_the_dataset_of_an_llm_user_factory_never_calls_the_user():
    user = ScriptedChatModel(['{"thought": "", "response": "Yes"}'])
    factory = environment_factory(TELEPATHY, user=user, judge="scripted")
    dataset = build_dataset(factory, split="demo")
    assert len(dataset) == len(gym.make(TELEPATHY).unwrapped.task_pack.pool("demo")) and user.calls == []
    environment = factory()
    environment.reset(**dataset[0])
    assert environment.interact_with_env(choice="action", content="Is it big?") == "Yes"
    assert len(user.calls) == 1


@pytest.mark.usefixtures("datasets_installed")
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"limit": 0}, "limit must be a positive int"),
        ({"seeds": []}, "seeds must be a non-empty sequence of ints"),
        ({"seeds": [True]}, "seeds must be a non-empty sequence of ints"),
        ({"split": "nope"}, "has no split 'nope'"),
    ],
)
def test_dataset_arguments_are_checked(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_dataset(TELEPATHY, **kwargs)


@pytest.mark.usefixtures("datasets_installed")
def test_a_factory_and_env_kwargs_together_are_refused():
    with pytest.raises(ValueError, match="the factory's own kwargs apply"):
        build_dataset(environment_factory(TELEPATHY), split="demo", lenient_parsing=True)


@pytest.mark.usefixtures("datasets_installed")
@pytest.mark.parametrize("env_id", ALL_ENVS)
def test_prompts_hold_only_the_public_system_prompt_and_openings_no_secret(env_id):
    dataset = build_dataset(env_id, split="test", limit=3)
    environment = environment_factory(env_id)()
    reference = gym.make(env_id, split="test")
    for row in dataset:
        opening = environment.reset(**row)
        obs, _ = reference.reset(seed=row["seed"], options={"task_id": row["task_id"]})
        assert opening == obs
        assert row["prompt"] == [
            {"role": "system", "content": reference.unwrapped.system_prompt},
            {"role": "user", "content": ""},
        ]
        secrets = environment.episode.env.unwrapped.secret_texts()
        assert not [secret for secret in secrets if secret.lower() in opening.lower()], row["task_id"]
        assert environment.episode.env.unwrapped.privileged is False


# ------------------------------------------------------------------------ the reward


def played(env_id: str, actions: list[dict], **kwargs) -> MimesisEnvironment:
    environment = environment_factory(env_id, **kwargs)()
    environment.reset(task_id=environment.episode.env.unwrapped.task_pack.pool("test")[0].id, seed=0)
    for action in actions:
        environment.interact_with_env(**action)
    return environment


def test_reward_is_the_episode_score_or_the_summed_turn_rewards():
    travel = gym.make("mimesis/TravelGym-v0", split="test", privileged=True)
    travel.reset(seed=0, options={"task_id": travel.unwrapped.task_pack.pool("test")[0].id})
    actions = []
    for _ in range(3):  # two searches, one recommendation
        action = tool_args(travel.unwrapped.oracle_action())
        actions.append(action)
        travel.step(action)
    environment = played("mimesis/TravelGym-v0", actions)
    episode = environment.episode
    # TravelGym's score keeps each aspect's best answer; the turn rewards also count the searches.
    assert (episode.episode_score, episode.reward_sum) == (0.5, pytest.approx(1.4))
    score = reward_function()(completions=[[]], environments=[environment])
    summed = reward_function("turn_rewards")(completions=[[]], environments=[environment])
    assert (score, summed) == ([episode.episode_score], [episode.reward_sum])
    assert reward_function().__name__ == "mimesis_episode_score"
    assert reward_function("turn_rewards").__name__ == "mimesis_turn_rewards"


def test_user_failures_are_skipped_or_scored_and_logged():
    failing = played(TELEPATHY, [{"choice": "action", "content": "Is it big?"}], user=ScriptedChatModel([refusal()]))
    healthy = played(TELEPATHY, [{"choice": "action", "content": "Is it big?"}])
    assert failing.episode.user_failures == ["answerer:refusal"] and healthy.episode.user_failures == []
    metrics: dict[str, float] = {}
    log_metric = metrics.__setitem__
    skipped = reward_function()(completions=[[], []], environments=[failing, healthy], log_metric=log_metric)
    assert skipped == [None, 0.0]
    assert metrics == {"mimesis/user_failure_frac": 0.5, "mimesis/ended_frac": 0.0, "mimesis/turns_mean": 1.0}
    scored = reward_function(user_failures="score")(completions=[[], []], environments=[failing, healthy])
    assert scored == [0.0, 0.0]


def test_an_unavailable_user_stops_training_with_its_error():
    from mimesis_gym.core.http import EndpointConfig, OpenAIChatModel
    from mimesis_gym.users.serve import free_port

    base_url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    user = OpenAIChatModel(EndpointConfig(base_url=base_url, model="nobody", timeout_s=5), name="dead-user")
    environment = environment_factory(TELEPATHY, user=user, judge="scripted")()
    environment.reset(task_id="telepathy-demo-01", seed=0)
    with pytest.raises(UserUnavailableError):  # TRL turns this into an error message to the model...
        environment.interact_with_env(choice="action", content="Is it big?")
    assert environment.episode.actions == []
    with pytest.raises(EpisodeOverError, match="a step raised UserUnavailableError"):  # not stepped again
        environment.interact_with_env(choice="action", content="Is it small?")
    with pytest.raises(RuntimeError, match=r"telepathy-demo-01.*dead-user.*unavailable") as raised:
        reward_function()(completions=[[]], environments=[environment])  # ...the reward function raises it
    assert isinstance(raised.value.__cause__, UserUnavailableError)


def test_reward_function_arguments_are_checked():
    with pytest.raises(ValueError, match="kind must be"):
        reward_function("mean")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="user_failures must be"):
        reward_function(user_failures="drop")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pass environment_factory= to GRPOTrainer"):
        reward_function()(completions=[[]])


def test_other_environments_get_none():
    class Other:
        def reset(self, **row):
            return None

    environment = played(TELEPATHY, [])
    assert reward_function()(completions=[[], []], environments=[Other(), environment]) == [None, 0.0]


def test_the_episode_api_is_shared_by_the_adapters():
    episode = ToolEpisode(EnvRecipe(env_id=keyword_echo.ENV_ID))
    assert episode.start("test-00", 0) == "Reply with exactly one word: anchor"
    assert episode.act("action", "anchor") == "Thank you."
    assert (episode.terminated, episode.episode_score, episode.system_prompt) == (
        True,
        1.0,
        keyword_echo.SYSTEM_PROMPT,
    )
    assert isinstance(EnvironmentFactory(EnvRecipe(env_id=keyword_echo.ENV_ID))(), MimesisEnvironment)
    episode.close()
