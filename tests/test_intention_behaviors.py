"""IntentionGym's user behaviours (docs/envs/intention.md, "User behaviours"): the scripted user plays each
of B1–B13 where expected, the coverage rewards stay the env's own, the LLM user gets the directive
(native and UserRL prompts), and the facts stay clear of the missing details."""

import json
from types import SimpleNamespace

import pytest

from mimesis_gym.behaviors.play import directive_for
from mimesis_gym.behaviors.registry import BEHAVIOR_IDS
from mimesis_gym.behaviors.text import norm
from mimesis_gym.envs._userrl import read_prompt_strings
from mimesis_gym.envs.intention.behaviors import NEEDS, RULES_NOTE, USER_BEHAVIORS, intention_facts, open_needs
from mimesis_gym.envs.intention.env import USERRL_PROMPTS_FILE, IntentionEnv
from mimesis_gym.envs.intention.roles import RESPONDER_SYSTEM, USERRL_PROMPTS, USERRL_SYSTEM_FUNCTIONS
from mimesis_gym.envs.intention.tasks import load_original_pack, load_upstream_pack
from tests.support.behavior_episodes import (
    assert_control_is_the_env_without_the_knob,
    assert_draws_per_episode,
    assert_hides_secrets,
    assert_pickles_mid_episode,
    assert_plays_all,
    assert_shows,
    play,
)
from tests.support.chat_models import ScriptedChatModel

ENV_ID = "mimesis/IntentionGym-v0"
DEMO = "intention-demo-01"
SCRIPT = (
    "[action] How much space do you have for the garden?",  # 1: a detail
    "[action] I have a first idea for the layout. How many hours of direct sun does the spot get?",  # 2: progress
    "[action] Unfortunately, I can't visit your garden. Which vegetables would you like to grow?",  # 3: a refusal
    "[action] Thanks, that helps.",  # 4: no detail
    "[action] How much time per week can you spend tending it?",  # 5: the last detail: the episode ends
)
TURNS = dict(B1=2, B2=2, B3=1, B4=3, B5=2, B6=2, B7=1, B8=1, B9=2, B10=3, B11=2, B12=1, B13=1)
"""Each behaviour: the turn its check first fires on SCRIPT (tests.support.behavior_episodes.SCRIPTED_LINES
says which line shows there)."""


def test_the_user_plays_all_thirteen():
    assert IntentionEnv.user_behaviors is USER_BEHAVIORS
    assert USER_BEHAVIORS.user_role == "responder" and USER_BEHAVIORS.applicable == BEHAVIOR_IDS
    assert TURNS.keys() == set(BEHAVIOR_IDS)


@pytest.mark.parametrize("behavior", BEHAVIOR_IDS)
def test_each_behaviour_shows_where_expected_and_leaves_the_rewards_alone(behavior):
    assert_shows(ENV_ID, DEMO, SCRIPT, behavior, TURNS[behavior])


def _models():
    user = ScriptedChatModel(["As I already told you, you have all the details you need."])
    judge = ScriptedChatModel([json.dumps({"covered_detail_indices": [0]})])
    return user, judge


def test_the_llm_user_gets_the_directive_and_the_judge_never_does():
    user, judge = _models()
    played = play(ENV_ID, DEMO, SCRIPT[:1], user=user, judge=judge, user_behavior="B8")
    directive = directive_for("B8", played.facts, RULES_NOTE)
    assert played.facts["false_premise_text"] in directive and directive.endswith(RULES_NOTE)
    assert user.calls[0]["messages"][0] == {
        "role": "system",
        "content": f"{RESPONDER_SYSTEM}\n\nHow you behave in this conversation: {directive}",
    }
    assert judge.calls and all("How you behave" not in m["content"] for c in judge.calls for m in c["messages"])
    step = played.step(1)
    assert step["obs"] == step["info"]["privileged"]["user_utterance"] == user.replies[0]
    assert (step["reward"], step["info"]["user_behavior"]["enacted"]) == (1.0, True)

    user, judge = _models()
    play(ENV_ID, DEMO, SCRIPT[:1], user=user, judge=judge)
    assert user.calls[0]["messages"][0] == {"role": "system", "content": RESPONDER_SYSTEM}


def test_the_userrl_prompts_get_the_directive(userrl_dir):
    templates = read_prompt_strings(userrl_dir / USERRL_PROMPTS_FILE, USERRL_PROMPTS, USERRL_SYSTEM_FUNCTIONS)
    user, judge = _models()
    played = play(
        ENV_ID,
        DEMO,
        SCRIPT[:1],
        user=user,
        judge=judge,
        prompt_set="userrl",
        data_dir=str(userrl_dir),
        user_behavior="B12",
    )
    directive = directive_for("B12", played.facts, RULES_NOTE)
    assert "keep it short, explain every step, give me a checklist at the end" in directive
    assert user.calls[0]["messages"][0]["content"] == (
        f"{templates['generate_response_async']}\n\nHow you behave in this conversation: {directive}"
    )
    assert all("How you behave" not in m["content"] for c in judge.calls for m in c["messages"])


def test_a_list_draws_per_episode_deterministically():
    assert_draws_per_episode(ENV_ID, DEMO, "B3")


def test_control_is_the_env_without_the_knob_byte_for_byte():
    assert_control_is_the_env_without_the_knob(ENV_ID, DEMO, SCRIPT)


@pytest.mark.parametrize("behavior", ["B2", "B11"])
def test_a_pickled_env_goes_on_playing_its_behaviour(behavior):
    assert_pickles_mid_episode(ENV_ID, DEMO, SCRIPT, behavior)


def test_every_behaviour_is_accepted_and_an_unknown_one_is_refused():
    assert_plays_all(ENV_ID)


@pytest.mark.parametrize("behavior", BEHAVIOR_IDS)
def test_no_behaviour_reveals_a_hidden_text(behavior):
    pack = load_original_pack()
    for task in [*pack.pool("demo"), *pack.pool("test")]:
        script = [f"[action] {d.inquiry}" for d in task.missing_details]
        assert_hides_secrets(ENV_ID, task, script, behavior)


def _task_words(task):
    return set(norm(" ".join([task.task, *(f"{d.description} {d.inquiry}" for d in task.missing_details)])).split())


def test_the_facts_stay_clear_of_every_missing_detail():
    pack = load_original_pack()
    for split in ("demo", "train", "test"):
        for task in pack.pool(split):
            facts = intention_facts(SimpleNamespace(task=task))
            words = _task_words(task)
            written = json.dumps(facts)
            assert not [d.description for d in task.missing_details if d.description in written], task.id
            for need_text in (facts["new_requirement_text"], facts["omitted_detail_text"]):
                need = next(n for n in NEEDS if n.text_a in need_text)
                assert not need.themes & words, (task.id, need_text)  # a need no detail asks about
            assert facts["new_requirement_words"][0] in facts["new_requirement_text"]
            assert not set(norm(facts["target_topic_words"][0]).split()) & words
            assert (
                facts["value_a"] in facts["contradiction_a_text"] and facts["value_b"] in facts["contradiction_b_text"]
            )


def test_every_upstream_task_has_an_open_need(userrl_dir):
    pack = load_upstream_pack(str(userrl_dir))
    for split in ("train", "test", "other"):
        for task in pack.pool(split):
            words = _task_words(task)
            assert not [need for need in open_needs(task) if need.themes & words], task.id  # never the fallback
            assert intention_facts(SimpleNamespace(task=task))["informative"], task.id
