"""Think handling and the role frame (docs/users.md, "What every chat model guarantees")."""

import pytest

from mimesis_gym.core.conventions import has_think_tag, reinline_reasoning, role_messages, split_thought


@pytest.mark.parametrize(
    ("raw", "utterance", "thought"),
    [
        ("plain text", "plain text", None),
        ("<think>plan</think>Hello!", "Hello!", "plan"),
        ("<think>\nplan\n</think>\n\nHello!", "Hello!", "plan"),
        ("a<think>one</think>b<think>two</think>c", "abc", "one\n\ntwo"),
        ("reasoning here</think>\n\nThe answer.", "The answer.", "reasoning here"),  # pre-filled opener
        ("Partial answer <think>cut off mid", "Partial answer", "cut off mid"),  # token cap mid-thought
        ("<think>only thinking, never finished", "", "only thinking, never finished"),
        ("<think>   </think>Hi", "Hi", None),  # whitespace-only thought
        ("<think></think>Hi", "Hi", None),
        ("<seed:think>seed plan</seed:think>Reply", "Reply", "seed plan"),
        ("<seed:think>s</seed:think>x<think>t</think>y", "xy", "s\n\nt"),
        ("<think>outer<think>inner</think>rest</think>tail", "tail", "outerinner\n\nrest"),  # nested
        ("before</think>mid<think>x</think>end", "midend", "before\n\nx"),
        ("<THINK>upper case is not a tag</THINK>", "<THINK>upper case is not a tag</THINK>", None),
    ],
)
def test_split_thought(raw, utterance, thought):
    assert split_thought(raw) == (utterance, thought)


def test_has_think_tag():
    assert has_think_tag("x</think>") and has_think_tag("<seed:think>") and not has_think_tag("plain")


def test_reinline_reasoning_only_without_a_closing_tag():
    assert reinline_reasoning("Hi", "plan") == "<think>plan</think>Hi"
    assert reinline_reasoning("p</think>Hi", "plan") == "p</think>Hi"
    assert reinline_reasoning("Hi", None) == "Hi"
    assert reinline_reasoning("Hi", "") == "Hi"


def test_role_messages_frame_and_merging():
    messages = role_messages(
        "sys",
        [("self", "I start"), ("self", "and go on"), ("other", "agent says"), ("other", "more"), ("self", "reply")],
    )
    assert messages == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Hello."},
        {"role": "assistant", "content": "I start\n\nand go on"},
        {"role": "user", "content": "agent says\n\nmore"},
        {"role": "assistant", "content": "reply"},
    ]


def test_role_messages_without_opener_and_bad_speaker():
    assert role_messages("s", [("self", "x")], opener=None)[1] == {"role": "assistant", "content": "x"}
    with pytest.raises(ValueError, match="speaker"):
        role_messages("s", [("agent", "x")])
