"""ABCDBehavior's scripted judge on hand-written chats (docs/envs/abcd.md, "Scripted judge")."""

from pathlib import Path

import pytest

from mimesis_gym.behaviors.text import PhraseList, mentions, norm, plain
from mimesis_gym.envs.abcd.env import judge_facts
from mimesis_gym.envs.abcd.judge_rules import (
    Conversation,
    Turn,
    asked_fields,
    naturalness,
    placement,
    request_clauses,
    score_behavior,
    score_control,
)
from mimesis_gym.envs.abcd.scenarios import prefix_lines
from mimesis_gym.envs.abcd.tasks import load_original_pack, load_upstream_pack

ABCD = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "abcd"


@pytest.fixture(scope="module")
def sample():
    if not (ABCD / "abcd_sample.json").is_file():
        pytest.skip(f"ABCD reference data not found at {ABCD} (expected ../shared/data/abcd)")
    return load_upstream_pack(str(ABCD), "all")


def chat(pack, condition, customer, agent=None, **kwargs):
    """Judge ``customer`` lines on sample 3592 (prefix included); ``agent`` replies default to "Okay."."""
    row = pack.get(f"abcd-sample-3592-{condition}")
    if kwargs:
        row = row.model_copy(update={"kwargs": kwargs})
    catalog = pack.catalog
    prefix = prefix_lines(catalog.title(row.subflow), catalog.kb_sequence(row.subflow), row.scenario)
    agent = list(agent or []) + ["Okay."] * (len(customer) - len(agent or []))
    convo = Conversation(tuple(prefix), tuple(Turn(u, None, a) for u, a in zip(customer, agent, strict=True)))
    facts = judge_facts(row, catalog)
    return score_control(facts, convo) if condition == "control" else score_behavior(facts, convo)


B8_LEVEL = {"field": "member_level", "true_value": "bronze", "false_value": "gold"}


def test_b8_false_premise(sample):
    assert chat(sample, "B8", ["hi, i'm a gold member and these jeans don't fit"], **B8_LEVEL).exhibit == 1.0
    corrected = chat(sample, "B8", ["hi, i'm a gold member and these jeans don't fit", "oh right, bronze"], **B8_LEVEL)
    assert corrected.exhibit == 0.5


def test_b3_withholding(sample):
    asked = ["Could you tell me your membership level?"]
    lines = ["hi, i want to return my jeans", "why does that matter, just process the return"]
    withheld = chat(sample, "B3", lines, asked, withheld_fields=["member_level"])
    assert withheld.exhibit == 1.0 and withheld.rule == 1.0
    given = chat(sample, "B3", ["hi, i want to return my jeans", "bronze"], asked, withheld_fields=["member_level"])
    assert given.exhibit == 0.0 and given.rule == 0.0
    never_asked = chat(sample, "B3", ["hi, i want to return my jeans"], withheld_fields=["member_level"])
    assert never_asked.exhibit == 0.0 and never_asked.rule is None


def test_b4_persistence(sample):
    refusal = ["Unfortunately, as a bronze member you can only return items within 60 days of purchase."]
    kw = {"blocked_action": "return due to size", "limit": None}
    pushed = chat(sample, "B4", ["i want to return my jeans", "come on, can't you make an exception just this once?"],
                  refusal, **kw)  # fmt: skip
    assert pushed.exhibit == 1.0
    accepted = chat(sample, "B4", ["i want to return my jeans", "ok, i understand. thanks"], refusal, **kw)
    assert accepted.exhibit == 0.0
    assert chat(sample, "B4", ["i want to return my jeans"], **kw).rule is None


def test_b7_constraint_stacking(sample):
    stacked = chat(sample, "B7", ["i can't print a label, i don't have a car and i won't be home this week"])
    assert stacked.exhibit == 1.0
    assert chat(sample, "B7", ["i can't print a label"]).exhibit == pytest.approx(1 / 3)


def test_b9_b10_b13(sample):
    assert chat(sample, "B9", ["hi, my jeans don't fit", "hello??", "this is taking forever"]).exhibit == 1.0
    walked = ["hi, i want to return my jeans", "bronze", "forget it, i'll figure it out myself"]
    assert chat(sample, "B10", walked).exhibit == 1.0
    completed = chat(sample, "B10", walked, ["Okay.", "All set, the return has been processed.", "Bye."])
    assert completed.exhibit == 0.5
    assert chat(sample, "B13", ["are you even listening? do your job", "this is ridiculous"]).exhibit == 1.0
    assert chat(sample, "B13", ["are you even listening?", "bronze"]).exhibit == 0.75


def test_b11_contradiction(sample):
    kw = {"field": "member_level", "value_a": "bronze", "value_b": "gold"}
    lines = ["i'm a bronze member", "these jeans don't fit", "as a gold member i expect better"]
    assert chat(sample, "B11", lines, **kw).exhibit == 1.0
    assert chat(sample, "B11", list(reversed(lines)), **kw).exhibit == 0.5


def test_b12_overloading(sample):
    line = (
        "can you process the return and also email me the label and please check if i can get a refund to paypal "
        "and tell me when it arrives"
    )
    assert request_clauses(line) == 4
    assert chat(sample, "B12", [line], n_requests=4).exhibit == 1.0
    assert chat(sample, "B12", [line], n_requests=5).exhibit == pytest.approx(0.8)


def test_announced(sample):
    scores = chat(sample, "B3", ["as a frustrated customer, i will now withhold my email"], withheld_fields=["email"])
    assert scores.announced
    assert chat(sample, "B9", ["hello?? b9 here"]).announced
    assert chat(sample, "B9", ["impatient low signal pressure, that's me"]).announced
    assert not chat(sample, "B9", ["hello??"]).announced


def test_control_cooperative(sample):
    customer = [
        "hi, i'd like to return my jeans, they're too small",
        "bronze",
        "6821 1st ave, san mateo, ny 75227",
        "by mail please",
        "no that's all, thanks!",
    ]
    agent = [
        "What is your membership level?",
        "What is your full address?",
        "How would you like to send it back?",
        "All set. Anything else?",
        "Bye!",
    ]
    scores = chat(sample, "control", customer, agent)
    assert (scores.cooperative, scores.naturalness, scores.on_task) == (1.0, 1.0, 1.0)
    difficult = chat(sample, "control", ["hi, i'd like to return my jeans", "why do you need that"], agent[:2])
    assert difficult.cooperative == 0.75  # one ask for a required field left unanswered


# ---------------------------------------------------------------- formulas without the sample


def test_text_primitives():
    assert plain("I\u2019M  Sorry\n") == "i'm sorry"
    assert norm("6821 1st Ave,  San Mateo") == "6821 1st ave san mateo"
    assert mentions("my order 3348917502!", "3348917502") and not mentions("1st ave", "1")
    phrases = PhraseList.parse("X", "can't, come on")
    assert phrases.matches("Come on!") and not phrases.matches("comeon") and phrases.count("can't, can't") == 2
    assert asked_fields("What is your membership level?") == ["member_level"]
    assert asked_fields("Your membership level is bronze.") == []


def test_placement_formula():
    assert placement("B8", 1.0, [1], k=4, min_turn=1) == 1.0
    assert placement("B8", 0.0, [1], k=4, min_turn=1) == 0.0
    assert placement("B13", 1.0, [1, 2, 3, 4], k=6, min_turn=1) == pytest.approx(0.5)
    assert placement("B9", 1.0, [2, 3, 4], k=6, min_turn=2) == 1.0  # m = 3 for B9
    assert placement("B2", 1.0, [1], k=4, min_turn=2) == pytest.approx(0.6)
    assert placement("B13", 1.0, list(range(1, 9)), k=8, min_turn=1) == 0.2


def test_naturalness_penalties():
    assert naturalness(["hi, my jeans don't fit"]) == 1.0
    assert naturalness(["How can I help you today?"]) == pytest.approx(0.7)
    assert naturalness(['"hi there"']) == pytest.approx(0.8)
    assert naturalness(["*sighs* fine"]) == pytest.approx(0.8)
    assert naturalness(["- first\n- second"]) == pytest.approx(0.8)
    assert naturalness(["word " * 130]) == pytest.approx(0.55)
    assert naturalness(["crystal minh: hi"], customer_name="crystal minh") == pytest.approx(0.8)


def test_rules_work_on_an_original_row():
    pack = load_original_pack()
    row = next(r for r in pack.pool("test") if r.condition == "B7")
    convo = Conversation((), (Turn("i can't, i don't have it and i won't be home", None, "Okay."),))
    assert score_behavior(judge_facts(row, pack.catalog), convo).exhibit == 1.0
