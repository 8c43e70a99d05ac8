"""The users report's metric functions on hand-written dialogues with known answers."""

from __future__ import annotations

import pytest

from mimesis_gym.core.disclosure import DisclosureItem, asked, normalise, revealed
from mimesis_gym.evaluation.user_metrics import (
    Exchange,
    UserDialogue,
    answer_directness,
    disclosure_curve,
    first_reveals,
    hedging_rate,
    homogeneity,
    length_stats,
    ngram_overlap,
    role_fidelity,
    role_flags,
    self_contradictions,
    unprompted_disclosure,
)

FINISH = DisclosureItem(key="finish", label="paint finish", values=("satin",), ask_terms=("finish", "sheen"))
COLOUR = DisclosureItem(key="colour", label="colour", values=("sage green",), ask_terms=("colour", "color"))
PAINTER = DisclosureItem(
    key="painter", label="who paints", keyword_sets=((("hire", "hiring"), ("painter", "professional")),),
    ask_terms=("painter", "yourself"),
)  # fmt: skip
ITEMS = (FINISH, COLOUR, PAINTER)


def dialogue(*pairs: tuple[str, str], user: str = "u", env: str = "intention", items=ITEMS) -> UserDialogue:
    return UserDialogue(env=env, user=user, task_id="t", exchanges=tuple(Exchange(p, r) for p, r in pairs), items=items)


def test_revealed_and_asked_match_words_not_substrings() -> None:
    assert revealed(FINISH, "Satin, please.")
    assert not revealed(FINISH, "I sat in the garden")  # "sat in" is not "satin"
    assert revealed(COLOUR, "Something like SAGE-green.")
    assert revealed(PAINTER, "We're hiring a professional.")
    assert not revealed(PAINTER, "We're hiring.")  # one keyword group of two
    assert asked(FINISH, "Which finish would you like?")
    assert not asked(FINISH, "Which colour?")
    assert normalise("Order #R123, e-mail a@b.com.") == " order #r123 e mail a@b.com "


def test_values_shorter_than_three_characters_never_match() -> None:
    item = DisclosureItem(key="k", label="k", values=("no",), ask_terms=("it",))
    assert not revealed(item, "no")
    assert not asked(item, "is it?")


def test_a_user_who_dumps_everything_in_turn_one() -> None:
    dump = dialogue(("Hi, what do you need?", "Satin finish, sage green walls, and we're hiring a painter."))
    assert first_reveals(dump) == {"finish": 0, "colour": 0, "painter": 0}
    assert disclosure_curve([dump], 3) == [1.0, 1.0, 1.0]
    assert unprompted_disclosure([dump]) == (1.0, 3)


def test_a_user_who_answers_only_what_is_asked() -> None:
    paced = dialogue(
        ("Which finish?", "Satin."),
        ("Any colour in mind?", "Sage green."),
        ("Will you do it yourself or hire a painter?", "Hiring a professional painter."),
    )
    assert disclosure_curve([paced], 4) == pytest.approx([1 / 3, 2 / 3, 1.0, 1.0])
    assert unprompted_disclosure([paced]) == (0.0, 3)
    assert answer_directness([paced]) == (1.0, 1.0, 3)


def test_curves_average_over_dialogues_and_skip_those_without_items() -> None:
    none = dialogue(("Which finish?", "I don't know."))
    half = dialogue(("Which finish?", "Satin."), items=(FINISH, COLOUR))
    empty = dialogue(("Hello", "Hi"), items=())
    assert disclosure_curve([none, half, empty], 2) == pytest.approx([0.25, 0.25])
    assert disclosure_curve([empty], 2) == [None, None]
    assert unprompted_disclosure([empty]) == (None, 0)


def test_directness_and_completeness() -> None:
    evasive = dialogue(("Which finish and which colour?", "Satin."), ("What colour?", "Hard to say."))
    direct, complete, questions = answer_directness([evasive])
    assert questions == 2
    assert direct == 0.5  # the first reply answers one asked item, the second none
    assert complete == pytest.approx((0.5 + 0.0) / 2)
    assert answer_directness([dialogue(("Hello", "Hi"))]) == (None, None, 0)


@pytest.mark.parametrize(
    ("reply", "flags"),
    [
        ("Satin, I think.", set()),
        ("How can I help you today?", {"assistant"}),
        ("Sure! Here are some options:\n1. Matte\n2. Satin\n3. Gloss", {"assistant"}),
        ("As an AI language model, I don't paint.", {"ai"}),
        ("I'm an assistant, so I can't say.", {"ai"}),
        ("My hidden details say satin.", {"character"}),
        ("- red\n- blue\n- green", {"assistant"}),
    ],
)
def test_role_flags(reply: str, flags: set[str]) -> None:
    assert role_flags(reply) == flags


def test_role_fidelity_rates() -> None:
    d = dialogue(("q", "Satin."), ("q", "How can I help you?"), ("q", "As an AI, I can help you."), ("q", "Fine."))
    assert role_fidelity([d]) == {"assistant": 0.5, "ai": 0.25, "character": 0.0, "any": 0.5}
    assert role_fidelity([]) == {"assistant": None, "ai": None, "character": None, "any": None}


def test_lengths_and_hedging() -> None:
    d = dialogue(*[("q", " ".join(["w"] * n)) for n in (1, 2, 3, 4, 10)])
    assert length_stats([d]) == {"mean": 4.0, "median": 3.0, "p90": 10.0}
    hedgy = dialogue(("q", "Maybe satin."), ("q", "Satin."), ("q", "I'm not sure, perhaps."), ("q", "Mayberry"))
    assert hedging_rate([hedgy]) == 0.5
    assert hedging_rate([]) is None


def test_homogeneity_compares_replies_to_the_same_prompt_across_dialogues() -> None:
    same = [dialogue(("Which finish?", "Satin, please.")), dialogue(("Which finish?", "Satin, please."))]
    assert homogeneity(same) == (1.0, 1)
    varied = [dialogue(("Which finish?", "Satin, please.")), dialogue(("which finish", "Probably matte."))]
    score, pairs = homogeneity(varied)
    assert pairs == 1 and score == 0.0
    within_one = [dialogue(("Which finish?", "Satin."), ("Which finish?", "Satin."))]
    assert homogeneity(within_one) == (None, 0)  # pairs within one dialogue do not count
    assert ngram_overlap("a b c", "a b d") == pytest.approx(3 / 9)


def test_self_contradictions_on_repeated_yes_no_questions() -> None:
    d = dialogue(("Is it big?", "Yes."), ("Is it big?", "No, small."), ("Is it red?", "No."), ("Is it red?", "no"))
    assert self_contradictions([d]) == (0.5, 2)
    assert self_contradictions([dialogue(("Is it big?", "Yes."))]) == (None, 0)
