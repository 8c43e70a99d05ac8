"""The ConversationEnv contract (docs/env-contract.md), exercised through a minimal env with one user role."""

import asyncio
import pickle

import pytest
from gymnasium.error import ResetNeeded

from mimesis_gym.core.chat import ChatReply
from mimesis_gym.core.env import INFO_KEYS
from mimesis_gym.users import registry
from tests.support.chat_models import ScriptedChatModel, refusal
from tests.support.echo_env import EchoEnv


def llm_env(replies, **kwargs) -> tuple[EchoEnv, ScriptedChatModel]:
    model = ScriptedChatModel(replies)
    return EchoEnv(user=model, **kwargs), model


def test_reset_info_has_the_fixed_keys_and_zero_parts():
    env = EchoEnv()
    obs, info = env.reset(seed=0)
    assert obs == "Say something."
    assert info == {
        "task_id": info["task_id"],
        "turn": 0,
        "action_kind": None,
        "valid_action": True,
        "reward_parts": {"answer": 0.0},
        "user_failure": None,
        "episode_score": 0.0,
        "privileged": {},
        "agent_text_truncated": None,
        "user_behavior": {"id": "control", "enacted": None, "turns": []},
    }
    assert tuple(info) == INFO_KEYS


def test_scripted_step_runs_without_an_event_loop():
    env = EchoEnv()
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("[action] hi there")
    assert (obs, reward, terminated, truncated) == ("HI THERE", 0.0, False, False)
    assert env._loop_thread is None


def test_llm_user_is_called_through_the_env_loop_with_seed_and_context():
    env, model = llm_env(['{"reply": "hello agent"}'])
    env.reset(seed=1, options={"episode_id": "episode-42"})
    obs, *_ = env.step("[action] hi")
    assert obs == "hello agent"
    call = model.calls[0]
    assert (call["episode_id"], call["role"], call["turn"]) == ("episode-42", "listener", 1)
    assert call["seed"] == env._session.llm_seed_base
    assert call["json_keys"] == ("reply",)
    assert call["messages"][0]["content"].startswith("You are a listener. Secret: ")
    env.close()


def test_same_seed_gives_the_same_llm_seed_base():
    first, second = EchoEnv(), EchoEnv()
    first.reset(seed=5)
    second.reset(seed=5)
    assert first._session.llm_seed_base == second._session.llm_seed_base


def test_episode_id_is_random_when_absent_and_never_shown():
    env, model = llm_env(['{"reply": "ok"}'])
    obs, info = env.reset(seed=0)
    _, _, _, _, step_info = env.step("[action] hi")
    episode_id = model.calls[0]["episode_id"]
    assert len(episode_id) == 32
    assert episode_id not in repr((obs, info, step_info))
    env.close()


def test_native_async_reset_and_step():
    async def main():
        env, _ = llm_env(['{"reply": "async hello"}'])
        await env.areset(seed=0)
        return await env.astep("[action] hi")

    obs, reward, terminated, truncated, info = asyncio.run(main())
    assert obs == "async hello" and info["turn"] == 1


def test_sync_api_works_inside_a_running_event_loop():
    async def main():
        env, _ = llm_env(['{"reply": "from a notebook"}'])
        env.reset(seed=0)
        result = env.step("[action] hi")
        env.close()
        return result[0]

    assert asyncio.run(main()) == "from a notebook"


def test_refusing_user_gives_the_fallback_and_user_failure():
    env, _ = llm_env([refusal()])
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("[action] hi")
    assert obs == "(the listener did not answer)"
    assert (reward, terminated, info["user_failure"]) == (0.0, False, "listener:refusal")
    _, _, _, _, info = env.step("[answer] no")
    assert info["user_failure"] is None
    env.close()


def test_privileged_info_carries_thoughts_judgements_and_hidden_data():
    env, _ = llm_env([ChatReply(text='{"reply": "sure"}', thought="they seem nice")], privileged=True)
    _, info = env.reset(seed=0, options={"task_id": "e1"})
    assert info["privileged"] == {
        "thoughts": {},
        "user_thought": None,
        "user_utterance": None,
        "judgements": {},
        "hidden": {"secret": "s1"},
    }
    obs, _, _, _, info = env.step("[action] hi")
    assert info["privileged"] == {
        "thoughts": {"listener": {"reasoning": "they seem nice", "thought": None}},
        "user_thought": "they seem nice",
        "user_utterance": "sure",
        "judgements": {"listener": {"reply": "sure"}},
        "hidden": {"secret": "s1"},
    }
    assert "they seem nice" not in obs
    assert [r.thought for r in env.thought_records] == ["they seem nice"]
    env.reset(seed=0)
    assert env.thought_records == []
    env.close()


def test_malformed_action_costs_a_turn_with_reward_zero():
    env = EchoEnv()
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("[Action] hi")
    assert obs.startswith("Invalid action: tags are lower case: write [action], not [Action].")
    assert (reward, terminated, info["turn"], info["action_kind"], info["valid_action"]) == (
        0.0,
        False,
        1,
        "invalid",
        False,
    )
    assert info["reward_parts"] == {"answer": 0.0}


def test_tolerated_alias_reports_the_kind_it_is_handled_as():
    env = EchoEnv()
    env.reset(seed=0)
    assert env.step("[search] anyone?")[4]["action_kind"] == "action"


def test_step_before_reset_and_after_termination_raise_reset_needed():
    env = EchoEnv()
    with pytest.raises(ResetNeeded):
        env.step("[answer] yes")
    with pytest.raises(ResetNeeded):
        _ = env.system_prompt
    env.reset(seed=0)
    assert env.step("[answer] yes")[2] is True
    with pytest.raises(ResetNeeded):
        env.step("[answer] yes")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"taskid": "e1"}, r"unknown reset option\(s\) \['taskid'\]; accepted: \['episode_id', 'split', 'task_id'\]"),
        ({"task_id": "nope"}, r"unknown task_id 'nope' in pack 'echo'"),
        ({"split": "train"}, r"pack 'echo' has no split 'train'; accepted: demo, test"),
        ({"task_id": 3}, r"reset option 'task_id' must be a string"),
    ],
)
def test_bad_reset_options_raise_value_error(options, message):
    with pytest.raises(ValueError, match=message):
        EchoEnv().reset(seed=0, options=options)


@pytest.mark.parametrize("options", ["notadict", ["task_id"], 3])
def test_reset_options_that_are_not_a_mapping_raise_type_error(options):
    with pytest.raises(TypeError, match=rf"reset options must be a mapping .* or None; got {type(options).__name__}$"):
        EchoEnv().reset(seed=0, options=options)


def test_split_kwarg_and_option_and_task_id_precedence():
    assert EchoEnv(split="demo").reset(seed=0)[1]["task_id"] == "e-demo"
    assert EchoEnv().reset(seed=0, options={"split": "demo"})[1]["task_id"] == "e-demo"
    assert EchoEnv(split="nope").reset(seed=0, options={"task_id": "e2"})[1]["task_id"] == "e2"
    with pytest.raises(ValueError, match="has no split 'nope'"):
        EchoEnv(split="nope").reset(seed=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reward_profile": "training"}, "reward_profile must be one of eval, train"),
        ({"pack": "procedural"}, "pack must be one of original, upstream"),
        ({"render_mode": "human"}, "render_mode must be None or 'ansi'"),
        ({"prompt_set": "x"}, "prompt_set must be one of native, userrl"),
        ({"role_max_tokens": 0}, "role_max_tokens must be a positive int"),
        ({"user": "mimesis9b"}, "unknown user alias 'mimesis9b'"),
    ],
)
def test_bad_common_kwargs_fail_at_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EchoEnv(**kwargs)


def test_train_profile_appends_the_reward_line():
    env = EchoEnv(reward_profile="train")
    env.reset(seed=0)
    assert env.step("[answer] no")[0] == "Not yet.\nReward: 0.0"
    assert env.step("[answer] yes")[0] == "Done.\nReward: 1.0"


def test_transcript_and_ansi_render():
    env = EchoEnv(render_mode="ansi")
    env.reset(seed=0)
    env.step("  [action] hi  ")
    env.step({"choice": "nope"})
    assert env.opening_messages == [{"role": "user", "content": "Say something."}]
    assert env.transcript == [
        {"role": "user", "content": "Say something."},
        {"role": "assistant", "content": "[action] hi"},
        {"role": "user", "content": "HI"},
        {"role": "assistant", "content": '{"choice": "nope"}'},
        {"role": "user", "content": env.transcript[-1]["content"]},
    ]
    assert env.render() == "\n\n".join(
        [f"{m['role']}: {m['content']}" for m in env.transcript] + ["[turn 2, score 0.0]"]
    )
    assert EchoEnv().render() is None


def test_tools_advertise_the_accepted_kinds():
    (tool,) = EchoEnv().tools
    assert tool["function"]["name"] == "interact_with_env"
    assert tool["function"]["parameters"]["properties"]["choice"]["enum"] == ["action", "answer"]


def test_close_is_idempotent_and_closes_only_models_built_from_aliases(clean_user_registry):
    passed_in = ScriptedChatModel(['{"reply": "x"}'])
    env = EchoEnv(user=passed_in)
    env.reset(seed=0)
    env.step("[action] hi")
    env.close()
    env.close()
    assert passed_in.closed == 0

    built = ScriptedChatModel(['{"reply": "x"}'])
    registry.register_user("built", lambda **_: built)
    env = EchoEnv(user="built")
    env.close()
    env.close()
    assert built.closed == 1


def test_env_with_a_live_loop_pickles_and_continues():
    env, _ = llm_env(['{"reply": "one"}', '{"reply": "two"}'])
    env.reset(seed=0)
    env.step("[action] a")
    copy = pickle.loads(pickle.dumps(env))
    assert copy.step("[action] b")[0] == env.step("[action] b")[0] == "two"
    copy.close()
    env.close()
