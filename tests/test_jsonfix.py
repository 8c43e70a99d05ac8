"""JSON coercion of role replies: one case per tier, plus failures.

See docs/users.md, "What every chat model guarantees".
"""

import pytest

from mimesis_gym.core.jsonfix import JSONCoercionError, coerce_json


@pytest.mark.parametrize(
    ("text", "keys", "data", "tier"),
    [
        ('{"answer": "yes"}', ["answer"], {"answer": "yes"}, 0),
        ('Sure! ```json\n{"answer": "yes"}\n``` hope it helps', ["answer"], {"answer": "yes"}, 1),
        ('Here you go: {"answer": "no"} -- done', None, {"answer": "no"}, 1),
        ('```\n{"a": 1}', None, {"a": 1}, 1),  # unclosed fence takes the rest
        ('{"a": "line\nbreak"}', None, {"a": "line\nbreak"}, 1),  # raw newline, non-strict
        ('{"a": 1, "b": [1, 2,],}', None, {"a": 1, "b": [1, 2]}, 2),
        ("{“answer”: “yes”}", ["answer"], {"answer": "yes"}, 3),
        ("{'answer': 'yes', 'score': 3}", None, {"answer": "yes", "score": 3}, 3),
        ('{"ANSWER": "yes"}', ["answer"], {"answer": "yes"}, 0),  # keys match case-insensitively
        ('{"answer": "yes", "extra": 1}', ["answer"], {"answer": "yes", "extra": 1}, 0),
        (
            '{"thought": "he said "no" and left", "answer": yes}',
            ["thought", "answer"],
            {"thought": 'he said "no" and left', "answer": "yes"},
            4,
        ),
        ("{reply: 'it's fine\nreally', score: 3}", ["reply", "score"], {"reply": "it's fine\nreally", "score": 3}, 4),
        (
            '{"scores": [1, 2, 3], "ok": true, "note": "a, b"}',
            ["scores", "ok"],
            {"scores": [1, 2, 3], "ok": True, "note": "a, b"},
            0,
        ),
    ],
)
def test_tiers(text, keys, data, tier):
    result = coerce_json(text, keys)
    assert result.data == data
    assert result.tier == tier


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("no json here", None),
        ("[1, 2, 3]", None),
        ('{"answer": "yes"}', ["verdict"]),
        ("{}", ["answer"]),
        ('{"a": ', None),
        ("", ["answer"]),
    ],
)
def test_failures(text, keys):
    with pytest.raises(JSONCoercionError):
        coerce_json(text, keys)


def test_literal_eval_never_evaluates_code():
    with pytest.raises(JSONCoercionError):
        coerce_json("{__import__('os').system('true'): 1}")


def test_typographic_quotes_inside_valid_json_are_kept():
    assert coerce_json('{"a": "“quoted”"}').data == {"a": "“quoted”"}
