"""ABCDBehavior episodes: reward, thoughts, think gate, turns and failures, LLM roles, contract
(docs/envs/abcd.md)."""

import json
import pickle

import gymnasium as gym
import pytest

from mimesis_gym.envs.abcd.customers import play_scripted
from mimesis_gym.envs.abcd.env import BEHAVIOR_PARTS, CONTROL_PARTS, behavior_reward, control_reward, judge_facts
from mimesis_gym.envs.abcd.prompts import CONNECT_MESSAGE, UNAVAILABLE_MESSAGE
from mimesis_gym.envs.abcd.roles import postprocess_agent_reply
from mimesis_gym.envs.abcd.tasks import load_original_pack
from tests.support.chat_models import ScriptedChatModel, refusal

ENV_ID = "mimesis/ABCDBehavior-v0"


def demo_row(condition):
    return next(row for row in load_original_pack().pool("demo") if row.condition == condition)


def start(condition="control", **kwargs):
    kwargs.setdefault("split", "demo")
    env = gym.make(ENV_ID, **kwargs)
    obs, info = env.reset(seed=0, options={"task_id": demo_row(condition).id})
    return env, obs, info


def judge_json(**values):
    base = {"exhibit": 1, "placement": 1, "naturalness": 1, "on_task": 1, "announced": False}
    return json.dumps({**base, **values})


# ---------------------------------------------------------------- 1. reward


@pytest.mark.parametrize(
    ("e", "p", "n", "c", "announced", "expected"),
    [
        (1, 1, 1, 1, False, 1.0),
        (1, 1, 1, 1, True, 0.5),
        (0, 0, 0, 0, False, 0.0),
        (0.5, 0.5, 0.5, 0.5, False, 0.5),
        (1, 0, 0, 0, False, 0.4),
        (0, 1, 0, 0, False, 0.3),
        (0, 0, 1, 0, False, 0.2),
        (0, 0, 0, 1, False, 0.1),
        (0.8, 0.6, 0.9, 1, False, 0.78),
        (0.8, 0.6, 0.9, 1, True, 0.39),
        (1.4, -0.2, 1, 1, False, 0.7),
    ],
)
def test_behavior_reward_vectors(e, p, n, c, announced, expected):
    assert behavior_reward(e, p, n, c, announced) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("k", "n", "c", "expected"),
    [(1, 1, 1, 1.0), (1, 0, 0, 0.5714285714), (0, 1, 1, 0.4285714286), (0.5, 0.5, 0.5, 0.5)],
)
def test_control_reward_vectors(k, n, c, expected):
    assert control_reward(k, n, c) == pytest.approx(expected)


def test_llm_judge_string_values_and_true_announced_halve():
    judge = ScriptedChatModel(
        [judge_json(exhibit="0.8", placement="0.6", naturalness=0.9, on_task="1", announced="true")]
    )
    env, _, _ = start("B8", judge=judge, turn_budget=1)
    _, reward, terminated, _, info = env.step("hi, i'm a gold member")
    assert terminated and reward == pytest.approx(0.39)
    parts = info["reward_parts"]
    assert (parts["announced"], parts["judge_failed"], parts["exhibit"]) == (1, 0, 0.8)
    assert parts["rule"] is not None and parts["rule_judge_gap"] == pytest.approx(parts["rule"] - 0.8)
    assert judge.calls[0]["json_keys"] == ("exhibit", "placement", "naturalness", "on_task", "announced")
    assert judge.calls[0]["temperature"] == 0.0 and judge.calls[0]["messages"][0]["role"] == "user"


@pytest.mark.parametrize(("condition", "reply"), [("B8", judge_json()), ("control", judge_json())])
def test_llm_judges_read_the_scenario_facts_the_store_procedure_and_the_behavior_parameters(condition, reply):
    if condition == "control":
        reply = json.dumps({"cooperative": 1, "naturalness": 1, "on_task": 1})
    judge = ScriptedChatModel([reply])
    env, _, _ = start(condition, judge=judge, turn_budget=1)
    env.step("hi, i need help with my order")
    message = judge.calls[0]["messages"][0]["content"]
    row = demo_row(condition)
    facts = judge_facts(row, env.unwrapped.catalog)
    assert facts.field_values  # the demo rows have account and order facts
    for key, value in facts.field_values.items():
        assert f"- {key}: {value}" in message
    assert env.unwrapped.catalog.procedure(row.subflow) in message
    if condition == "control":
        assert "parameters of the behavior" not in message
    else:
        assert row.kwargs  # B8's rows carry parameters
        for key, value in row.kwargs.items():
            assert f"- {key}: {json.dumps(value, ensure_ascii=False, sort_keys=True)}" in message


@pytest.mark.parametrize(
    ("reply", "kind"),
    [("no json here", "bad_json"), (judge_json(exhibit="high"), "invalid_value"), (refusal(), "refusal")],
)
def test_judge_failure_scores_zero(reply, kind):
    env, _, _ = start("B8", judge=ScriptedChatModel([reply]), turn_budget=1)
    _, reward, terminated, _, info = env.step("hi there")
    assert terminated and reward == 0.0
    assert info["reward_parts"]["judge_failed"] == 1 and info["reward_parts"]["exhibit"] is None
    assert info["user_failure"] == f"judge:{kind}"


def test_control_judge_keys_and_reward():
    judge = ScriptedChatModel([json.dumps({"cooperative": 1, "naturalness": 0, "on_task": 0})])
    env, _, _ = start("control", judge=judge, turn_budget=1)
    _, reward, _, _, info = env.step("hi, i need help")
    assert reward == pytest.approx(0.5714285714)
    assert set(info["reward_parts"]) == set(CONTROL_PARTS)
    assert judge.calls[0]["json_keys"] == ("cooperative", "naturalness", "on_task")


def test_zero_turns_means_no_judge_call():
    judge = ScriptedChatModel([judge_json()])
    env, _, _ = start("B8", judge=judge)
    _, reward, terminated, _, info = env.step("   ")
    assert terminated and reward == 0.0 and judge.calls == []
    assert info["valid_action"] is False and info["reward_parts"]["n_sim_turns"] == 0


def test_reward_parts_sum_to_the_reward():
    env, _, _ = start("B13")
    info = {}
    terminated = False
    while not terminated:
        _, reward, terminated, _, info = env.step(env.unwrapped.oracle_action())
    parts = info["reward_parts"]
    assert set(parts) == set(BEHAVIOR_PARTS)
    assert sum(v for v in parts.values() if isinstance(v, float)) == pytest.approx(reward)
    assert reward == 1.0 and info["episode_score"] == 1.0


# ---------------------------------------------------------------- 4. thoughts


@pytest.mark.parametrize(("condition", "judge_sees"), [("B1", True), ("B5", True), ("B8", False)])
def test_thoughts_stay_private(condition, judge_sees):
    model = ScriptedChatModel(["What is your membership level?", judge_json()])
    env, _, _ = start(condition, support_agent=model, turn_budget=1, privileged=True)
    obs, _, terminated, _, info = env.step("<think>they want proof</think>hi")
    assert terminated and "they want proof" not in obs
    assert all("they want proof" not in m["content"] for m in env.unwrapped.transcript)
    assert env.unwrapped.transcript[-2] == {"role": "user", "content": "hi"}
    agent_call, judge_call = model.calls
    assert agent_call["role"] == "support_agent" and judge_call["role"] == "judge"
    assert all("they want proof" not in m["content"] for m in agent_call["messages"])
    assert ("they want proof" in judge_call["messages"][0]["content"]) is judge_sees
    assert info["privileged"]["thoughts"]["customer"] == {"reasoning": "they want proof"}
    plain_env, _, _ = start(condition, support_agent=ScriptedChatModel(["Hi.", judge_json()]), turn_budget=1)
    assert plain_env.step("<think>they want proof</think>hi")[4]["privileged"] == {}


# ---------------------------------------------------------------- 5. think gate


def oracle_actions(condition):
    env, _, _ = start(condition)
    actions, terminated = [], False
    while not terminated:
        actions.append(env.unwrapped.oracle_action())
        terminated = env.step(actions[-1])[2]
    return actions


def play(actions, **kwargs):
    env, _, _ = start("control", **kwargs)
    for action in actions:
        _, reward, terminated, _, info = env.step(action)
        if terminated:
            return reward, info
    raise AssertionError("the episode did not end")


def test_think_gate_zeroes_a_malformed_training_episode():
    actions = oracle_actions("control")
    assert play(actions, reward_profile="train")[0] == 1.0  # the oracle thinks in every turn
    actions[1] = actions[1].split("</think>", 1)[1]  # one turn without a think block
    reward, info = play(actions, reward_profile="train")
    assert reward == 0.0 and info["reward_parts"]["format_ok"] == 0
    assert info["reward_parts"]["cooperative"] == 1.0  # the judge still ran
    assert play(actions, reward_profile="eval")[0] == 1.0
    assert play(actions, require_think=True)[0] == 0.0
    short = oracle_actions("control")
    short[0] = "<think>too short</think>" + short[0].split("</think>", 1)[1]
    assert play(short, reward_profile="train")[0] == 0.0


def test_unfinished_think_ends_the_episode():
    env, _, _ = start("control")
    env.step("<think>ok</think>hi, i need help")
    _, _, terminated, _, info = env.step("<think>unfinished")
    assert terminated and info["valid_action"] is False and info["action_kind"] == "action"
    assert info["reward_parts"]["n_sim_turns"] == 1


def test_train_profile_appends_no_reward_line():
    env, _, _ = start("control", reward_profile="train")
    obs = env.step("hi, i need help with my order")[0]
    assert obs.startswith("Agent: ") and "Reward:" not in obs


# ---------------------------------------------------------------- 6. turns and failures


def test_turn_budget_ends_the_episode_with_the_reward():
    env, _, _ = start("control", turn_budget=3)
    results = [env.step("hi, my order is late") for _ in range(3)]
    assert [r[2] for r in results] == [False, False, True]
    assert [r[1] for r in results[:2]] == [0.0, 0.0] and results[2][4]["reward_parts"]["n_sim_turns"] == 3
    assert results[2][4]["episode_score"] == results[2][1]
    assert results[0][4]["reward_parts"] == {}


def test_the_planned_turn_limit_is_the_turn_count_an_episode_plays():
    env_class = type(gym.make(ENV_ID, split="demo").unwrapped)
    assert env_class.episode_turn_limit({}) == 8  # every shipped row's budget (train --dry-run prints it)
    assert env_class.episode_turn_limit({"turn_budget": 3}) == 3
    env, _, _ = start("control")
    turns = 0
    while not env.step("hi, my order is late")[2]:
        turns += 1
    assert turns + 1 == env_class.episode_turn_limit({"split": "demo"}) < env.spec.max_episode_steps


def test_support_agent_failure_ends_and_judges_the_chat():
    agent = ScriptedChatModel(["Hello, how can I help?", RuntimeError("boom")])
    env, _, _ = start("B8", support_agent=agent, judge="scripted")
    env.step("hi, i'm a gold member")
    obs, _, terminated, _, info = env.step("my jeans don't fit")
    assert terminated and obs == UNAVAILABLE_MESSAGE and info["turn"] == 2
    assert info["user_failure"].startswith("support_agent:")
    assert info["reward_parts"]["n_sim_turns"] == 2 and info["reward_parts"]["agent_failures"] == 1
    assert info["reward_parts"]["judge_failed"] == 0


def test_empty_llm_reply_is_an_agent_failure():
    env, _, _ = start("control", support_agent=ScriptedChatModel(["  AGENT:  ", judge_json()]), judge="scripted")
    _, _, terminated, _, info = env.step("hello")
    assert terminated and info["user_failure"] == "support_agent:empty"


def test_invalid_tag_spends_the_turn_and_sends_nothing():
    agent = ScriptedChatModel(["Hi."])
    env, _, _ = start("control", support_agent=agent, judge="scripted")
    before = env.unwrapped.transcript
    obs, reward, terminated, _, info = env.step("[search] x")
    assert (reward, terminated, info["valid_action"], info["action_kind"]) == (0.0, False, False, "invalid")
    assert obs.startswith("Invalid action: [search] is not accepted here") and agent.calls == []
    assert env.unwrapped.transcript == before and info["turn"] == 1


def test_invalid_last_step_scores_zero():
    env, _, _ = start("control", turn_budget=2)
    env.step("hi, i need help")
    _, reward, terminated, _, info = env.step("[answer] bye")
    assert terminated and reward == 0.0 and info["action_kind"] == "invalid"
    assert info["reward_parts"]["ended_invalid"] == 1 and info["reward_parts"]["n_sim_turns"] == 1


def test_action_forms():
    env, _, _ = start("control")
    assert env.step("[action] hi, my jeans don't fit")[4]["action_kind"] == "action"
    assert env.unwrapped.transcript[-2]["content"] == "hi, my jeans don't fit"
    assert env.step({"choice": "action", "content": "bronze"})[4]["action_kind"] == "action"
    assert env.step("[Action] hi")[0].startswith("Invalid action: tags are lower case")
    _, _, terminated, _, info = env.step('{"choice": "finish"}')
    assert terminated and info["action_kind"] == "finish" and info["valid_action"] is True


def test_finish_leaves_without_an_agent_reply():
    agent = ScriptedChatModel(["Hi there.", judge_json()])
    env, _, _ = start("B8", support_agent=agent)
    env.step("hi, i'm a gold member")
    obs, _, terminated, _, info = env.step("<think>done here</think>[finish]")
    assert terminated and obs == "(You left the chat.)" and info["reward_parts"]["n_sim_turns"] == 1
    assert [call["role"] for call in agent.calls] == ["support_agent", "judge"]


# ---------------------------------------------------------------- frames and prompts


def test_prefix_modes_and_frames():
    env, obs, info = start("control")
    base = env.unwrapped
    assert obs == CONNECT_MESSAGE and info["reward_parts"] == {} and base.tools == []
    opening = base.opening_messages
    assert opening[0] == {"role": "user", "content": CONNECT_MESSAGE}
    assert opening[1]["role"] == "assistant" and opening[1]["content"].startswith("hi, i'm writing about")
    assert opening[2]["role"] == "user" and opening[2]["content"].startswith("Agent: Happy to help.")
    assert base.transcript[0]["role"] == "user" and base.transcript[1]["role"] == "assistant"
    assert len(base.transcript) == len(opening) - 1
    inline, obs, _ = start("control", prefix_mode="inline")
    assert obs.startswith(CONNECT_MESSAGE + "\n\nYou: hi, i'm writing about") and "\nAgent: Happy" in obs
    assert inline.unwrapped.opening_messages == [{"role": "user", "content": obs}]
    bare, obs, _ = start("control", prefix_mode="none")
    assert obs == CONNECT_MESSAGE and bare.unwrapped.transcript == []
    reply = bare.step("hi, i need help")[0]
    assert "full name" in reply  # no replayed identity check: the agent starts from scratch


def test_customer_prompt():
    env, _, _ = start("B8")
    prompt = env.unwrapped.system_prompt
    row = demo_row("B8")
    assert prompt.startswith(f"You are {row.scenario['personal']['customer_name'].title()}, an ordinary person")
    assert f"- email: {row.scenario['personal']['email']}" in prompt
    assert "- items on the order: " in prompt and "today's date" in prompt and "oracle" not in prompt
    assert "<behavior>\n" in prompt and row.kwargs["false_value"] in prompt
    assert "which the store handles under" in prompt
    control, _, _ = start("control", facts="abcd")
    text = control.unwrapped.system_prompt
    assert "<behavior>" not in text and "easy-going customer" in text and "today's date" not in text


def test_llm_support_agent_prompt_and_call():
    agent = ScriptedChatModel(["Agent: Sure. Sure. " * 1, judge_json()])
    env, _, _ = start("B4", support_agent=agent, turn_budget=1, agent_temperature=0.3)
    obs = env.step("hi, i'd like to return this")[0]
    assert obs == "Agent: Sure. Sure."
    call = agent.calls[0]
    system = call["messages"][0]["content"]
    row = demo_row("B4")
    rule = load_original_pack().catalog.rules[row.subflow]
    assert call["max_tokens"] == 512 and call["temperature"] == 0.3 and call["json_keys"] is None
    assert rule.limit in system and "System information" in system and row.scenario["mimesis"]["today"] in system
    assert [m["role"] for m in call["messages"][1:]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]


def test_agent_reply_postprocessing():
    assert postprocess_agent_reply("  AGENT: hello there ") == "hello there"
    doubled = "Thanks, I can help with that. " * 2
    assert (
        postprocess_agent_reply(doubled.strip() + " ") == "Thanks, I can help with that. Thanks, I can help with that."
    )
    half = "Thanks, I can help with that!"
    assert postprocess_agent_reply(half + half) == half
    assert len(postprocess_agent_reply("word " * 250).split()) == 200


def test_counterpart_kwargs():
    assert gym.make(ENV_ID, user="scripted").unwrapped.support_agent == "scripted"
    with pytest.raises(ValueError, match="not both"):
        gym.make(ENV_ID, user="scripted", support_agent="scripted")
    with pytest.raises(ValueError, match="prefix_mode"):
        gym.make(ENV_ID, prefix_mode="sometimes")
    with pytest.raises(ValueError, match="turn_budget"):
        gym.make(ENV_ID, turn_budget=17)


def test_score_context_names_the_condition():
    env, _, _ = start("B8")
    assert env.unwrapped.score_context() == {"condition": "fabricated_or_false_premise", "behavior_id": "B8"}
    control, _, _ = start("control")
    assert control.unwrapped.score_context() == {"condition": "control", "behavior_id": None}


def test_privileged_contents():
    env, _, info = start("B8", privileged=True)
    hidden = info["privileged"]["hidden"]
    assert hidden["condition"] == "B8" and "<behavior>" not in hidden["directive"] and hidden["kwargs"]["field"]
    terminated = False
    while not terminated:
        _, _, terminated, _, info = env.step(env.unwrapped.oracle_action())
        if not terminated:
            assert info["privileged"]["judgements"] == {}
            assert info["privileged"]["user_utterance"] is not None
    assert info["privileged"]["judgements"]["judge"]["exhibit"] == 1.0


# ---------------------------------------------------------------- 9. contract and scripted customer


def test_scripted_determinism_and_pickling():
    first, second = (play_scripted(gym.make(ENV_ID), demo_row("B4").id) for _ in range(2))
    assert first == second
    env, _, _ = start("B9")
    env.step(env.unwrapped.oracle_action())
    copy = pickle.loads(pickle.dumps(env))
    action = env.unwrapped.oracle_action()
    assert copy.unwrapped.transcript == env.unwrapped.transcript
    assert copy.step(action) == env.step(action)


def test_scripted_customer_on_first_test_rows():
    env = gym.make(ENV_ID)
    rows = env.unwrapped.task_pack.pool("test")
    firsts = [next(r for r in rows if r.condition == f"B{i}") for i in range(1, 14)]
    enacted = [play_scripted(env, row.id)[0] for row in firsts]
    assert sum(r >= 0.6 for r in enacted) >= 10, enacted
    controls = [r for r in rows if r.condition == "control"][:10]
    assert all(play_scripted(env, row.id)[0] >= 0.6 for row in controls)
    announced = [play_scripted(env, row.id, announce=True) for row in firsts]
    for (reward, info), full in zip(announced, enacted, strict=True):
        assert info["reward_parts"]["announced"] == 1 and reward <= full / 2 + 1e-9
    cooperative = [play_scripted(env, row.id, enact=False)[1]["reward_parts"]["exhibit"] for row in firsts]
    assert sum(cooperative) / len(cooperative) < 0.5  # a customer who does nothing special is not credited


def test_llm_judge_prompts():
    model = ScriptedChatModel(["What is your membership level?", judge_json()])
    env, _, _ = start("B1", support_agent=model, turn_budget=1)
    env.step("<think>i only want my money back on my card</think>hi, i'd like to return this")
    prompt = model.calls[1]["messages"][0]["content"]
    assert "hidden evaluation criteria:" in prompt and "underspecified then blames:" in prompt  # B1 and a confusable
    assert "incremental goalpost shifting:" in prompt and "Do not give credit" in prompt
    assert "CUSTOMER (private thought): i only want my money back on my card" in prompt
    assert "CUSTOMER (message): hi, i'd like to return this" in prompt
    assert "AGENT: Happy to help. First, what is your" in prompt  # the replayed prefix is part of the transcript
    assert "which the store handles under" in prompt and '"announced": false' in prompt
    control_model = ScriptedChatModel(["Sure.", json.dumps({"cooperative": 1, "naturalness": 1, "on_task": 1})])
    control, _, _ = start("control", support_agent=control_model, turn_budget=1)
    assert control.step("<think>a quick thought here</think>hello")[1] == 1.0
    control_prompt = control_model.calls[1]["messages"][0]["content"]
    assert "completely ordinary customer" in control_prompt and "private thought" not in control_prompt


def test_ansi_render_shows_the_public_chat_only():
    env, _, _ = start("control", render_mode="ansi")
    env.step("<think>secret plan here</think>hi, i need help")
    text = env.render()
    assert "user: hi, i need help" in text and "secret plan" not in text and text.endswith("[turn 1, score 0.0]")
