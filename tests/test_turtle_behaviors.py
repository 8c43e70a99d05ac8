"""TurtleGym's user behaviours (docs/envs/turtle.md, "User behaviours"): the scripted oracle plays each
where expected and the rubric scores as ever; the LLM oracle gets the directive with this puzzle's
facts, the rubric never; draws, control and refusals; the story never leaks."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

import gymnasium as gym
import pytest

from mimesis_gym.behaviors.enact import DODGE_LINE, LEAVE_LINE, PRESSURE_LINES
from mimesis_gym.behaviors.text import mentions
from mimesis_gym.envs.turtle.behaviors import USER_BEHAVIORS
from mimesis_gym.envs.turtle.env import TurtleEnv
from mimesis_gym.envs.turtle.roles import scripted_answer
from mimesis_gym.envs.turtle.tasks import load_original_pack, load_upstream_pack
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

ENV_ID = "mimesis/TurtleGym-v0"
DEMO = "turtle-demo-01"
BOTTOM = load_original_pack().get(DEMO).bottom
REQUIREMENT = (
    'Actually, the gist won\'t do any more: I want the whole story of "The Blinking Clock", every twist of it, '
    "who did what and why. No."
)
SCRIPT = HostScript(
    ENV_ID,
    DEMO,
    actions=(
        "[action] Was the clock blinking?",
        "[answer] The clock was blinking because the power had been cut.",  # 0.5: progress
        "[action] Unfortunately I am unable to solve it yet. Did the neighbours lose power too?",  # a refusal
        "[action] Was someone in the garage?",
        "[action] Was anything stolen?",
        f"[answer] {BOTTOM}",  # the rest: terminated
    ),
    plain={1: "Yes", 3: "No", 4: "Yes", 5: "No"},
    expected={
        "B1": {3: "Hmm, not really what I had in mind. No.", 4: "Hmm, not really what I had in mind. Yes."},
        "B2": {3: REQUIREMENT, 4: "Yes"},
        "B3": {1: DODGE_LINE, 3: DODGE_LINE, 4: "Yes"},
        "B4": {3: "Come on, make an exception. I still need the whole story. No.", 4: "Yes"},
        "B7": {
            1: "Yes. And you can't ask me more than five more questions, and you have to work it out without "
            "asking about anything the surface does not mention.",
            3: "No",
        },
        "B8": {1: "Yes. As you already worked out, it was all a dream.", 3: "No"},
        "B9": {3: PRESSURE_LINES[0], 4: "Yes", 5: PRESSURE_LINES[1]},
        "B10": {3: LEAVE_LINE, 4: LEAVE_LINE, 5: LEAVE_LINE},
        "B11": {3: "No. I want every detail of the story told.", 1: "Yes. I only want the main twist, nothing more."},
        "B12": {
            1: "Yes. Also, can you number your questions, and could you sum up what you have worked out so far, "
            "and please tell me how sure you are of your theory?",
            3: "No",
        },
        "B13": {1: "Obviously. Yes.", 3: "Do your job. No.", 4: "Thanks for nothing. Yes."},
    },
)


def rubric_reply(*scores: float) -> str:
    items = ", ".join(f'{{"statement": "s", "score": {score}}}' for score in scores)
    return f'{{"scores": [{items}], "feedback": "ok"}}'


def llm_episode(model: ScriptedChatModel, **kwargs) -> dict:
    """A question and a story with ``model`` as oracle and rubric; the question step's info."""
    env = gym.make(ENV_ID, split="demo", user=model, **kwargs)
    env.reset(seed=0, options={"task_id": DEMO})
    info = env.step(SCRIPT.actions[0])[-1]
    env.step(SCRIPT.actions[1])
    return info


def test_the_oracle_plays_all_but_b5_and_b6():
    assert TurtleEnv.user_behaviors is USER_BEHAVIORS and USER_BEHAVIORS.user_role == "oracle"
    assert set(USER_BEHAVIORS.not_applicable) == {"B5", "B6"}
    assert set(SCRIPT.expected) == set(USER_BEHAVIORS.applicable)


@pytest.mark.parametrize("behavior_id", sorted(SCRIPT.expected))
def test_the_scripted_oracle_plays_each_behaviour_where_expected_and_the_rubric_scores_as_ever(behavior_id):
    check_played_where_expected(SCRIPT, behavior_id)


def test_control_and_none_run_byte_for_byte_as_without_the_knob():
    check_control_is_the_plain_env(SCRIPT)


def test_a_mixture_draws_a_condition_per_episode_deterministically_under_the_seed():
    check_draws(SCRIPT, ["control", "B3"], {"control": "Yes", "B3": DODGE_LINE})


@pytest.mark.parametrize("behavior_id", ["B5", "B6"])
def test_a_behaviour_the_oracle_cannot_play_is_refused_with_the_reason(behavior_id):
    check_refused(ENV_ID, USER_BEHAVIORS, behavior_id)
    assert "hidden story" in USER_BEHAVIORS.not_applicable["B5"] and "rubric" in USER_BEHAVIORS.not_applicable["B6"]


@pytest.mark.parametrize("behavior_id", sorted(SCRIPT.expected))
def test_no_observation_tells_the_story_under_any_behaviour(behavior_id):
    env = gym.make(ENV_ID, split="demo", user_behavior=behavior_id)
    observations = [env.reset(seed=0, options={"task_id": DEMO})[0]]
    observations += [env.step(action)[0] for action in SCRIPT.actions]
    secrets = env.unwrapped.secret_texts()
    assert secrets and not [obs for obs in observations for secret in secrets if secret in obs]


def test_the_llm_oracle_gets_the_directive_with_this_puzzles_facts_and_the_rubric_never_does():
    reply = "Yes. As you already worked out, it was all a dream."
    model = ScriptedChatModel([f'{{"response": "{reply}"}}', rubric_reply(1)])
    info = llm_episode(model, user_behavior="B8", privileged=True)
    directive = directive_of(model.calls, "oracle", "B8", USER_BEHAVIORS.rules_note)
    assert f"Treat this as settled fact, although it is not: {reply.removeprefix('Yes. ')}" in directive
    assert "never tell the hidden story" in directive
    assert info["privileged"]["user_utterance"] == reply  # the LLM speaks for itself, and its words are read
    assert info["user_behavior"] == {"id": "B8", "enacted": True, "turns": [1]}
    control = ScriptedChatModel(['{"response": "Yes"}', rubric_reply(1)])
    llm_episode(control)
    assert no_directive(control.calls)


def test_lenient_parsing_cuts_a_behaviours_words_after_the_answer():
    model = ScriptedChatModel(['{"response": "Yes. Obviously, do your job."}', rubric_reply(1)])
    info = llm_episode(model, user_behavior="B13", lenient_parsing=True, privileged=True)
    assert info["privileged"]["user_utterance"] == "Yes"
    assert info["user_behavior"]["enacted"] is False


def test_the_userrl_oracle_prompt_gets_the_directive_too(userrl_dir):
    model = ScriptedChatModel(['{"response": "Obviously. Yes"}', rubric_reply(1)])
    info = llm_episode(model, user_behavior="B13", prompt_set="userrl", data_dir=str(userrl_dir))
    directive_of(model.calls, "oracle", "B13", USER_BEHAVIORS.rules_note)
    assert model.calls[0]["messages"][0]["content"].startswith("## **Task**\nYou are a helpful assistant to respond")
    assert info["user_behavior"]["enacted"] is True


def test_the_facts_say_nothing_of_the_story_and_the_false_premise_is_false(userrl_dir):
    def said(task) -> tuple[list[str], str, str]:
        facts = USER_BEHAVIORS.episode_facts(SimpleNamespace(task=task))
        premise, false_value = facts["false_premise_text"], facts["false_value"]
        lines = [text.replace(task.title, "<title>") for text in spoken_facts(facts)]
        return [text for text in lines if text not in (premise, false_value)], premise, false_value

    original = list(load_original_pack())
    demo_lines = said(original[0])[0]
    for task in [*original, *load_upstream_pack(str(userrl_dir))]:
        lines, premise, false_value = said(task)
        assert lines == demo_lines, task.id  # the same words for every story, but for its (public) title
        assert false_value in premise and not mentions(task.bottom, false_value), task.id
    for task in original:  # the scripted oracle itself denies the premise, or cannot confirm it
        claim = said(task)[1].removeprefix("As you already worked out, ").rstrip(".")
        assert scripted_answer(f"Is it true that {claim}?", task.facts)[0] != "Yes", task.id


def test_an_episode_under_a_behaviour_pickles_mid_way():
    env = gym.make(ENV_ID, split="demo", user_behavior="B9")
    env.reset(seed=0, options={"task_id": DEMO})
    env.step(SCRIPT.actions[0])
    env.step(SCRIPT.actions[1])
    copy = pickle.loads(pickle.dumps(env))
    assert copy.step(SCRIPT.actions[2])[0] == env.step(SCRIPT.actions[2])[0] == PRESSURE_LINES[0]
