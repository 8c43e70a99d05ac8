"""Human conversation corpora: each shipped adapter on the shared data, the generic JSONL, the registry."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path

import pytest

from mimesis_gym.core.text import is_clean
from mimesis_gym.corpora import (
    CORPORA,
    SPLITS,
    CorpusLoad,
    HumanConversation,
    abcd,
    chitchat,
    jsonl,
    load_corpus,
    oasst1,
    simulatorarena,
    split_conversations,
    thoughttrace,
)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
HUMANS = SHARED_DATA / "humans"


@pytest.fixture(scope="module")
def humans_dir() -> Path:
    if not HUMANS.is_dir():
        pytest.skip(f"../shared/data/humans absent: the human corpora are expected at {HUMANS}")
    return HUMANS


# name: (conversations, user turns, dropped, skipped, dev conversations, test conversations)
SHIPPED = {
    "oasst1": (200, 366, {}, {}, 89, 111),
    "simulatorarena-doc": (51, 349, {}, {}, 25, 26),
    "simulatorarena-math": (50, 562, {}, {"not text": 3, "empty text": 1}, 22, 28),
    "thoughttrace": (20, 164, {}, {}, 11, 9),
    "chitchat": (855, 14754, {"no reply": 645}, {"empty text": 10}, 414, 441),
    "abcd": (3, 22, {}, {"action line": 9}, 0, 3),
}
GOAL_KINDS = {
    "oasst1": {"description": 200},
    "simulatorarena-doc": {"description": 51},
    "simulatorarena-math": {"first_message": 50},
    "thoughttrace": {"description": 20},
    "chitchat": {"description": 824, "first_message": 31},
    "abcd": {"description": 3},
}


def alternate(conversation: HumanConversation) -> bool:
    roles = [turn.role for turn in conversation.turns]
    return all(a != b for a, b in pairwise(roles))


def goal_kinds(load: CorpusLoad) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for conversation in load.conversations:
        kinds[conversation.goal_kind] = kinds.get(conversation.goal_kind, 0) + 1
    return kinds


@pytest.mark.parametrize("name", list(SHIPPED))
def test_each_shipped_corpus_loads_with_its_counts_and_halves(humans_dir, name):
    conversations, user_turns, dropped, skipped, dev, test = SHIPPED[name]
    load = load_corpus(name, humans_dir)
    assert (len(load.conversations), load.user_turns) == (conversations, user_turns), load.summary()
    assert (load.dropped, load.skipped) == (dropped, skipped)
    assert set(load.first_seen) == set(dropped) | set(skipped)
    assert [len(split_conversations(load.conversations, split)) for split in SPLITS] == [dev, test]
    assert goal_kinds(load) == GOAL_KINDS[name]
    ids = [conversation.conv_id for conversation in load.conversations]
    assert len(set(ids)) == len(ids)
    for conversation in load.conversations:
        assert conversation.source == name
        assert alternate(conversation), conversation.id
        assert {"user", "assistant"} <= {turn.role for turn in conversation.turns}
        assert all(turn.text.strip() and is_clean(turn.text) for turn in conversation.turns)
        assert conversation.goal.strip() and is_clean(conversation.goal)
        if conversation.goal_kind == "first_message":
            assert conversation.goal == conversation.user_texts[0]


def test_thoughttrace_keeps_the_users_reasons_and_reactions(humans_dir):
    load = load_corpus("thoughttrace", humans_dir)
    turns = [turn for conversation in load.conversations for turn in conversation.turns]
    user, assistant = [t for t in turns if t.role == "user"], [t for t in turns if t.role == "assistant"]
    assert sum(turn.reason is not None for turn in user) == 154
    assert sum(turn.reaction is not None for turn in assistant) == 156
    assert all(turn.reaction is None for turn in user) and all(turn.reason is None for turn in assistant)
    first = load.conversations[0]
    assert first.conv_id == "user804_task2_conversation1"
    assert first.goal.startswith("I asked the AI to help me find a more efficient way to strain soy milk")
    assert "\nI expect it to give practical, realistic solutions" in first.goal
    assert first.turns[0].reason.startswith("I asked this because straining soy milk manually")


def test_the_shipped_goals_describe_the_task_and_leave_the_rest_out(humans_dir):
    doc = load_corpus("simulatorarena-doc", humans_dir).conversations[0]
    assert doc.goal.startswith("Document type: email.\nGoal: Apology Letter: Write a sincere letter")
    assert "- How did your actions or words affect your friend or colleague" in doc.goal
    assert "satified" not in doc.goal  # the user's feedback after the chat stays out
    case = load_corpus("abcd", humans_dir).conversations[0]
    assert case.goal.startswith(
        "Crystal Minh (bronze member) contacts the customer support of an online clothing store about a"
        " product defect: return size, concerning michael kors jeans."
    )
    assert "order id 3348917502" in case.goal and "address 6821 1st ave san mateo, ny 75227" in case.goal
    assert case.turns[0].text == "Hi!\nHow can I help you?"  # the agent's two lines as one turn
    assert all("Account has been pulled up" not in turn.text for turn in case.turns)  # action lines skipped
    chat = load_corpus("chitchat", humans_dir).conversations[0]
    assert chat.goal == (
        'The user chats with a stranger; both were shown the conversation starter "What if you woke up tomorrow'
        ' morning, and everyone had vanished except you?".'
    )


# -- hand-made files ---------------------------------------------------------------------------------


def write_lines(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def test_jsonl_reads_the_openai_shape(tmp_path):
    path = write_lines(
        tmp_path / "mine.jsonl",
        [
            {
                "id": "a",
                "goal": "Plan a trip to Lisbon.",
                "messages": [
                    {"role": "system", "content": "You are helpful."},
                    {"role": "user", "content": "hi"},
                    {"role": "user", "content": "I want to go to Lisbon"},
                    {"role": "assistant", "content": "When?"},
                    {"role": "user", "content": "May"},
                ],
            },
            {"turns": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
        ],
    )
    load = jsonl.load(path)
    assert load.source == "mine" and load.skipped == {"system message": 1} and load.dropped == {}
    first, second = load.conversations
    assert (first.id, first.goal, first.goal_kind) == ("mine/a", "Plan a trip to Lisbon.", "description")
    assert [(turn.role, turn.text) for turn in first.turns] == [
        ("user", "hi\nI want to go to Lisbon"),
        ("assistant", "When?"),
        ("user", "May"),
    ]
    assert (second.conv_id, second.goal, second.goal_kind) == ("2", "q", "first_message")  # no id: line number


def test_jsonl_reads_the_sharegpt_shape(tmp_path):
    path = write_lines(
        tmp_path / "share.jsonl",
        [
            {
                "id": 7,
                "conversations": [
                    {"from": "system", "value": "sys"},
                    {"from": "gpt", "value": "Hello, how can I help?"},
                    {"from": "human", "value": "fix my bike"},
                    {"from": "gpt", "value": "Which part?"},
                ],
            }
        ],
    )
    (conversation,) = load_corpus(f"jsonl:{path}").conversations
    assert conversation.conv_id == "7" and conversation.goal == "fix my bike"
    assert [turn.role for turn in conversation.turns] == ["assistant", "user", "assistant"]


def test_jsonl_counts_malformed_lines_and_keeps_the_first(tmp_path):
    good = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    path = write_lines(
        tmp_path / "bad.jsonl",
        [
            good,
            "",
            "{not json",
            [1, 2],
            {"id": "x"},
            {"messages": [{"role": "tool", "content": "t"}]},
            {"messages": [{"role": ["user"], "content": "t"}]},
            {"messages": [{"role": "user", "content": None}]},
            {"messages": "hello"},
            {"id": True, "messages": []},
            {"goal": 3, "messages": []},
            good,
        ],
    )
    load = jsonl.load(path)
    assert [c.conv_id for c in load.conversations] == ["1", "12"]  # the blank line 2 is ignored, not counted
    assert load.dropped == {"malformed line": 9}
    assert load.first_seen["malformed line"] == "line 3 (not JSON)"
    assert "9 malformed line (first: line 3 (not JSON))" in load.summary()


def test_jsonl_counts_conversations_without_both_sides_empty_texts_and_duplicate_ids(tmp_path):
    path = write_lines(
        tmp_path / "partial.jsonl",
        [
            {"id": "lonely", "messages": [{"role": "user", "content": "anyone?"}]},
            {"id": "bot", "messages": [{"role": "assistant", "content": "hi"}, {"role": "user", "content": " "}]},
            {"id": "ok", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
            {"id": "ok", "messages": [{"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2"}]},
        ],
    )
    load = jsonl.load(path)
    assert [c.conv_id for c in load.conversations] == ["ok"]
    assert load.dropped == {"no reply": 1, "no user turn": 1, "duplicate id": 1}
    assert load.skipped == {"empty text": 1}
    assert load.first_seen["duplicate id"] == "line 4" and load.first_seen["empty text"] == "line 2"


def test_jsonl_cleans_lone_surrogates_and_bad_bytes_and_keeps_line_separators_in_text(tmp_path):
    path = tmp_path / "odd.jsonl"
    line = '{"goal": "g\\ud800", "messages": [{"role": "user", "content": "a\\udc00b\u2028c"}, '
    line += '{"role": "assistant", "content": "\\ud83d\\ude00"}]}'
    path.write_bytes(
        line.encode()
        + b"\n"
        + b'{"messages": [{"role": "user", "content": "x\xffy"},'
        + b' {"role": "assistant", "content": "z"}]}\n'
    )
    load = jsonl.load(path)
    first, second = load.conversations
    assert first.goal == "g\ufffd" and first.turns[0].text == "a\ufffdb\u2028c" and first.turns[1].text == "\U0001f600"
    assert second.turns[0].text == "x\ufffdy"
    assert all(is_clean(turn.text) for conversation in load.conversations for turn in conversation.turns)


def test_oasst1_and_thoughttrace_count_lines_of_another_shape(tmp_path):
    good = {
        "id": "t1",
        "task_summary": "Plan meals.",
        "messages": [
            {"type": "user", "content": "ideas?", "reasons": [{"content": "busy week"}, {"content": "on a budget"}]},
            {"type": "assistant", "content": "soup", "reactions": [{"content": "too plain"}]},
        ],
    }
    odd = {"id": "t2", "messages": [{"type": ["user"], "content": "x"}]}
    load = thoughttrace.load(write_lines(tmp_path / "tt.jsonl", [good, odd]))
    (conversation,) = load.conversations
    assert conversation.goal == "Plan meals." and conversation.goal_kind == "description"
    assert conversation.turns[0].reason == "busy week\non a budget" and conversation.turns[1].reaction == "too plain"
    assert load.first_seen == {"malformed line": "line 2 (messages is not a list of user/assistant messages)"}
    load = oasst1.load(write_lines(tmp_path / "oa.jsonl", [{"conversation_id": 3, "turns": []}]))
    assert load.conversations == [] and load.first_seen == {"malformed line": "line 1 (no conversation_id)"}


def test_chitchat_user_is_the_first_to_write_and_a_third_speaker_is_counted(tmp_path):
    def message(sender: str, text: str) -> dict:
        return {"sender": sender, "text": text, "timestamp": "2018-01-01T00:00:00Z"}

    data = {
        "silent-first": {"messages": [[message("a", "")], [message("b", "hi"), message("b", "there?")]]},
        "pair": {"prompt": "Cats or dogs?", "messages": [[message("a", "cats")], [message("b", "dogs")]]},
        "three": {"messages": [[message("a", "x")], [message("b", "y")], [message("c", "z")]]},
        "odd": {"messages": "nope"},
    }
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(data))
    load = chitchat.load(path)
    assert [c.conv_id for c in load.conversations] == ["pair"]
    assert load.dropped == {"no reply": 1, "more than two speakers": 1, "malformed record": 1}
    assert load.conversations[0].goal_kind == "description" and '"Cats or dogs?"' in load.conversations[0].goal


def test_simulatorarena_pairs_queries_with_responses_and_counts_bad_records(tmp_path):
    records = [
        {"workerId": "w1", "problem_id": 5, "user_queries": ["q1", ["image.png"], "q3"], "ai_responses": ["r1", None]},
        {"workerId": "w2", "user_queries": ["q"], "ai_responses": ["r"]},  # no problem_id
    ]
    path = tmp_path / "math.json"
    path.write_text(json.dumps(records))
    load = simulatorarena.load_math(path)
    (conversation,) = load.conversations
    assert conversation.conv_id == "w1-5"
    assert [(t.role, t.text) for t in conversation.turns] == [("user", "q1"), ("assistant", "r1"), ("user", "q3")]
    assert load.skipped == {"not text": 3} and load.dropped == {"malformed record": 1}
    path.write_text(json.dumps({"not": "a list"}))
    with pytest.raises(ValueError, match="expected a JSON list of SimulatorArena records"):
        simulatorarena.load_math(path)


def test_abcd_reads_the_full_release_shape_and_a_scenario_without_details(tmp_path):
    conversation = {
        "convo_id": 1,
        "scenario": {"flow": "storewide_query", "subflow": "timing_4", "personal": {}, "order": {}, "product": {}},
        "original": [["customer", "when do you open?"], ["action", "Searching the FAQ pages ..."], ["agent", "9am"]],
    }
    path = tmp_path / "abcd_v1.1.json"
    path.write_text(json.dumps({"train": [conversation], "dev": [{"convo_id": 2}], "test": []}))
    load = abcd.load(path)
    (case,) = load.conversations
    assert (
        case.goal
        == "A customer contacts the customer support of an online clothing store about a storewide query: timing."
    )
    assert load.skipped == {"action line": 1} and load.dropped == {"malformed record": 1}


def test_a_file_that_is_not_json_is_an_error_naming_it(tmp_path):
    path = tmp_path / "chitchat.json"
    path.write_text("{oops")
    with pytest.raises(ValueError, match=f"{re.escape(str(path))}: not a JSON file"):
        chitchat.load(path)


# -- registry ----------------------------------------------------------------------------------------


def test_every_registered_corpus_has_a_licence_and_a_description():
    for name, spec in CORPORA.items():
        assert spec.name == name and spec.licence and spec.description
    assert set(CORPORA) == {*SHIPPED, "jsonl"}


def test_an_unknown_corpus_names_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown corpus 'oasst2'; known: oasst1, simulatorarena-doc, .*jsonl"):
        load_corpus("oasst2", Path("."))


def test_a_missing_file_names_the_path_tried_and_the_fix(tmp_path):
    with pytest.raises(
        FileNotFoundError, match=r"no file at .*/oasst1/oasst1_mirror.jsonl; pass the folder that holds"
    ):
        load_corpus("oasst1", tmp_path)
    with pytest.raises(FileNotFoundError, match=r"abcd/abcd_sample.json or .*/\.\./abcd/abcd_sample.json"):
        load_corpus("abcd", tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no file at .*nowhere\.jsonl"):
        load_corpus(f"jsonl:{tmp_path / 'nowhere.jsonl'}")


def test_a_spec_that_lacks_what_it_needs_says_what_to_write():
    with pytest.raises(ValueError, match="give its file as jsonl:PATH"):
        load_corpus("jsonl", Path("."))
    with pytest.raises(ValueError, match="write jsonl:PATH"):
        load_corpus("jsonl:")
    with pytest.raises(ValueError, match=r"pass that folder \(humans_dir\), or give the file as oasst1:PATH"):
        load_corpus("oasst1")


def test_abcd_is_found_beside_the_humans_folder_and_a_name_takes_a_path(tmp_path):
    record = {"convo_id": 9, "scenario": {}, "original": [["customer", "hi"], ["agent", "hello"]]}
    (tmp_path / "abcd").mkdir()
    (tmp_path / "humans").mkdir()
    (tmp_path / "abcd" / "abcd_sample.json").write_text(json.dumps([record]))
    (case,) = load_corpus("abcd", tmp_path / "humans").conversations
    assert (case.id, case.goal_kind, case.goal) == ("abcd/9", "first_message", "hi")
    other = tmp_path / "elsewhere.json"
    other.write_text(json.dumps([record, record]))
    load = load_corpus(f"abcd:{other}")
    assert load.path == other and load.dropped == {"duplicate id": 1}


def test_split_conversations_keeps_order_and_rejects_an_unknown_half(tmp_path):
    lines = [
        {"id": str(i), "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
        for i in range(20)
    ]
    conversations = jsonl.load(write_lines(tmp_path / "many.jsonl", lines)).conversations
    dev, test = (split_conversations(conversations, split) for split in SPLITS)
    assert len(dev) + len(test) == 20 and dev and test
    assert [c.conv_id for c in dev] == [c.conv_id for c in conversations if c.split == "dev"]
    with pytest.raises(ValueError, match="split 'train' is not one of dev, test"):
        split_conversations(conversations, "train")  # type: ignore[arg-type]
