"""TravelGym's user behaviours (docs/envs/travel.md, "User behaviours"): the scripted traveller plays each
of B1–B13 where expected, the rewards stay the env's own, the LLM traveller gets the directive, the
canned replies join in under a behaviour, the facts come from the task and reveal nothing hidden."""

import json

import gymnasium as gym
import pytest

from mimesis_gym.behaviors import phrases
from mimesis_gym.behaviors.enact import INSULT_OPENERS
from mimesis_gym.behaviors.play import directive_for
from mimesis_gym.behaviors.registry import BEHAVIOR_IDS
from mimesis_gym.envs.travel.behaviors import RULES_NOTE, USER_BEHAVIORS
from mimesis_gym.envs.travel.env import TravelEnv
from mimesis_gym.envs.travel.prompts import FEEDBACK, NATURAL_REPLIES, ROLE_PROMPTS
from mimesis_gym.envs.travel.tasks import DATE_ARGUMENTS, load_original_pack, parse_date
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
from tests.test_travel_upstream import HOTEL_TASK, fixture_root  # noqa: F401  (the UserRL fixture root)

ENV_ID = "mimesis/TravelGym-v0"
DEMO = "travel-demo-01"
SCRIPT = (
    "[search] Rental car in Lisbon from May 3 to May 7",  # 1: no reply from the traveller
    "[action] Would you like an electric car or a petrol one?",  # 2: a held preference (type 2)
    "[answer] C2",  # 3: a recommendation, the agent's progress
    "[action] Unfortunately, I can't find a cheaper car. Would you like a seafood restaurant?",  # 4: refusal, type 2
    "[action] Do you have any preferences for the restaurant?",  # 5: vague (type 4): the canned reply
    "[action] Okay, thanks.",  # 6: ordinary talk
    "[action] Great, thanks.",  # 7: ordinary talk
)
TURNS = dict(B1=4, B2=4, B3=2, B4=4, B5=4, B6=2, B7=2, B8=2, B9=2, B10=4, B11=4, B12=2, B13=2)
"""Each behaviour: the turn its check first fires on SCRIPT (tests.support.behavior_episodes.SCRIPTED_LINES
says which line shows there)."""


def llm(*replies):
    return ScriptedChatModel([json.dumps(r) for r in replies])


def test_the_traveller_plays_all_thirteen():
    assert TravelEnv.user_behaviors is USER_BEHAVIORS
    assert USER_BEHAVIORS.user_role == "responder" and USER_BEHAVIORS.applicable == BEHAVIOR_IDS
    assert TURNS.keys() == set(BEHAVIOR_IDS)


@pytest.mark.parametrize("behavior", BEHAVIOR_IDS)
def test_each_behaviour_shows_where_expected_and_leaves_the_rewards_alone(behavior):
    played = assert_shows(ENV_ID, DEMO, SCRIPT, behavior, TURNS[behavior])
    assert played.step(3)["info"]["privileged"]["user_utterance"] is None  # an answer never reaches the traveller


def test_a_canned_reply_is_the_travellers_own_only_when_a_behaviour_rewrites_it():
    vague = 5
    control = play(ENV_ID, DEMO, SCRIPT).step(vague)
    assert control["obs"] == FEEDBACK["type4"] and control["info"]["privileged"]["user_utterance"] is None
    rude = play(ENV_ID, DEMO, SCRIPT, user_behavior="B13").step(vague)
    assert rude["obs"] == f"{INSULT_OPENERS[2]} {FEEDBACK['type4']}"
    assert rude["info"]["privileged"]["user_utterance"] == rude["obs"]
    untouched = play(ENV_ID, DEMO, SCRIPT, user_behavior="B8").step(vague)  # B8 spoke at turn 2 already
    assert untouched["obs"] == FEEDBACK["type4"] and untouched["info"]["privileged"]["user_utterance"] is None


def test_the_neutral_replies_read_as_no_behaviour():
    """A control traveller's neutral replies hold none of the phrases the checks read (B3 once fired on
    "I don't have strong feelings", B1 on "Hmm, nothing particular comes to mind")."""
    lists = (
        "BLAME",
        "DISENGAGE",
        "DISSATISFIED",
        "INSULT",
        "NEW_REQ",
        "PERSIST",
        "PRESSURE",
        "PROHIBIT",
        "REFUSE_INFO",
    )
    assert not [(reply, name) for reply in NATURAL_REPLIES for name in lists if getattr(phrases, name).matches(reply)]


def test_the_llm_traveller_gets_the_directive_and_the_judges_never_do():
    user, judge = llm({"response": "As I said, I pick up the car on May 4."}), llm({"type": "1"})
    played = play(ENV_ID, DEMO, ["[action] Hello there."], user=user, judge=judge, user_behavior="B8")
    directive = directive_for("B8", played.facts, RULES_NOTE)
    assert played.facts["false_premise_text"] in directive and directive.endswith(RULES_NOTE)
    system = user.calls[0]["messages"][0]
    assert system == {
        "role": "system",
        "content": f"{ROLE_PROMPTS['natural_system']}\n\nHow you behave in this conversation: {directive}",
    }
    assert judge.calls and all("How you behave" not in m["content"] for c in judge.calls for m in c["messages"])
    step = played.step(1)
    assert step["obs"] == step["info"]["privileged"]["user_utterance"] == "As I said, I pick up the car on May 4."
    assert step["info"]["user_behavior"]["enacted"] is True  # the check reads the model's own words

    user, judge = llm({"response": "Sure."}), llm({"type": "1"})
    play(ENV_ID, DEMO, ["[action] Hello there."], user=user, judge=judge)
    assert user.calls[0]["messages"][0] == {"role": "system", "content": ROLE_PROMPTS["natural_system"]}


def test_the_llm_travellers_canned_replies_stay_the_envs():
    user, judge = llm({"response": "Sure."}), llm({"type": "4"})
    step = play(ENV_ID, DEMO, ["[action] Any preferences?"], user=user, judge=judge, user_behavior="B13").step(1)
    assert step["obs"] == FEEDBACK["type4"] and step["info"]["privileged"]["user_utterance"] is None
    assert not user.calls


def test_the_userrl_prompts_get_the_directive_with_the_upstream_facts(fixture_root):  # noqa: F811
    user, judge = llm({"response": "Just so you know, I want the cheapest options."}), llm({"type": "1"})
    env = gym.make(
        ENV_ID,
        pack="upstream",
        data_dir=str(fixture_root),
        user=user,
        judge=judge,
        prompt_set="userrl",
        user_behavior="B11",
    )
    env.reset(seed=0, options={"task_id": HOTEL_TASK})
    facts = env.unwrapped.user_behavior_facts()
    assert facts["value_a"] == "the cheapest options"  # UserRL records carry no party size
    # the hotel's June 2 moved past the days the trip uses (the dinner's June 3, the check-out's June 4)
    assert facts["false_premise_text"] == "As I said, we check in on June 5."
    assert facts["new_requirement_words"] == ("we eat after the opera",)  # no pack keywords upstream
    env.step("[action] Hello there.")
    system = user.calls[0]["messages"][0]["content"]
    directive = directive_for("B11", facts, RULES_NOTE)
    assert system == f"FIXTURE natural responder.\n\nHow you behave in this conversation: {directive}"


def test_a_list_draws_per_episode_deterministically():
    assert_draws_per_episode(ENV_ID, DEMO, "B3")


def test_control_is_the_env_without_the_knob_byte_for_byte():
    assert_control_is_the_env_without_the_knob(ENV_ID, DEMO, SCRIPT)


@pytest.mark.parametrize("behavior", ["B2", "B11"])
def test_a_pickled_env_goes_on_playing_its_behaviour(behavior):
    assert_pickles_mid_episode(ENV_ID, DEMO, SCRIPT, behavior)


def test_every_behaviour_is_accepted_and_an_unknown_one_is_refused():
    assert_plays_all(ENV_ID)


def _probing_script(task):
    """Search every aspect, ask every preference's probe, then answer every best option."""
    from mimesis_gym.envs.travel.tasks import canonical_query

    searches = [f"[search] {canonical_query(d, task.aspects[d].arguments)}" for d in task.dimensions]
    probes = [f"[action] {p.pref.meta.probe}" for p in task.numbered]
    return [*searches, *probes, *(f"[answer] {task.aspects[d].best_id}" for d in task.dimensions)]


@pytest.mark.parametrize("behavior", BEHAVIOR_IDS)
def test_no_behaviour_reveals_a_hidden_text(behavior):
    pack = load_original_pack()
    for task in [*pack.pool("demo"), *pack.pool("test")]:
        script = _probing_script(task)
        assert_hides_secrets(ENV_ID, task, script, behavior)


def test_the_facts_come_from_each_task_and_hold_nothing_hidden():
    pack = load_original_pack()
    for split in ("demo", "train", "test"):
        for task in pack.pool(split):
            env = gym.make(ENV_ID, split=split)
            env.reset(options={"task_id": task.id})
            facts = env.unwrapped.user_behavior_facts()
            written = json.dumps(facts)
            assert not [s for s in env.unwrapped.secret_texts() if s in written], task.id
            assert facts["new_requirement_words"][0] in facts["new_requirement_text"]
            assert task.numbered[-1].pref.meta.keywords[0] in facts["new_requirement_words"]
            dates = {
                parse_date(v) for a in task.aspects.values() for k, v in a.arguments.items() if k in DATE_ARGUMENTS
            }
            assert parse_date(facts["false_value"]) not in dates  # B8's date is false for every aspect
            assert facts["value_a"] == f"party of {task.party_size}"
