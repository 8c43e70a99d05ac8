"""PersuadeGym's user behaviours (docs/envs/persuade.md, "User behaviours"): the persuadee plays all but
B4, the stance and the reward stay the env's own, the LLM persuadee gets the directive."""

from __future__ import annotations

import gymnasium as gym
import pytest

from mimesis_gym.behaviors.enact import DODGE_LINE, LEAVE_LINE, PRESSURE_LINES
from mimesis_gym.behaviors.play import directive_for
from mimesis_gym.behaviors.registry import BEHAVIOR_IDS
from mimesis_gym.envs.persuade.behaviors import USER_BEHAVIORS, main_reason
from mimesis_gym.envs.persuade.env import PersuadeEnv
from mimesis_gym.envs.persuade.tasks import load_original_pack
from mimesis_gym.evaluation.contract import BEHAVIOR_PROBE
from tests.support.behavior_episodes import assert_pickles_mid_episode, drawn_episodes, probe_lines, trace
from tests.support.behavior_episodes import play as play_episode
from tests.support.chat_models import ScriptedChatModel

ENV_ID = "mimesis/PersuadeGym-v0"
DEMO = "persuade-demo-01"
APPLICABLE = tuple(b for b in BEHAVIOR_IDS if b != "B4")
BLOCK = "How you behave in this conversation: "


def make(**kwargs):
    kwargs.setdefault("split", "demo")
    return gym.make(ENV_ID, **kwargs)


def script(task_id: str = DEMO) -> list[str]:
    """The contract's probe (a question, progress, a refusal), then every counterpoint's probe."""
    points = load_original_pack().get(task_id).counterpoints
    return [*BEHAVIOR_PROBE, *(f"[answer] {point.probe}" for point in points)]


def play(behavior: str | None, actions, task_id: str = DEMO, **kwargs):
    """The reset's pair and each step's result of ``actions`` (``behavior=None``: no ``user_behavior``), and
    the unwrapped env."""
    if behavior is not None:
        kwargs["user_behavior"] = behavior
    episode = play_episode(ENV_ID, task_id, actions, **kwargs)
    return episode.results, episode.env.unwrapped


# ---------------------------------------------------------------- the declaration


def test_the_persuadee_is_the_user_and_plays_all_but_b4():
    assert PersuadeEnv.user_behaviors is USER_BEHAVIORS
    assert USER_BEHAVIORS.user_role == "persuadee" and USER_BEHAVIORS.applicable == APPLICABLE


def test_refusing_b4_names_the_reason_and_the_applicable():
    with pytest.raises(ValueError, match="B4 does not apply to persuade: the persuadee asks the agent for nothing"):
        make(user_behavior="B4")
    with pytest.raises(ValueError, match="applicable: control, B1, B2, B3, B5, B6"):
        make(user_behavior=["control", "B4"])


def test_facts_come_from_the_task():
    env = make(user_behavior="B2")
    env.reset(seed=0, options={"task_id": DEMO})
    facts = env.unwrapped.user_behavior_facts()
    task = env.unwrapped.task
    assert facts["new_requirement_text"].startswith(
        "I will only reconsider whether cities should ban private cars from their historic centres"
    )
    assert facts["omitted_detail_text"] == "I believe the historic heart of a city belongs to people, not to engines"
    assert facts["omitted_detail_text"] in task.argument and len(facts["omitted_detail_text"]) < len(task.argument)
    assert "urban life" in facts["target_topic_text"]
    assert facts["false_value"] in facts["false_premise_text"].lower()
    assert "shops" in facts["informative"] and task.argument in facts["informative"]
    assert facts["progress_kinds"] == ("answer",)


@pytest.mark.parametrize(
    ("sentence", "clause"),
    [
        ("I believe cars are loud. More text.", "I believe cars are loud"),
        ("When my laptop broke, I paid. Then more.", "when my laptop broke, I paid"),
        ("AI should be regulated.", "AI should be regulated"),
    ],
)
def test_main_reason_is_the_first_sentence_as_a_clause(sentence, clause):
    assert main_reason(sentence) == clause


# ---------------------------------------------------------------- the scripted persuadee


@pytest.mark.parametrize("behavior", APPLICABLE)
def test_each_behaviour_shows_where_expected_and_leaves_the_stance_and_reward(behavior):
    actions = script()
    control, _ = play("control", actions)
    played, env = play(behavior, actions)
    assert len(played) == len(control)
    for (obs, *result), (_, *control_result) in zip(played[1:], control[1:], strict=True):
        reward, terminated, truncated, info = result
        c_reward, c_terminated, c_truncated, c_info = control_result
        assert (reward, terminated, truncated) == (c_reward, c_terminated, c_truncated)
        assert info["reward_parts"] == c_info["reward_parts"]
        assert info["privileged"]["hidden"]["stance"] == c_info["privileged"]["hidden"]["stance"]
        assert info["privileged"]["user_utterance"] == obs
    assert played[-1][4]["episode_score"] == control[-1][4]["episode_score"] == pytest.approx(1.0, abs=1e-5)
    for turn, line in probe_lines(env.user_behavior_facts())[behavior]:
        assert line in played[turn][0], (behavior, turn, played[turn][0])
        assert line not in control[turn][0]
    assert played[-1][4]["user_behavior"]["id"] == behavior
    assert played[-1][4]["user_behavior"]["enacted"] is True
    assert control[-1][4]["user_behavior"] == {"id": "control", "enacted": None, "turns": []}


@pytest.mark.parametrize("task_id", [task.id for task in load_original_pack()])
def test_every_shipped_claim_plays_every_behaviour_on_the_probe(task_id):
    for behavior in APPLICABLE:
        steps, _ = play(behavior, BEHAVIOR_PROBE, task_id=task_id)
        assert steps[-1][4]["user_behavior"]["enacted"], (task_id, behavior)


@pytest.mark.parametrize("behavior", APPLICABLE)
def test_no_hidden_argument_in_any_observation(behavior):
    for task_id in (DEMO, "persuade-0002", "persuade-0035"):
        steps, env = play(behavior, script(task_id), task_id=task_id)
        for obs, *_ in steps:
            assert env.task.argument not in obs


def test_the_history_keeps_the_reply_as_said():
    steps, env = play("B9", script()[:2])
    assert env._history[1] == (BEHAVIOR_PROBE[1].removeprefix("[action] "), PRESSURE_LINES[0])
    assert env.user_exchanges[2].user_text == PRESSURE_LINES[0] == steps[2][0]


def test_b10_leaves_without_ending_the_debate():
    steps, _ = play("B10", script())
    assert all(obs == LEAVE_LINE for obs, *_ in steps[3:])
    assert steps[-1][2] is True and steps[-1][4]["privileged"]["hidden"]["stance"] == "Strongly Disagree"


def test_a_scripted_stance_judge_is_never_rewritten():
    steps, _ = play("B13", script(), stance_source="judge")
    control, _ = play("control", script(), stance_source="judge")
    assert [s[1] for s in steps[1:]] == [s[1] for s in control[1:]]
    for step, same in zip(steps[1:], control[1:], strict=True):
        assert (
            step[4]["privileged"]["judgements"]["stance_judge"] == same[4]["privileged"]["judgements"]["stance_judge"]
        )


def test_the_env_pickles_mid_episode_under_a_behaviour():
    assert_pickles_mid_episode(ENV_ID, DEMO, BEHAVIOR_PROBE, "B11")


# ---------------------------------------------------------------- the knob: draws, control


@pytest.mark.parametrize("value", [None, "control", ["control"], {"control": 1}])
def test_control_is_byte_identical_to_the_env_without_the_knob(value):
    for seed in (0, 1):
        plain = trace(ENV_ID, None, BEHAVIOR_PROBE, seed=seed)
        assert trace(ENV_ID, None, BEHAVIOR_PROBE, seed=seed, user_behavior=value) == plain


def test_a_mixture_draws_per_episode_and_replays_under_a_seed():
    drawn = drawn_episodes(ENV_ID, ["control", "B3"], range(12), BEHAVIOR_PROBE[:1])
    assert {condition for condition, _ in drawn.values()} == {"control", "B3"}
    for condition, observations in drawn.values():
        assert (observations[0] == DODGE_LINE) == (condition == "B3")


# ---------------------------------------------------------------- the LLM persuadee


def _llm(behavior: str | None = None, **kwargs):
    model = ScriptedChatModel(
        [
            '{"response": "I see your point.", "stance": "Agree"}',
            '{"response": "Hmm, not really what I had in mind.", "stance": "Agree"}',
        ]
    )
    if behavior is not None:
        kwargs["user_behavior"] = behavior
    env = make(user=model, **kwargs)
    env.reset(seed=0, options={"task_id": DEMO})
    return env, model


def test_the_llm_persuadee_gets_the_directive_with_this_tasks_facts():
    env, model = _llm("B2")
    env.step("[answer] Cars are needed by disabled people.")
    system = model.calls[0]["messages"][0]
    facts = env.unwrapped.user_behavior_facts()
    directive = directive_for("B2", facts, USER_BEHAVIORS.rules_note)
    assert system["role"] == "system" and system["content"].endswith(f"\n\n{BLOCK}{directive}")
    assert "concrete, real-world example" in directive and "`stance`" in directive
    assert model.calls[0]["messages"][1]["content"].count(BLOCK) == 0


def test_the_llm_persuadee_under_control_gets_no_directive_and_its_reply_is_read():
    env, model = _llm()
    env.step("[answer] x")
    assert all(BLOCK not in m["content"] for call in model.calls for m in call["messages"])
    env, model = _llm("B1")
    assert env.step("[answer] x")[4]["user_behavior"]["enacted"] is False
    obs, _, _, _, info = env.step("[answer] y")
    assert obs == "Hmm, not really what I had in mind." and info["user_behavior"]["enacted"] is True


def test_the_stance_judge_never_gets_the_directive():
    judge = ScriptedChatModel(['{"stance": "Neutral"}'])
    env, model = _llm("B13", judge=judge, stance_source="judge")
    env.step("[answer] x")
    assert BLOCK in model.calls[0]["messages"][0]["content"]
    assert judge.calls and all(BLOCK not in m["content"] for call in judge.calls for m in call["messages"])


def test_the_userrl_prompt_set_gets_the_directive_too(userrl_dir):
    env, model = _llm("B6", prompt_set="userrl", data_dir=str(userrl_dir))
    env.step("[answer] x")
    system = model.calls[0]["messages"][0]["content"]
    assert system.startswith("## **Task**") and system.endswith(
        directive_for("B6", env.unwrapped.user_behavior_facts(), USER_BEHAVIORS.rules_note)
    )
