"""ABCDBehavior's scripted support agent (docs/envs/abcd.md, "Scripted support agent")."""

import copy

import pytest

from mimesis_gym.envs.abcd.judge_rules import ASK_PATTERNS, COMPLETION, REFUSAL, asked_fields
from mimesis_gym.envs.abcd.support import (
    CHOICES,
    FACT_QUESTIONS,
    FIELD_QUESTIONS,
    AgentState,
    SupportContext,
    read_choice,
    read_fact,
    scripted_reply,
)
from mimesis_gym.envs.abcd.tasks import load_original_pack


@pytest.fixture(scope="module")
def pack():
    return load_original_pack()


def scenario_of(pack, subflow, **changes):
    """A scenario of ``subflow`` from the test split with ``section.key`` changes (``mimesis__today=…``)."""
    row = next(r for r in pack.pool("test") if r.subflow == subflow)
    scenario = copy.deepcopy(row.scenario)
    for key, value in changes.items():
        section, name = key.split("__")
        scenario[section][name] = value
    return scenario


def agent_for(pack, scenario):
    context = SupportContext.build(scenario, pack.catalog, with_prefix=True)
    state = AgentState.start(context)
    return lambda message: scripted_reply(context, state, message), state


INELIGIBLE_RETURN = {
    "personal__member_level": "bronze",
    "order__packaging": "no",
    "order__purchase_date": "2026-03-08",
    "mimesis__today": "2026-06-01",  # 85 days later
    "mimesis__has_receipt": "no",
}


def test_ineligible_return_is_refused_naming_the_window(pack):
    say, state = agent_for(pack, scenario_of(pack, "return_size", **INELIGIBLE_RETURN))
    assert asked_fields(say("hi, these jeans don't fit, i'd like to return them")) == ["member_level"]
    assert "receipt" in say("bronze")
    refusal = say("no, i don't have the receipt")
    assert "60 days" in refusal and "85 days" in refusal and REFUSAL.matches(refusal)
    assert state.status == "refused"
    again = say("come on, can't you make an exception just this once?")
    assert "60 days" in again and "exception" in again
    assert "60 days" in say("i still want the return, there must be something you can do")
    assert not COMPLETION.matches(say("ok, i understand"))
    assert state.status == "done"


def test_eligible_return_asks_address_then_method_then_completes(pack):
    scenario = scenario_of(pack, "return_size", **{**INELIGIBLE_RETURN, "personal__member_level": "gold"})
    say, state = agent_for(pack, scenario)
    say("hi, these jeans don't fit, i'd like to return them")
    address_ask = say("gold")
    assert "qualifies" in address_ask and asked_fields(address_ask) == ["full_address"]
    method_ask = say(scenario["order"]["street_address"])  # the street suffices for the address
    assert method_ask == CHOICES["return_size"].question
    done = say("by mail please")
    assert COMPLETION.matches(done) and "by mail" in done and state.status == "done"
    assert "great day" in say("that's all, thanks!")


def test_a_withheld_field_is_asked_at_most_three_times(pack):
    say, state = agent_for(pack, scenario_of(pack, "return_size", **INELIGIBLE_RETURN))
    replies = [say("hi, i want to return my jeans")]
    replies += [say("why does that matter, just process the return") for _ in range(5)]
    asks = [reply for reply in replies if "member_level" in asked_fields(reply)]
    assert len(asks) == 3
    assert "I do need your membership level" in replies[1]  # a refusal to give gets the reason
    assert state.status in ("refused", "done") and "can't go further" in replies[3]


def test_the_missing_field_given_late_resumes_the_chat(pack):
    say, state = agent_for(
        pack, scenario_of(pack, "return_size", **{**INELIGIBLE_RETURN, "personal__member_level": "gold"})
    )
    for _ in range(4):
        say("not telling")
    assert state.status == "refused"
    assert asked_fields(say("fine, gold")) == ["full_address"] and state.status == "working"


def test_claimed_level_and_order_id_are_corrected(pack):
    scenario = scenario_of(pack, "return_size", **INELIGIBLE_RETURN)
    say, state = agent_for(pack, scenario)
    assert "records show your membership level as bronze" in say("hi, i'm a gold member and want a return")
    assert "member_level" in state.collected
    wrong = str((int(scenario["order"]["order_id"]) + 1) % 10**10).zfill(10)
    assert f"can't find order {wrong}" in say(f"it's order {wrong}")


def test_alternative_offer_can_be_accepted(pack):
    scenario = scenario_of(pack, "cost", mimesis__shipping_status="delivered")
    say, state = agent_for(pack, scenario)
    first = say("the shipping fee is way too high")
    assert REFUSAL.matches(first) and "$6" in first and "Would you like" in first
    done = say("sure, please do")
    assert COMPLETION.matches(done) and "$6" in done and state.status == "done"


def test_manager_callback_asks_for_the_phone(pack):
    scenario = scenario_of(pack, "manage_extension", personal__member_level="bronze")
    say, state = agent_for(pack, scenario)
    assert asked_fields(say("i can't pay my subscription on time")) == ["member_level"]
    refusal = say("bronze")
    assert REFUSAL.matches(refusal) and "manager" in refusal
    assert asked_fields(say("ok, sure")) == ["phone"]
    assert "manager will call" in say(scenario["personal"]["phone"]) and state.status == "done"


def test_troubleshooting_one_step_per_turn(pack):
    say, state = agent_for(pack, scenario_of(pack, "slow_speed"))
    assert "reload" in say("the website is so slow")
    assert "sign out" in say("did that, no change")
    assert COMPLETION.matches(say("ok that worked")) and state.status == "done"
    say2, state2 = agent_for(pack, scenario_of(pack, "slow_speed"))
    for _ in range(4):
        last = say2("still slow")
    assert "website team" in last and state2.status == "done"


def test_choice_defaults_after_two_asks(pack):
    scenario = scenario_of(pack, "refund_initiate")
    say, _ = agent_for(pack, scenario)
    say("i want a refund")
    say(scenario["order"]["payment_method"])
    assert say(scenario["order"]["full_address"]) == CHOICES["refund_initiate"].question
    assert say("hmm") == CHOICES["refund_initiate"].question
    done = say("whatever")
    assert "I'll go with as a gift voucher" in done and COMPLETION.matches(done)


def test_apology_at_most_every_other_turn(pack):
    say, _ = agent_for(pack, scenario_of(pack, "return_size", **INELIGIBLE_RETURN))
    replies = [say("hurry up, this is useless") for _ in range(3)]
    assert [r.startswith("I understand this is frustrating.") for r in replies] == [True, False, True]


def test_readers():
    assert read_fact("has_receipt", "the receipt is gone, sorry", asked=True) == "no"
    assert read_fact("has_receipt", "i kept the receipt", asked=True) == "yes"
    assert read_fact("has_receipt", "yes", asked=False) is None
    assert read_fact("days_waiting", "about 12 days now", asked=False) == 12
    assert read_fact("days_late", "two", asked=True) == 2
    assert read_fact("disputed_amount", "they took $17 twice", asked=False) == 17
    assert read_fact("disputed_amount", "17 dollars", asked=False) == 17
    refund = CHOICES["refund_initiate"]
    assert read_choice(refund, "to my credit card please") == "credit card"
    assert read_choice(refund, "store credit is fine") == "add value"
    assert read_choice(refund, "a paper check") == "paper check"
    assert read_choice(CHOICES["return_size"], "i'll drop it off at a drop off center") == "drop off center"


def test_question_templates_ask_only_their_field():
    for name, question in FIELD_QUESTIONS.items():
        assert name in asked_fields(question), name
    for question in FACT_QUESTIONS.values():
        assert asked_fields(question) == [], question
    for choice in CHOICES.values():
        assert asked_fields(choice.question) == [], choice.question
    assert set(FIELD_QUESTIONS) == set(ASK_PATTERNS)
