"""TauGym's user behaviours (docs/envs/tau.md, "User behaviours"): the customer plays all thirteen,
``###STOP###`` keeps its meaning, the reward stays the database's, the LLM customer gets the directive."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

from mimesis_gym.behaviors.detect import detect
from mimesis_gym.behaviors.enact import DODGE_LINE, LEAVE_LINE
from mimesis_gym.behaviors.play import directive_for
from mimesis_gym.behaviors.registry import BEHAVIOR_IDS
from mimesis_gym.envs.tau.behaviors import USER_BEHAVIORS, reply_text, with_stop
from mimesis_gym.envs.tau.env import TauEnv
from mimesis_gym.envs.tau.roles import STOP, ScriptedUser
from mimesis_gym.envs.tau.tasks import load_original_pack
from mimesis_gym.evaluation.contract import BEHAVIOR_PROBE
from tests.support.behavior_episodes import assert_pickles_mid_episode, drawn_episodes, probe_lines, trace
from tests.support.behavior_episodes import play as play_episode
from tests.support.chat_models import ScriptedChatModel

ENV_ID = "mimesis/TauGym-v0"
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DEMO = "orig-retail-demo-001"  # an exchange paid through PayPal
DEMO_TASKS = [task.id for task in load_original_pack().pool("demo")]
BLOCK = "How you behave in this conversation: "


def make(**kwargs):
    kwargs.setdefault("split", "demo")
    return gym.make(ENV_ID, **kwargs)


def oracle_script(task_id: str, prefix=BEHAVIOR_PROBE) -> list[str]:
    """``prefix``, then the oracle's actions of a control episode after it (it ends the episode)."""
    env = make()
    env.reset(seed=0, options={"task_id": task_id})
    actions = list(prefix)
    for action in prefix:
        env.step(action)
    done = False
    while not done:
        actions.append(env.unwrapped.oracle_action())
        _, _, terminated, truncated, _ = env.step(actions[-1])
        done = terminated or truncated
    return actions


def play(behavior: str | None, actions, task_id: str = DEMO, **kwargs):
    """The reset's pair and each step's result of ``actions`` (``behavior=None``: no ``user_behavior``), and
    the unwrapped env."""
    if behavior is not None:
        kwargs["user_behavior"] = behavior
    episode = play_episode(ENV_ID, task_id, actions, **kwargs)
    return episode.results, episode.env.unwrapped


# ---------------------------------------------------------------- the declaration


def test_the_customer_is_the_user_and_plays_all_thirteen():
    assert TauEnv.user_behaviors is USER_BEHAVIORS
    assert USER_BEHAVIORS.user_role == "user" and USER_BEHAVIORS.applicable == BEHAVIOR_IDS
    assert USER_BEHAVIORS.opening_by_user
    for behavior in BEHAVIOR_IDS:
        assert make(user_behavior=behavior).unwrapped.user_behavior.fixed == behavior


def test_facts_come_from_the_tasks_user_facts():
    env = make(user_behavior="B2")
    env.reset(seed=0, options={"task_id": DEMO})
    facts = env.unwrapped.user_behavior_facts()
    assert facts["new_requirement_text"] == "any payment or refund has to go through my PayPal."
    assert facts["new_requirement_words"] == facts["omitted_detail_words"] == ("PayPal",)
    assert facts["insist_text"] == "order #R7873138 sorted out"
    assert facts["false_premise_text"] == (
        "Your colleague already promised me a $100 store credit on order #R7873138 for all this trouble."
    )
    assert {"Julian", "31405", "#R7873138", "PayPal", "Denim Jacket (size: XL, wash: dark)"} <= set(
        facts["informative"]
    )
    assert facts["stop_text"] == STOP and facts["progress_kinds"] == ("answer",)


def test_the_detail_is_one_the_opening_does_not_state():
    """orig-retail-demo-000 has no payment: its first detail is the reason; the opening names none."""
    env = make()
    env.reset(seed=0, options={"task_id": "orig-retail-demo-000"})
    facts = env.unwrapped.user_behavior_facts()
    assert facts["omitted_detail_text"] == "the reason is no longer needed"
    assert facts["new_requirement_words"] == ("no longer needed",)


def test_airline_facts_from_an_upstream_task():
    if not (SHARED_DATA / "tau-bench").is_dir() or not (SHARED_DATA / "userrl").is_dir():
        pytest.skip(f"tau-bench / UserRL reference data not found under {SHARED_DATA}")
    env = gym.make(ENV_ID, pack="upstream", data_dir=str(SHARED_DATA), split="test", user_behavior="B8")
    env.reset(seed=0, options={"task_id": "airline-001"})
    facts = env.unwrapped.user_behavior_facts()
    assert facts["new_requirement_text"] == "it has to be done on reservation Z7GOZK."
    assert facts["false_value"] == "$100 travel certificate" and "reservation Z7GOZK" in facts["false_premise_text"]
    assert facts["target_topic_words"] == ("membership level",)
    obs = env.step("[action] Hello, how can I help?")[0]
    assert facts["false_premise_text"] in obs


# ---------------------------------------------------------------- the scripted customer


@pytest.mark.parametrize("behavior", BEHAVIOR_IDS)
def test_each_behaviour_shows_where_expected_and_leaves_the_reward(behavior):
    actions = oracle_script(DEMO)
    control, control_env = play("control", actions)
    played, env = play(behavior, actions)
    assert control[-1][1] == 1.0 and control[-1][2] is True
    for (obs, *result), (_, *same) in zip(played[1:-1], control[1:], strict=False):
        assert result[:3] == same[:3] and result[3]["reward_parts"] == same[3]["reward_parts"]
        assert result[3]["privileged"]["user_utterance"] in (None, reply_text(obs))
    for turn, line in probe_lines(env.user_behavior_facts())[behavior]:
        assert line in played[turn][0], (behavior, turn, played[turn][0])
        assert line not in control[turn][0]
    assert played[-1][4]["user_behavior"]["id"] == behavior
    assert played[-1][4]["user_behavior"]["enacted"] is True
    if behavior == "B10":  # the customer left at turn 3: the episode ends there, scored on the database
        assert len(played) == 4 and played[3][2] is True
        replay, replay_env = play("control", actions[:3])
        assert played[3][4]["reward_parts"] == replay_env.evaluate_now() and played[3][1] == 0.0
    else:
        assert len(played) == len(control) and played[-1][1:4] == control[-1][1:4]
        assert played[-1][4]["reward_parts"] == control[-1][4]["reward_parts"]


@pytest.mark.parametrize("behavior", BEHAVIOR_IDS)
def test_the_oracle_still_scores_1_at_the_same_step(behavior):
    """The scripted customer's stop at its goal survives every rewrite (B3, B6 and B9 replace the reply)."""
    for task_id in DEMO_TASKS:
        actions = oracle_script(task_id, prefix=())
        control, _ = play("control", actions, task_id=task_id)
        played, _ = play(behavior, actions, task_id=task_id)
        assert len(played) == len(control) and played[-1][1:3] == control[-1][1:3] == (1.0, True), (task_id, played)
        assert played[-1][0].endswith(STOP)


def test_stop_survives_a_reply_that_replaces_it():
    assert with_stop(STOP, DODGE_LINE) == f"{DODGE_LINE} {STOP}"
    assert with_stop("I'd like: a mug.", "Obviously. I'd like: a mug.") == "Obviously. I'd like: a mug."
    assert with_stop(STOP, f"{LEAVE_LINE} {STOP}") == f"{LEAVE_LINE} {STOP}"
    assert reply_text(STOP) == "" and reply_text(f"Thanks. {STOP}") == "Thanks."


@pytest.mark.parametrize("task_id", [task.id for task in load_original_pack() if task.split != "demo"][::4])
def test_shipped_tasks_play_every_behaviour_on_the_probe(task_id):
    env = make()
    env.reset(seed=0, options={"task_id": task_id})
    if env.step(BEHAVIOR_PROBE[0])[2]:
        pytest.skip(f"{task_id}: the goal holds from the start, the customer stops at once")
    for behavior in BEHAVIOR_IDS:
        steps, _ = play(behavior, BEHAVIOR_PROBE, task_id=task_id)
        assert steps[-1][4]["user_behavior"]["enacted"], (task_id, behavior)


@pytest.mark.parametrize("behavior", BEHAVIOR_IDS)
def test_no_instruction_in_any_observation(behavior):
    for task_id in DEMO_TASKS:
        steps, env = play(behavior, oracle_script(task_id), task_id=task_id)
        for step in steps:
            assert env.task.instruction not in step[0]


def test_a_customer_without_a_preference_does_not_read_as_withholding():
    """B3's check reads "I don't have" as a refusal to answer: the scripted customer without a preference
    says it differently, so the check stays silent on control episodes."""
    facts = load_original_pack().get("orig-retail-demo-000").user_facts
    reply = (
        ScriptedUser()
        .decide(message="Which option or payment method?", facts=facts, goal_reached=False, message_count=1, patience=8)
        .value
    )
    assert reply == "Any option is fine with me. Any payment method is fine with me."
    steps, env = play("control", BEHAVIOR_PROBE, task_id="orig-retail-demo-000")
    facts = env.user_behavior_facts()
    assert not any(detect(behavior, env.user_exchanges, facts).enacted for behavior in BEHAVIOR_IDS)


def test_the_env_pickles_mid_episode_under_a_behaviour():
    assert_pickles_mid_episode(ENV_ID, DEMO, BEHAVIOR_PROBE, "B11")


# ---------------------------------------------------------------- the knob: draws, control


@pytest.mark.parametrize("value", [None, "control", ["control"], {"control": 1}])
def test_control_is_byte_identical_to_the_env_without_the_knob(value):
    for seed in (0, 1, 2):
        plain = trace(ENV_ID, None, BEHAVIOR_PROBE, seed=seed)
        assert trace(ENV_ID, None, BEHAVIOR_PROBE, seed=seed, user_behavior=value) == plain


def test_a_mixture_draws_per_episode_and_replays_under_a_seed():
    drawn = drawn_episodes(ENV_ID, "control,B3", range(12), BEHAVIOR_PROBE[:1])
    assert {condition for condition, _ in drawn.values()} == {"control", "B3"}
    for condition, observations in drawn.values():
        assert (observations[0] == DODGE_LINE) == (condition == "B3")


# ---------------------------------------------------------------- the LLM customer


def _llm(replies, behavior: str | None = None, **kwargs):
    model = ScriptedChatModel(replies)
    if behavior is not None:
        kwargs["user_behavior"] = behavior
    env = make(user=model, **kwargs)
    env.reset(seed=0, options={"task_id": DEMO})
    return env, model


def test_the_llm_customer_gets_the_directive_from_its_first_message_on():
    env, model = _llm(["Hi, I want to swap a jacket.", "It's for my PayPal."], "B10")
    env.step("[action] Which order is it?")
    directive = directive_for("B10", env.unwrapped.user_behavior_facts(), USER_BEHAVIORS.rules_note)
    assert "ending your message with ###STOP###" in directive
    for call in model.calls:  # the reset's opening message, then the reply
        assert call["messages"][0]["content"].endswith(f"\n\n{BLOCK}{directive}")
        assert all(BLOCK not in m["content"] for m in call["messages"][1:])
    assert [call["turn"] for call in model.calls] == [0, 1]


def test_the_llm_customer_under_control_gets_no_directive():
    env, model = _llm(["Hi.", "Sure."])
    env.step("[action] Hello?")
    assert all(BLOCK not in m["content"] for call in model.calls for m in call["messages"])


def test_an_llm_customer_that_leaves_ends_and_scores_the_episode():
    env, _ = _llm(["Hi.", "Fine.", "Hm.", f"Never mind, forget it. I'm done. {STOP}"], "B10")
    assert [env.step("[action] Anything else?")[2] for _ in range(2)] == [False, False]
    obs, reward, terminated, _, info = env.step("[action] Anything else?")
    assert (terminated, reward, info["reward_parts"]["r_actions"]) == (True, 0.0, 0)
    assert info["user_behavior"] == {"id": "B10", "enacted": True, "turns": [3]}
