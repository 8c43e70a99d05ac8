"""The action grammar: one row per behaviour, the expected result written out.

See docs/env-contract.md, "The action grammar".
"""

import pytest

from mimesis_gym.core.actions import MalformedAction, ParsedAction, grammar_help, parse_action

ALL = {"action", "search", "answer", "finish"}


@pytest.mark.parametrize(
    ("action", "kind", "content", "canonical"),
    [
        ("[action] hello", "action", "hello", "[action] hello"),
        ("  [search]  test  ", "search", "test", "[search]  test"),
        ("[answer] 29", "answer", "29", "[answer] 29"),
        ("[answer]29", "answer", "29", "[answer]29"),
        ("[action] line one\nline two", "action", "line one\nline two", "[action] line one\nline two"),
        ("[finish]", "finish", "", "[finish]"),
        ("[finish] thanks, bye", "finish", "", "[finish]"),
        ({"choice": "answer", "content": "29"}, "answer", "29", "[answer] 29"),
        ({"choice": "answer", "content": 29}, "answer", "29", "[answer] 29"),
        ({"choice": "answer", "content": [1, 2]}, "answer", "[1, 2]", "[answer] [1, 2]"),
        ({"choice": "search", "content": True}, "search", "true", "[search] true"),
        ({"choice": "finish"}, "finish", "", "[finish]"),
        ({"choice": "action", "content": "hi", "extra": 1}, "action", "hi", "[action] hi"),
        ('{"choice": "action", "content": "hi"}', "action", "hi", "[action] hi"),
        (' {"choice": "answer", "content": 3.5} ', "answer", "3.5", "[answer] 3.5"),
        # content that already starts with the chosen tag is kept as it is (UserRL's tool wrapper)
        ({"choice": "answer", "content": "[answer] -16"}, "answer", "-16", "[answer] -16"),
        ({"choice": "action", "content": "[action]1 2"}, "action", "1 2", "[action]1 2"),
        ('{"choice": "search", "content": "[search] x"}', "search", "x", "[search] x"),
        ({"choice": "answer", "content": "[action] 3"}, "answer", "[action] 3", "[answer] [action] 3"),
        ({"choice": "answer", "content": " [answer] 3"}, "answer", "[answer] 3", "[answer]  [answer] 3"),
    ],
)
def test_well_formed_actions(action, kind, content, canonical):
    parsed = parse_action(action, ALL)
    assert parsed == ParsedAction(kind=kind, tag=kind, content=content, canonical=canonical)


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ("", "the action is empty"),
        ("   ", "the action is empty"),
        ("hello", "it does not start with a tag"),
        ("[Action] hi", "tags are lower case: write [action], not [Action]"),
        ("[ANSWER] 1", "tags are lower case: write [answer], not [ANSWER]"),
        ("[ask] hi", "[ask] is not a tag of this environment"),
        ("[action hi", "the tag is not closed with ']'"),
        ("[action]", "[action] needs content after the tag"),
        ("[answer]   ", "[answer] needs content after the tag"),
        (
            "{",
            "it starts with '{' but is not a valid JSON tool call (Expecting property name enclosed in double "
            "quotes: line 1 column 2 (char 1))",
        ),
        ({"choice": "dance", "content": "x"}, "the tool call's choice is 'dance'"),
        ({"content": "x"}, "the tool call's choice is missing"),
        ({"choice": "answer"}, "the tool call with choice 'answer' has no content"),
        ({"choice": "answer", "content": None}, "the tool call with choice 'answer' has no content"),
        ({"choice": "answer", "content": ""}, "[answer] needs content after the tag"),
        (42, "an action must be a string or a tool-call dict, not int"),
    ],
)
def test_malformed_actions_say_what_was_wrong(action, reason):
    parsed = parse_action(action, ALL)
    assert isinstance(parsed, MalformedAction)
    assert parsed.reason == reason
    assert parsed.message == f"Invalid action: {reason}. {grammar_help(ALL)}"


def test_kind_the_env_does_not_accept_is_malformed():
    parsed = parse_action("[search] x", {"action", "answer"})
    assert isinstance(parsed, MalformedAction)
    assert parsed.reason == "this environment does not accept [search]"
    assert "[search]" not in grammar_help({"action", "answer"})


def test_tolerated_alias_is_handled_as_another_kind():
    parsed = parse_action("[search] is it a cat?", {"action", "answer"}, {"search": "action"})
    assert parsed == ParsedAction(
        kind="action", tag="search", content="is it a cat?", canonical="[search] is it a cat?"
    )


def test_transcript_text_of_unparsed_input():
    assert parse_action("  oops  ", ALL).transcript_text == "oops"
    assert parse_action({"choice": "x"}, ALL).transcript_text == '{"choice": "x"}'


def test_grammar_help_names_tags_and_tool():
    assert grammar_help(ALL) == (
        "Write the action as one of [action] <content>, [search] <content>, [answer] <content>, [finish] "
        '(tags in lower case, at the start), or call interact_with_env with "choice" one of action, search, '
        'answer, finish and a "content".'
    )
