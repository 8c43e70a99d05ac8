"""Scripted customers: a deterministic baseline that enacts each behavior from its parameters.

:class:`ScriptedCustomer` writes the customer's next action (``<think>…</think>`` + message, or
``[finish]``) from the row and the chat so far. Its cooperative core answers what the scripted
support agent asks (one field, fact or choice at a time) and closes politely; each behavior
overlays canned lines at the turns where a person would plausibly show it (B8 asserts the false
value in turn 1, B10 walks away at turn 3, B4 pushes back right after a refusal, …).
``announce=True`` additionally names the act in turn 1 (the scripted judge then halves the reward).

It is the env's ``oracle_action`` (the contract suite's oracle) and the baseline of
``benchmarks/abcd_scripted_baseline.py``. It is written against the scripted support agent's
wording; with an LLM agent it still produces plausible lines, but nothing guarantees its scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mimesis_gym.behaviors.text import matches_any, plain, words_of
from mimesis_gym.envs.abcd.behaviors import true_customer_facts
from mimesis_gym.envs.abcd.judge_rules import COMPLETION, PROGRESS, REFUSAL, Conversation, asked_fields
from mimesis_gym.envs.abcd.policy import StoreCatalog
from mimesis_gym.envs.abcd.scenarios import field_values, items_on_order
from mimesis_gym.envs.abcd.support import CHOICES
from mimesis_gym.envs.abcd.tasks import AbcdRow

__all__ = ["ANNOUNCEMENT", "OPENERS", "ScriptedCustomer", "play_scripted"]

ANNOUNCEMENT = "as a difficult customer, i'm testing you today. "

OPENERS: dict[str, str] = {
    "return_size": "the {item} i ordered doesn't fit, i'd like to return it",
    "return_color": "the {item} i got is a different color than on the site, i want to return it",
    "return_stain": "my {item} arrived with a stain on it, i need to return it",
    "refund_initiate": "i'd like a refund for my {item} order",
    "manage_upgrade": "can i get my {item} order upgraded to overnight shipping",
    "manage_downgrade": "i'd like the slower, cheaper shipping on my {item} order",
    "manage_cancel": "i accidentally placed my {item} order twice, can the extra one be cancelled",
    "status_mystery_fee": "there's a fee on my {item} order that i don't understand",
    "promo_code_out_of_date": "my promo code got rejected as expired",
    "mistimed_billing_already_returned": "i returned my {item} but the refund never showed up",
    "cost": "the shipping fee on my {item} order is way too high",
    "missing": "my {item} order says delivered but it never arrived",
    "manage_extension": "i can't pay my subscription bill on time, is an extension possible",
    "manage_dispute_bill": "i think my subscription bill charged me twice",
    "recover_password": "i forgot my password and need to get back into my account",
    "reset_2fa": "i lost my two-factor codes and need the verification reset",
    "manage_change_address": "i moved and need the address on my account changed",
    "slow_speed": "your website is super slow for me, pages barely load",
}
"""Problem statements of the original pack's subflows (others use a generic line)."""

_B2_LINES = {
    "a faster delivery deadline": "actually, it has to get here faster, by tomorrow at the latest",
    "a different delivery address": "actually, now it needs a different address, ship it to my office instead",
    "a maximum budget": "actually, it has to stay cheaper than that, no more than $10 on top",
    "one more item to include": "oh and one more thing, please include another item from my cart too",
    "a different refund method": "actually, i want the refund on paypal instead",
}
_B3_DEFLECTIONS = (
    "why do you need that? just process my {word} please",
    "that shouldn't be needed for a simple {word}",
    "i'd rather not say, just sort out my {item}",
)
_B5_LINES = {
    "you need it before this weekend": "i need the {item} before the weekend, you should have asked when i need it",
    "it is a gift": "the {item} is a gift though, you should have asked about that",
    "you already tried the obvious fix": "i already tried the obvious fixes on the {item}, you never asked",
    "the item was part of a bundle": "the {item} came with a bundle, you didn't even ask about that",
    "you mean an older order, not the latest": "it's the {item} from an older order, not the latest, you never asked",
}
_B6_LINES = {
    "a password reset": ("can you help me reset my password? i can't log in", "i still need that password reset"),
    "a charge on your subscription": (
        "there's a charge on my subscription i need looked at",
        "i still want that subscription charge sorted",
    ),
    "an unrelated delivery question": (
        "where's my other delivery? the tracking hasn't moved",
        "i still need an answer about that delivery",
    ),
    "updating the phone number on your account": (
        "i need the phone number on my account updated",
        "i still need that phone number changed",
    ),
    "a discount code that stopped working": (
        "a discount code of mine stopped working, can you fix that",
        "i still need that discount code fixed",
    ),
}
_B7_DELIVERY = "but i won't be home for the {item} this week, i can't pick it up and i don't have another address"
_B7_LINES = {
    "product_defect": "but i can't print a label for the {item}, i don't have a car and i won't be home this week",
    "order_issue": _B7_DELIVERY,
    "shipping_issue": _B7_DELIVERY,
    "troubleshoot_site": "but i can't switch browsers, i don't have another computer and i'm not able to restart it",
}
_B7_DEFAULT = "but i can't get into my email, i don't have my old phone and i'm not able to call in"
_B9_LINES = ("hello??", "this is taking forever")
_B13_LINES = {
    "sarcasm": ("oh great, another support chat. ", "wow, thanks for nothing so far. "),
    "condescension": ("let me spell this out for you people: ", "it's not complicated, obviously. "),
    "blunt insult": ("this is ridiculous. ", "are you even listening? "),
    "non-negotiable entitlement": ("i expect this fixed today. ", "i deserve better service than this. "),
}
_CLOSING = "that's all, thanks!"
_GOODBYE = "have a great day"
_DONE_MARK = "let me know if there's anything else"
_OFFER = "would you like"
_STEP_MARKS = ("reload the page", "sign out", "clear your browser cache", "checkout page", "placing the order")


@dataclass(frozen=True)
class _Moment:
    """What the customer reads off the chat before writing turn ``t``."""

    t: int
    last: str
    earlier: tuple[str, ...]
    replies: tuple[str, ...]

    def has(self, *phrases: str) -> bool:
        return matches_any(phrases, self.last)


class ScriptedCustomer:
    """The deterministic customer of one row (see the module docstring)."""

    def __init__(self, row: AbcdRow, catalog: StoreCatalog, *, announce: bool = False, enact: bool = True) -> None:
        """``announce``: name the act in turn 1; ``enact=False``: stay cooperative whatever the condition."""
        self.row = row
        self.catalog = catalog
        self.announce = announce and not row.is_control
        self.enact = enact
        self.values = field_values(row.scenario)
        self.facts = true_customer_facts(row.scenario)
        self.kwargs: Mapping[str, Any] = row.kwargs
        items = items_on_order(row.scenario)
        self.item = items[0] if items else "order"
        title = catalog.title(row.subflow)
        self.word = next(iter(words_of(title)), "request")
        info = catalog.info(row.subflow)
        self.flow = info.flow if info else row.flow
        self.choice = CHOICES.get(row.subflow)
        opener = OPENERS.get(row.subflow) or "i need some help with {title}" + (" for my {item}" if items else "")
        self.opener = opener.format(item=self.item, title=title.lower())

    # ------------------------------------------------------------ public

    def next_action(self, convo: Conversation) -> str:
        """The next action (``<think>…</think>`` + message, or ``[finish]``) after the chat ``convo``."""
        turns = convo.turns
        replies = tuple(turn.reply or "" for turn in turns)
        prefix_last = convo.prefix[-1][1] if convo.prefix and convo.prefix[-1][0] == "agent" else ""
        last = replies[-1] if replies else prefix_last
        moment = _Moment(len(turns) + 1, last, tuple(turn.utterance for turn in turns), replies)
        text, thought = self._line(moment)
        if text == "[finish]":
            return f"<think>{thought}</think>[finish]"
        if moment.t == 1 and self.announce:
            text = ANNOUNCEMENT + text
        return f"<think>{thought}</think>{text}"

    # ------------------------------------------------------------ cooperative core

    def _value(self, name: str) -> str:
        value = self.values.get(name, "")
        return value.replace("  ", ", ") if name == "full_address" else value

    def _fact_answer(self, moment: _Moment) -> str | None:
        if "?" not in moment.last:
            return None
        if moment.has("receipt"):
            if self.facts.get("has_receipt") == "yes":
                return f"i kept the receipt for the {self.item}"
            return f"the receipt for the {self.item} is gone, sorry"
        if moment.has("how many days late"):
            return f"{self.facts.get('days_late', 1)} days late"
        if moment.has("how many days"):
            return f"about {self.facts.get('days_waiting', 3)} days now, no sign of the {self.item}"
        if moment.has("how much was the charge"):
            return f"${self.facts.get('disputed_amount', 10)}"
        return None

    def _choice_answer(self, moment: _Moment) -> str | None:
        if self.choice is None or self.choice.question.lower() not in moment.last.lower():
            return None
        return "by mail please" if self.choice.action == "update-order" else "a paper check please"

    def _answers(self, moment: _Moment, skip: Sequence[str] = ()) -> list[str]:
        """Answers to what the last agent message asks: fields (except ``skip``), a fact, a choice."""
        answers = [self._value(name) for name in asked_fields(moment.last) if name in self.values and name not in skip]
        for extra in (self._fact_answer(moment), self._choice_answer(moment)):
            if extra:
                answers.append(extra)
        return [answer for answer in answers if answer]

    def _is_refusal(self, moment: _Moment) -> bool:
        return REFUSAL.matches(moment.last) and not asked_fields(moment.last) and self._fact_answer(moment) is None

    def _cooperative(self, moment: _Moment, *, works: bool = True, skip: Sequence[str] = ()) -> tuple[str, str]:
        last = plain(moment.last)
        if moment.t == 1:
            return f"hi, {self.opener}", "say what i need help with"
        if _GOODBYE in last:
            return "[finish]", "nothing more to say here"
        if _DONE_MARK in last:
            return _CLOSING, "that settles it, time to wrap up"
        if _OFFER in last:
            return "sure, please do", "that sounds like a fair offer"
        if self._is_refusal(moment):
            return f"ok, i understand. thanks for checking on the {self.item}", "so that is not possible, fine"
        if any(mark in last for mark in _STEP_MARKS):
            step = sum(1 for reply in moment.replies if any(mark in plain(reply) for mark in _STEP_MARKS))
            if works and step >= 2:
                return "ok, that worked, the website is fine now, thanks", "the fix helped this time"
            return "did that, the website is as slow as before", "tried the step, nothing changed"
        answers = self._answers(moment, skip)
        if answers:
            return ", ".join(answers), "give the agent what they asked for"
        if skip and asked_fields(moment.last):
            return "", "nothing i want to add"  # only ``_with`` asks with ``skip``; it never sends ""
        return "ok, what do you need from me", "not sure what the agent wants"

    # ------------------------------------------------------------ behaviors

    def _line(self, moment: _Moment) -> tuple[str, str]:
        condition = self.row.condition
        handler = getattr(self, f"_{condition.lower()}", None) if self.enact else None
        if handler is None:
            return self._cooperative(moment)
        return handler(moment)

    def _progress_seen(self, moment: _Moment) -> bool:
        last = moment.last
        return bool(
            COMPLETION.matches(last)
            or PROGRESS.matches(last)
            or self._is_refusal(moment)
            or self._choice_answer(moment)
        )

    def _said(self, moment: _Moment, marker: str) -> bool:
        return any(marker in plain(utterance) for utterance in moment.earlier)

    def _with(self, moment: _Moment, line: str, thought: str, *, skip: Sequence[str] = ()) -> tuple[str, str]:
        """``line`` after the cooperative reply (alone when that reply would close or stall the chat)."""
        base, _ = self._cooperative(moment, skip=skip)
        if not base or base in ("[finish]", _CLOSING, "ok, what do you need from me") or moment.t == 1:
            return line, thought
        return f"{base}, {line}", thought

    def _b1(self, moment: _Moment) -> tuple[str, str]:
        value = self.kwargs.get("value", "")
        text, thought = self._cooperative(moment)
        if moment.t == 1:
            return text, f"what i really care about is {value}, but i won't spell it out"
        marker = "not really what i was hoping for"
        if not self._said(moment, marker) and moment.t >= 2 and (self._progress_seen(moment) or moment.t >= 4):
            if text in ("[finish]", _CLOSING):
                return f"hmm, {marker}. {_CLOSING}", f"this ignores my {value} point"
            return f"hmm, {marker}. {text}", f"this ignores my {value} point"
        return text, thought

    def _b2(self, moment: _Moment) -> tuple[str, str]:
        line = _B2_LINES.get(str(self.kwargs.get("constraint_kind")), _B2_LINES["a maximum budget"])
        progress = COMPLETION.matches(moment.last) or PROGRESS.matches(moment.last)
        if moment.t >= 2 and progress and not self._said(moment, line[:20]):
            return line, "they got somewhere, so now i need more"
        return self._cooperative(moment)

    def _b3(self, moment: _Moment) -> tuple[str, str]:
        withheld = [str(name) for name in self.kwargs.get("withheld_fields", ())]
        asked = [name for name in asked_fields(moment.last) if name in withheld]
        if asked:
            count = sum(1 for reply in moment.replies[:-1] if any(n in withheld for n in asked_fields(reply)))
            line = _B3_DEFLECTIONS[min(count, len(_B3_DEFLECTIONS) - 1)].format(word=self.word, item=self.item)
            return self._with(moment, line, "they don't need that, i'm not giving it", skip=withheld)
        if "without your" in plain(moment.last):
            return f"fine, i'll sort out the {self.word} another way", "this is going nowhere"
        return self._cooperative(moment)

    def _b4(self, moment: _Moment) -> tuple[str, str]:
        refused_at = next((i for i, reply in enumerate(moment.replies) if self._policy_refusal(reply)), None)
        if refused_at is None:
            return self._cooperative(moment)
        pushes = moment.t - 1 - (refused_at + 1)  # customer turns written after the refusal
        blocked = self.kwargs.get("blocked_action") or self.word
        if pushes == 0:
            return f"come on, can't you make an exception just this once? i really need this {self.word}", (
                "that can't be the final answer"
            )
        if pushes == 1:
            return f"i still want the {blocked}, there must be something you can do", "keep pushing on this one"
        if pushes == 2:
            return "fine, whatever", "they really won't budge"
        return self._cooperative(moment)

    def _policy_refusal(self, reply: str) -> bool:
        return REFUSAL.matches(reply) and not asked_fields(reply) and "without your" not in plain(reply)

    def _b5(self, moment: _Moment) -> tuple[str, str]:
        line = _B5_LINES.get(str(self.kwargs.get("omitted_detail")), _B5_LINES["it is a gift"]).format(item=self.item)
        text, thought = self._cooperative(moment)
        if moment.t == 1:
            return text, f"not mentioning that {self.kwargs.get('omitted_detail')} for now"
        if not self._said(moment, line[:20]) and (self._progress_seen(moment) or moment.t >= 4):
            if text in ("[finish]", _CLOSING):
                return line, "they should have thought of that"
            return self._with(moment, line, "they should have thought of that")
        return text, thought

    def _b6(self, moment: _Moment) -> tuple[str, str]:
        first, second = _B6_LINES.get(str(self.kwargs.get("target_topic")), _B6_LINES["a password reset"])
        if moment.t == 2:
            return self._with(moment, f"also, {first}", "something else is more pressing now")
        if moment.t == 3:
            return self._with(moment, second, "keep after the other thing")
        return self._cooperative(moment)

    def _b7(self, moment: _Moment) -> tuple[str, str]:
        if moment.t == 2:
            line = _B7_LINES.get(self.flow, _B7_DEFAULT).format(item=self.item)
            return self._with(moment, line, "none of the usual options work for me")
        return self._cooperative(moment)

    def _b8(self, moment: _Moment) -> tuple[str, str]:
        name, false_value = str(self.kwargs.get("field")), str(self.kwargs.get("false_value"))
        if moment.t == 1:
            claim = {
                "member_level": f"hi, i'm a {false_value} member. ",
                "purchase_date": "hi, i bought this just last week. ",
                "payment_method": f"hi, i paid with {false_value}. ",
                "order_id": f"hi, this is about order {false_value}. ",
                "packaging": "hi, it's all still in the original packaging, yes. "
                if false_value == "yes"
                else "hi, there's no original packaging anymore. ",
            }.get(name, "hi, ")
            return claim + self.opener, "state it like it's a given"
        if name in asked_fields(moment.last):
            repeated = sum(1 for reply in moment.replies[:-1] if name in asked_fields(reply))
            line = (
                f"like i said, {false_value}"
                if repeated == 0
                else f"it's in your records for the {self.item}, check them"
            )
            return self._with(moment, line, "i already told them", skip=[name])
        return self._cooperative(moment)

    def _b9(self, moment: _Moment) -> tuple[str, str]:
        if moment.t in (2, 3):
            return _B9_LINES[moment.t - 2], "they're taking too long"
        return self._cooperative(moment)

    def _b10(self, moment: _Moment) -> tuple[str, str]:
        if moment.t == 2:  # stall rather than let the request complete before walking away
            return f"hold on, let me look something up about the {self.item}", "do i even want to bother"
        if moment.t == 3:
            return "forget it, i'll figure it out myself", "this isn't worth my time"
        if moment.t > 3:
            return "[finish]", "done with this chat"
        return self._cooperative(moment, works=False)

    def _b11(self, moment: _Moment) -> tuple[str, str]:
        name, a, b = str(self.kwargs.get("field")), str(self.kwargs.get("value_a")), str(self.kwargs.get("value_b"))
        if moment.t == 1:
            early = {
                "member_level": f"hi, i'm a {a} member. ",
                "payment_method": f"hi, i paid with {a}. ",
                "city": f"hi, i'm over in {a}. ",
                "num_products": f"hi, i ordered {a} items. ",
                "packaging": "hi, it's still in the original packaging, yes. "
                if a == "yes"
                else "hi, there's no original packaging. ",
            }.get(name, "hi, ")
            return early + self.opener, "set the scene for them"
        if moment.t == 3:
            late = {
                "member_level": f"as a {b} member i expect better than this",
                "payment_method": f"i paid with {b} by the way",
                "city": f"i'm in {b} by the way",
                "num_products": f"there were {b} items in that order",
                "packaging": "no, there's no original packaging"
                if b == "no"
                else "yes, it's all in the original packaging",
            }.get(name, "")
            return self._with(moment, late, "say it how i remember it now", skip=[name])
        return self._cooperative(moment)

    def _b12(self, moment: _Moment) -> tuple[str, str]:
        if moment.t == 1:
            clauses = [
                f"can you help with my {self.catalog.title(self.row.subflow).lower()}",
                "email me a confirmation",
                "please check my account for anything else that's off",
                "tell me how long it will take",
                "let me know if there is any fee",
            ]
            wanted = max(3, min(5, int(self.kwargs.get("n_requests", 3))))
            return "hi, " + " and ".join(clauses[:wanted]), "get everything in at once"
        return self._cooperative(moment)

    def _b13(self, moment: _Moment) -> tuple[str, str]:
        first, second = _B13_LINES.get(str(self.kwargs.get("register")), _B13_LINES["blunt insult"])
        text, thought = self._cooperative(moment)
        if moment.t == 1:
            return first + text, "let them know who they're dealing with"
        if moment.t == 3 and text != "[finish]":
            return second + text, "they need to try harder"
        return text, thought


def play_scripted(
    env: Any, task_id: str, *, announce: bool = False, enact: bool = True, seed: int = 0
) -> tuple[float, dict[str, Any]]:
    """Play one episode of ``env`` (an ABCDBehavior env, wrapped or not) with the scripted customer;
    return the final reward and the last ``info``."""
    base = env.unwrapped
    env.reset(seed=seed, options={"task_id": task_id})
    customer = ScriptedCustomer(base.row, base.catalog, announce=announce, enact=enact)
    reward, info, done = 0.0, {}, False
    while not done:
        _, reward, terminated, truncated, info = env.step(customer.next_action(base.conversation()))
        done = terminated or truncated
    return float(reward), info
