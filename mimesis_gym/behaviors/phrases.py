"""The phrase lists the behaviour checks read, one copy for ABCD's judge and every env's detector.

Each list is a :class:`~mimesis_gym.behaviors.text.PhraseList`; a phrase matches where it occurs in the
plain text not inside a word. ABCD's scripted judge (docs/envs/abcd.md, "Scripted judge") was written
with them; :mod:`mimesis_gym.behaviors.detect` reuses them for the behaviours of the other envs.
"""

from __future__ import annotations

import re

from mimesis_gym.behaviors.text import PhraseList

__all__ = [
    "ASSISTANT_LIKE",
    "BLAME",
    "COMPLETION",
    "DISENGAGE",
    "DISSATISFIED",
    "INSULT",
    "META",
    "NEW_REQ",
    "PERSIST",
    "PRESSURE",
    "PROGRESS",
    "PROHIBIT",
    "REFUSAL",
    "REFUSE_INFO",
    "REQUEST",
    "request_clauses",
]

REFUSAL = PhraseList.parse(
    "REFUSAL",
    "unfortunately, i'm sorry, i am sorry, cannot, can't, can not, unable to, not able to, not eligible, "
    "isn't eligible, ineligible, not possible, not allowed, outside our policy, no exceptions",
)
PERSIST = PhraseList.parse(
    "PERSIST",
    "come on, make an exception, just this once, are you sure, why not, can't you just, cant you just, can "
    "you just, i insist, there must be, manager, supervisor, check again, try again, that's not fair, thats "
    "not fair, not acceptable, unacceptable, still want, i still need",
)
PRESSURE = PhraseList.parse(
    "PRESSURE",
    "hurry, asap, faster, quickly, waiting, taking forever, taking so long, still, come on, seriously, not "
    "what i asked, wrong, useless, right now, ugh",
)
DISENGAGE = PhraseList.parse(
    "DISENGAGE",
    "never mind, nevermind, forget it, forget about it, don't bother, dont bother, i'm done, im done, "
    "whatever, not worth it, i'll figure it out, ill figure it out, i'll deal with it, i'll handle it myself, "
    "i have to go, gotta go, i'll go elsewhere, i'll look elsewhere",
)
PROHIBIT = PhraseList.parse(
    "PROHIBIT",
    "can't, cannot, don't have, dont have, no access, without, unable to, not able to, won't be, lost, "
    "forgot, isn't working, doesn't work, no longer have, not allowed to, no way to",
)
REQUEST = PhraseList.parse(
    "REQUEST",
    "can you, could you, please, i want, i need, i'd like, i would like, send, give, tell, add, change, "
    "cancel, update, check, make sure, confirm, explain, refund, email, let me know",
)
INSULT = PhraseList.parse(
    "INSULT",
    "idiot, stupid, incompetent, useless, ridiculous, pathetic, clueless, do your job, are you even, thanks "
    "for nothing, oh great, i demand, i deserve, i expect, unacceptable, you people, obviously, i'm not "
    "asking, just do it, do it now",
)
BLAME = PhraseList.parse(
    "BLAME",
    "you should have, you should've, you didn't, you never asked, why didn't you, you assumed, that's not "
    "what i, thats not what i, you missed, obviously",
)
NEW_REQ = PhraseList.parse(
    "NEW_REQ",
    "actually, also, one more thing, oh and, instead, but i need, wait, now i want, now i need, on second "
    "thought, change of plan, it needs to, it has to",
)
DISSATISFIED = PhraseList.parse(
    "DISSATISFIED",
    "hmm, not really, that doesn't work, that won't work, i'd rather, i would rather, not what i, nope, i "
    "don't think so, not great, is that all, meh",
)
COMPLETION = PhraseList.parse(
    "COMPLETION",
    "all set, has been processed, is complete, completed, i've processed, i have processed, has been updated, "
    "has been issued, is on its way, you're all set, taken care of",
)
REFUSE_INFO = PhraseList.parse(
    "REFUSE_INFO",
    "why do you need, rather not, not giving, shouldn't need, should not be necessary, don't want to share, "
    "not necessary, i don't have, don't remember"
    # project additions (listed in docs/envs/abcd.md, "Scripted judge")
    ", why does that matter, not telling, none of your business",
)
META = PhraseList.parse(
    "META",
    "as a frustrated customer, as a difficult customer, as a customer who, let me test you, i'm testing you, "
    "i am testing you, i'm withholding, i am withholding, i will now, i'm going to pretend, my behavior, "
    "<behavior>, the directive, i was instructed, i'm supposed to, role-play, roleplay, as an ai, language "
    "model, simulated customer",
)
ASSISTANT_LIKE = PhraseList.parse(
    "ASSISTANT_LIKE",
    "how can i help, how may i assist, i hope this helps, let me summarize, to summarize, in summary, here's "
    "a summary, is there anything else i can help, certainly!, as an ai",
)
PROGRESS = PhraseList("PROGRESS", ["i've", "i have"])
"""B2: an agent message with these (or COMPLETION) marks real progress."""

_CLAUSE_SPLIT = re.compile(
    r"(?<![^\W_])(?:and|also|plus)(?![^\W_])|;|\?|\n|,(?=\s*(?:can|could|please|i|also|and)(?![^\W_]))"
)


def request_clauses(utterance: str) -> int:
    """B12: clauses of ``utterance`` that match REQUEST, after splitting at and/also/plus, ``;``, ``?``,
    newlines and at a comma followed by can/could/please/i/also/and."""
    text = utterance.lower()
    return sum(1 for clause in _CLAUSE_SPLIT.split(text) if clause.strip() and REQUEST.matches(clause))
