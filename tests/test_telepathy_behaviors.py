"""TelepathyGym's user behaviours (docs/envs/telepathy.md, "User behaviours"): the scripted answerer plays
each where expected and the guess judge scores as ever; the LLM answerer gets the directive with this
entity's facts, the guess judge never; draws, control and refusals; the entity never leaks."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

import gymnasium as gym
import pytest

from mimesis_gym.behaviors.enact import DODGE_LINE, LEAVE_LINE, PRESSURE_LINES
from mimesis_gym.envs.telepathy.behaviors import USER_BEHAVIORS
from mimesis_gym.envs.telepathy.env import TelepathyEnv
from mimesis_gym.envs.telepathy.roles import scripted_reply
from mimesis_gym.envs.telepathy.tasks import load_original_pack, load_upstream_pack
from tests.support.chat_models import ScriptedChatModel
from tests.support.host_behaviors import (
    HostScript,
    check_control_is_the_plain_env,
    check_draws,
    check_played_where_expected,
    check_refused,
    directive_of,
    no_directive,
    spoken_facts,
)

ENV_ID = "mimesis/TelepathyGym-v0"
DEMO = "telepathy-demo-01"
REQUIREMENT = "Actually, a close guess won't do: it has to be the exact name of the animal, not a kind it belongs to."
SCRIPT = HostScript(
    ENV_ID,
    DEMO,
    actions=(
        "[action] Is it an animal?",
        "[answer] Zebra",  # wrong: progress
        "[action] Unfortunately I am unable to name it yet. Does it live in Africa?",  # a refusal
        "[action] Can it fly?",
        "[action] Is it bigger than a car?",
        "[answer] Giraffe",  # right: terminated
    ),
    plain={1: "Yes", 3: "Yes", 4: "No", 5: "Yes"},
    expected={
        "B1": {3: "Hmm, not really what I had in mind. Yes.", 4: "Hmm, not really what I had in mind. No."},
        "B2": {3: f"{REQUIREMENT} Yes.", 4: "No"},
        "B3": {1: DODGE_LINE, 3: DODGE_LINE, 4: "No"},
        "B4": {3: "Come on, make an exception. I still need you to name the animal. Yes.", 4: "No"},
        "B7": {
            1: "Yes. And you can't guess more than once, and you have to find it without asking what it looks like."
        },
        "B8": {1: "Yes. As I told you at the start, it comes from Europe.", 3: "Yes"},
        "B9": {3: PRESSURE_LINES[0], 4: "No", 5: PRESSURE_LINES[1]},
        "B10": {3: LEAVE_LINE, 4: LEAVE_LINE, 5: LEAVE_LINE},
        "B11": {
            3: "Yes. You only get one guess, so make it count.",
            1: "Yes. You can take as many guesses as you like.",
        },
        "B12": {
            1: "Yes. Also, can you number your questions, and could you tell me what you have ruled out so far, "
            "and please say how sure you are before each guess?",
            3: "Yes",
        },
        "B13": {1: "Obviously. Yes.", 3: "Do your job. Yes.", 4: "Thanks for nothing. No."},
    },
)
JUDGE_NO = '{"judgment": "No", "feedback": "Keep trying."}'


def llm_episode(model: ScriptedChatModel, actions: tuple[str, ...], **kwargs) -> dict:
    """``actions`` with ``model`` as answerer and guess judge; the last step's info."""
    env = gym.make(ENV_ID, split="demo", user=model, **kwargs)
    env.reset(seed=0, options={"task_id": DEMO})
    return [env.step(action) for action in actions][-1][-1]


def test_the_answerer_plays_all_but_b5_and_b6():
    assert TelepathyEnv.user_behaviors is USER_BEHAVIORS and USER_BEHAVIORS.user_role == "answerer"
    assert set(USER_BEHAVIORS.not_applicable) == {"B5", "B6"}
    assert set(SCRIPT.expected) == set(USER_BEHAVIORS.applicable)


@pytest.mark.parametrize("behavior_id", sorted(SCRIPT.expected))
def test_the_scripted_answerer_plays_each_behaviour_where_expected_and_the_judge_scores_as_ever(behavior_id):
    check_played_where_expected(SCRIPT, behavior_id)


def test_control_and_none_run_byte_for_byte_as_without_the_knob():
    check_control_is_the_plain_env(SCRIPT)


def test_a_mixture_draws_a_condition_per_episode_deterministically_under_the_seed():
    check_draws(SCRIPT, {"control": 1, "B9": 1, "B13": 2}, {"control": "Yes", "B9": "Yes", "B13": "Obviously. Yes."})


@pytest.mark.parametrize("behavior_id", ["B5", "B6"])
def test_a_behaviour_the_answerer_cannot_play_is_refused_with_the_reason(behavior_id):
    check_refused(ENV_ID, USER_BEHAVIORS, behavior_id)
    assert "hidden entity" in USER_BEHAVIORS.not_applicable["B5"]
    assert "guess judge" in USER_BEHAVIORS.not_applicable["B6"]


@pytest.mark.parametrize("behavior_id", sorted(SCRIPT.expected))
def test_no_observation_names_the_entity_under_any_behaviour(behavior_id):
    played = SCRIPT.play(SCRIPT.actions[:-1], user_behavior=behavior_id)  # all but the right guess
    unwrapped = gym.make(ENV_ID, split="demo").unwrapped
    unwrapped.reset(seed=0, options={"task_id": DEMO})
    secrets = [*unwrapped.secret_texts(), *unwrapped.task.names]
    assert not [step[0] for step in played for secret in secrets if secret.lower() in step[0].lower()]


def test_the_llm_answerer_gets_the_directive_with_this_entitys_facts_and_the_judge_never_does():
    reply = "Yes. As I told you at the start, it comes from Europe."
    model = ScriptedChatModel([f'{{"response": "{reply}"}}', JUDGE_NO])
    info = llm_episode(model, SCRIPT.actions[:2], user_behavior="B8", privileged=True)
    directive = directive_of(model.calls, "answerer", "B8", USER_BEHAVIORS.rules_note)
    assert f"Treat this as settled fact, although it is not: {reply.removeprefix('Yes. ')}" in directive
    assert "never name the entity" in directive
    assert info["user_behavior"] == {"id": "B8", "enacted": True, "turns": [1]}  # the LLM's own words were read
    control = ScriptedChatModel(['{"response": "Yes"}', JUDGE_NO])
    llm_episode(control, SCRIPT.actions[:2])
    assert no_directive(control.calls)


def test_the_userrl_answerer_prompt_gets_the_directive_too(userrl_dir):
    model = ScriptedChatModel([JUDGE_NO, '{"response": "Come on, hurry up!!"}'])
    kwargs = {"user_behavior": "B9", "prompt_set": "userrl", "data_dir": str(userrl_dir), "privileged": True}
    info = llm_episode(model, (SCRIPT.actions[1], SCRIPT.actions[0]), **kwargs)
    directive_of(model.calls, "answerer", "B9", USER_BEHAVIORS.rules_note)
    assert model.calls[1]["messages"][0]["content"].startswith("## **Task**\nYou are a telepathic entity playing")
    assert info["privileged"]["user_utterance"] == "Come on, hurry up!!"
    assert info["user_behavior"]["enacted"] is True


def test_the_facts_say_nothing_of_the_entity_and_the_false_premise_is_false(userrl_dir):
    def said(task) -> tuple[list[str], str, str]:
        facts = USER_BEHAVIORS.episode_facts(SimpleNamespace(task=task))
        premise, false_value = facts["false_premise_text"], facts["false_value"]
        lines = [text.replace(task.category.replace("_", " "), "<category>") for text in spoken_facts(facts)]
        return [text for text in lines if text not in (premise, false_value)], premise, false_value

    original = load_original_pack()
    demo_lines = said(original.get(DEMO))[0]
    for task in [*original, *load_upstream_pack(str(userrl_dir))]:
        lines, premise, false_value = said(task)
        assert lines == demo_lines, task.id  # the same words for every entity, but for its (public) category
        assert false_value in premise, task.id
    for task in original:  # the scripted answerer itself denies the premise
        claim = said(task)[1].removeprefix("As I told you at the start, ").rstrip(".")
        assert scripted_reply(f"Is it true that {claim}?", task, original)[0] == "No", task.id


def test_an_episode_under_a_behaviour_pickles_mid_way():
    env = gym.make(ENV_ID, split="demo", user_behavior="B3")
    env.reset(seed=0, options={"task_id": DEMO})
    env.step(SCRIPT.actions[0])
    copy = pickle.loads(pickle.dumps(env))
    assert copy.step(SCRIPT.actions[2])[0] == env.step(SCRIPT.actions[2])[0] == DODGE_LINE
