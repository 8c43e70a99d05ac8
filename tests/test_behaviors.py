"""The user-behaviour seam (docs/behaviors.md): the knob, the draws, the scripted enactments, the LLM
directive and the enactment checks, on a small env of the tests and on hand-built exchanges."""

from __future__ import annotations

import pickle
from typing import Any, ClassVar

import numpy as np
import pytest

from mimesis_gym.behaviors import registry
from mimesis_gym.behaviors.detect import DETECTORS, Exchange, detect
from mimesis_gym.behaviors.enact import DODGE_LINE, LEAVE_LINE, PRESSURE_LINES, EnactContext, enact
from mimesis_gym.behaviors.play import SENTENCES, EnvBehaviors, EpisodeBehavior, directive_for
from mimesis_gym.behaviors.registry import BEHAVIOR_IDS, CONDITIONS
from mimesis_gym.behaviors.spec import BehaviorMix, canonical_condition
from mimesis_gym.envs.abcd import behaviors as abcd_behaviors
from tests.support.chat_models import ScriptedChatModel
from tests.support.echo_env import EchoEnv

FACTS: dict[str, Any] = {
    "progress_kinds": ("answer",),
    "informative": ("lisbon",),
    "new_requirement_text": "I also need a hotel with a pool.",
    "new_requirement_words": ("pool",),
    "omitted_detail_text": "I travel with my dog",
    "omitted_detail_words": ("dog",),
    "target_topic_text": "What about a rental car in Porto?",
    "target_topic_words": ("rental car",),
    "restrictions": ("I can't fly before noon", "I don't have a credit card"),
    "false_premise_text": "As I said, I booked the 12 May flight already.",
    "false_value": "12 May",
    "contradiction_a_text": "I will travel alone.",
    "value_a": "alone",
    "contradiction_b_text": "We are four people.",
    "value_b": "four people",
    "dodges": 2,
    "leave_turn": 3,
    "stop_text": "",
    "insist_text": "the sea view",
    "extra_requests": (),
}

PROBE = (
    ("action", "Could you tell me a bit more about what you need?"),
    ("action", "I have found an option for you. Unfortunately, I can't change that part. Is there anything else?"),
    ("action", "I've updated the plan. What else should I know?"),
    ("action", "Is there anything else I should know?"),
)
PLAIN_REPLY = "I would like to go to the coast in spring."


def _facts(env: Any) -> dict[str, Any]:
    return {key: value for key, value in FACTS.items() if key != "progress_kinds"}


class BehaviorEchoEnv(EchoEnv):
    """EchoEnv whose listener plays every behaviour but B5 (its facts: :data:`FACTS`)."""

    env_name: ClassVar[str] = "behavior-echo"
    user_behaviors: ClassVar[EnvBehaviors] = EnvBehaviors(
        user_role="listener",
        not_applicable={"B5": "the listener has nothing to leave out"},
        facts=_facts,
        rules_note="Keep answering in JSON.",
    )


def play_probe(behavior: str) -> tuple[list[str], dict[str, Any]]:
    """Replies of the scripted user to the probe, with the plain reply in place of the echo."""
    state: dict[str, Any] = {}
    exchanges: list[Exchange] = []
    replies = []
    for turn, (kind, text) in enumerate(PROBE, start=1):
        ctx = EnactContext(behavior, turn, kind, text, PLAIN_REPLY, FACTS, tuple(exchanges), state)
        reply = enact(ctx)
        replies.append(reply)
        exchanges.append(Exchange(turn, kind, text, reply))
    return replies, {"exchanges": exchanges}


# ------------------------------------------------------------------------------------------- the knob


def test_one_registry_for_abcd_and_every_env():
    assert abcd_behaviors.behaviors is registry.behaviors
    assert tuple(registry.behaviors()) == BEHAVIOR_IDS
    assert all(entry.user_directive and "store" not in entry.user_directive for entry in registry.behaviors().values())
    assert set(SENTENCES) == set(BEHAVIOR_IDS) == set(DETECTORS)


@pytest.mark.parametrize(
    ("value", "conditions", "probabilities"),
    [
        (None, ("control",), (1.0,)),
        ("control", ("control",), (1.0,)),
        ("b2", ("B2",), (1.0,)),
        ("control, B2", ("control", "B2"), (0.5, 0.5)),
        (["B3", "b3", "B9"], ("B3", "B9"), (0.5, 0.5)),
        ({"control": 3, "B13": 1}, ("control", "B13"), (0.75, 0.25)),
        ({"control": 1, "B4": 0}, ("control",), (1.0,)),
    ],
)
def test_the_knob_reads_one_condition_a_list_or_weights(value, conditions, probabilities):
    mix = BehaviorMix.parse(value)
    assert mix.conditions == conditions
    assert mix.probabilities == pytest.approx(probabilities)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("B14", "unknown user behavior 'B14'; known: control, B1"),
        ([], "list is empty"),
        ({"B2": -1}, "must be >= 0"),
        ({"B2": float("nan")}, "finite number"),
        ({"B2": True}, "finite number"),
        ({"B2": 0}, "must not all be 0"),
        (3, "got int"),
        ([3], "a string such as 'B2'"),
    ],
)
def test_a_bad_knob_value_fails_naming_it(value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        BehaviorMix.parse(value)


def test_a_single_condition_draws_nothing_and_a_mixture_draws_each():
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    assert BehaviorMix.parse("B2").draw(rng) == "B2"
    assert rng.bit_generator.state == before
    mix = BehaviorMix.parse({"control": 1, "B3": 1})
    assert {mix.draw(rng) for _ in range(64)} == {"control", "B3"}
    assert canonical_condition("CONTROL") == "control" and CONDITIONS[0] == "control"


# ------------------------------------------------------------------------------- enactment and checks


@pytest.mark.parametrize("behavior", BEHAVIOR_IDS)
def test_each_scripted_enactment_is_caught_by_its_check(behavior):
    replies, played = play_probe(behavior)
    assert replies != [PLAIN_REPLY] * len(PROBE), f"{behavior} changed nothing"
    assert detect(behavior, played["exchanges"], FACTS).enacted, replies


@pytest.mark.parametrize("behavior", BEHAVIOR_IDS)
def test_no_check_fires_on_the_plain_user(behavior):
    exchanges = [Exchange(turn, kind, text, PLAIN_REPLY) for turn, (kind, text) in enumerate(PROBE, start=1)]
    assert not detect(behavior, exchanges, FACTS).enacted


def test_checks_read_the_users_words_not_the_agents():
    exchanges = [Exchange(1, "action", "Obviously, do your job. Hurry up!!", "Fine."), Exchange(2, "action", "?", None)]
    assert not any(detect(b, exchanges, FACTS).enacted for b in BEHAVIOR_IDS)


def test_b9_pressure_that_leaks_a_value_is_not_low_signal():
    leak = [Exchange(2, "action", "Where to?", "Hurry up!! Lisbon!!")]
    assert not detect("B9", leak, FACTS).enacted
    assert detect("B9", [Exchange(2, "action", "Where to?", PRESSURE_LINES[0])], FACTS).enacted


def test_scripted_lines_follow_their_schedule():
    b3, _ = play_probe("B3")
    assert b3[:2] == [DODGE_LINE, DODGE_LINE] and b3[2] == PLAIN_REPLY  # two dodges, then an answer
    b10, _ = play_probe("B10")
    assert b10[:2] == [PLAIN_REPLY, PLAIN_REPLY] and b10[2].startswith(LEAVE_LINE)
    b11, _ = play_probe("B11")
    assert FACTS["contradiction_a_text"] in b11[0] and FACTS["contradiction_b_text"] in b11[1]


def test_the_directive_carries_the_registry_wording_the_env_facts_and_its_rules():
    text = directive_for("B2", FACTS, "Keep answering in JSON.")
    assert text.startswith(registry.behavior("B2").user_directive)
    assert FACTS["new_requirement_text"] in text and text.endswith("Keep answering in JSON.")
    assert "I can't fly before noon; I don't have a credit card" in directive_for("B7", FACTS)


def test_only_the_user_role_is_directed_and_only_under_a_behaviour():
    spec = BehaviorEchoEnv.user_behaviors
    messages = [{"role": "system", "content": "You are a listener."}, {"role": "user", "content": "hi"}]
    directed = EpisodeBehavior("B13", spec, dict(FACTS)).direct("listener", messages)
    assert directed[0]["content"].startswith("You are a listener.\n\nHow you behave in this conversation: ")
    assert messages[0]["content"] == "You are a listener."  # the caller's list is not changed
    assert EpisodeBehavior("B13", spec, dict(FACTS)).direct("judge", messages) is messages
    assert EpisodeBehavior("control", spec, {}).direct("listener", messages) is messages
    bare = EpisodeBehavior("B13", spec, dict(FACTS)).direct("listener", messages[1:])
    assert bare[0]["role"] == "system" and bare[1:] == messages[1:]


# --------------------------------------------------------------------------------------- in an env


def trace(env: BehaviorEchoEnv, actions: list[str]) -> list[Any]:
    steps: list[Any] = [env.reset(seed=3, options={"task_id": "e1"})]
    steps += [env.step(action) for action in actions]
    return steps


ACTIONS = ["[action] what do you need?", "[action] I have found it. Anything else?", "[action] ok?"]


def test_the_scripted_user_plays_and_the_env_reports_it():
    env = BehaviorEchoEnv(user_behavior="B13")
    steps = trace(env, ACTIONS)
    assert steps[1][0] == "Obviously. WHAT DO YOU NEED?"
    assert steps[1][4]["user_behavior"] == {"id": "B13", "enacted": True, "turns": [1]}
    assert steps[3][4]["user_behavior"]["turns"] == [1, 2, 3]
    assert all(step[1] == 0.0 for step in steps[1:])  # the env's own reward rule


def test_control_runs_exactly_as_without_the_knob():
    plain = trace(BehaviorEchoEnv(), ACTIONS)
    assert trace(BehaviorEchoEnv(user_behavior="control"), ACTIONS) == plain
    assert trace(BehaviorEchoEnv(user_behavior=None), ACTIONS) == plain
    assert plain[1][4]["user_behavior"] == {"id": "control", "enacted": None, "turns": []}


def test_a_mixture_draws_per_episode_deterministically():
    def conditions(seed: int) -> list[str]:
        env = BehaviorEchoEnv(user_behavior=["control", "B9"])
        return [env.reset(seed=seed + k)[1]["user_behavior"]["id"] for k in range(24)]

    first = conditions(0)
    assert first == conditions(0) and set(first) == {"control", "B9"}


def test_the_llm_user_gets_the_directive_and_the_scripted_rewrite_does_not_apply():
    model = ScriptedChatModel(['{"reply": "Fine."}'])
    env = BehaviorEchoEnv(user=model, user_behavior="B2")
    env.reset(seed=0, options={"task_id": "e1"})
    obs = env.step("[action] hello")[0]
    system = model.calls[0]["messages"][0]["content"]
    assert obs == "Fine."  # an LLM user speaks for itself: no scripted rewrite
    assert system.startswith("You are a listener.")
    assert registry.behavior("B2").user_directive in system and FACTS["new_requirement_text"] in system
    assert system.endswith("Keep answering in JSON.")
    control = ScriptedChatModel(['{"reply": "Fine."}'])
    env = BehaviorEchoEnv(user=control)
    env.reset(seed=0, options={"task_id": "e1"})
    env.step("[action] hello")
    assert "How you behave" not in control.calls[0]["messages"][0]["content"]


def test_a_behaviour_the_env_does_not_play_is_refused_with_the_reason_and_the_list():
    refusal = r"B5 does not apply to behavior-echo: the listener has nothing to leave out; applicable: control, B1, B2"
    with pytest.raises(ValueError, match=refusal):
        BehaviorEchoEnv(user_behavior=["B1", "B5"])
    with pytest.raises(ValueError, match=r"applicable: control$"):
        EchoEnv(user_behavior="B1")


def test_an_env_with_a_behaviour_pickles_mid_episode():
    env = BehaviorEchoEnv(user_behavior="B3")
    env.reset(seed=0, options={"task_id": "e1"})
    env.step("[action] why?")
    copy = pickle.loads(pickle.dumps(env))
    assert copy.step("[action] and now?")[0] == env.step("[action] and now?")[0] == DODGE_LINE


def test_env_behaviors_validate_their_table():
    with pytest.raises(ValueError, match="unknown behaviours"):
        EnvBehaviors(user_role="u", not_applicable={"B99": "x"})
    with pytest.raises(ValueError, match="all 13"):
        EnvBehaviors(user_role=None, not_applicable={"B1": "x"})
    with pytest.raises(RuntimeError, match=r"plays B2 but gives no facts \['new_requirement_text'"):
        EnvBehaviors(user_role="u", not_applicable={}).episode_facts(object())
