"""Text that cannot be encoded never kills a run: lone surrogates, odd-but-valid agent JSON, file loads.

The agent and user faults come from real loopback HTTP servers (``FaultServer``) or registered chat
models; the property tests push random Unicode (surrogates, NUL, bidirectional marks, 1 MB strings)
through env steps, the runner and the record store.
"""

import asyncio
import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mimesis_gym.core.actions import cap_action
from mimesis_gym.core.http import EndpointConfig, OpenAIChatModel
from mimesis_gym.core.tasks import TaskPack, read_jsonl
from mimesis_gym.core.text import AGENT_TEXT_MAX_BYTES, REPLACEMENT, clean_json, clean_text, is_clean, truncate_utf8
from mimesis_gym.evaluation.records import EpisodeRecord, UserFailureRecord
from mimesis_gym.evaluation.runner import EvalConfig, run_eval
from mimesis_gym.evaluation.store import ResultsStore
from mimesis_gym.users.registry import register_user
from tests.support.chat_models import ScriptedChatModel
from tests.support.echo_env import EchoEnv

LONE = "\ud83d"
NASTY = [LONE, "\x00", "\ude00", "\u202e", "\u200f", "\ufeff", "\U0001f600", "\ud83d\ude00"]
"""Lone high and low surrogates, NUL, bidirectional marks, a BOM, an emoji and a split emoji pair."""

EVERY_CATEGORY = ["L", "M", "N", "P", "S", "Z", "Cc", "Cf", "Cs", "Co", "Cn"]
unicode_text = st.lists(st.one_of(st.characters(categories=EVERY_CATEGORY), st.sampled_from(NASTY)), max_size=48).map(
    "".join
)


def run(config, out, **kwargs):
    return asyncio.run(run_eval(config, out, progress=False, **kwargs))


def utf8_lines(path):
    """Every line of ``path`` decoded strictly: the file is valid UTF-8 or this raises."""
    return path.read_bytes().decode("utf-8").splitlines()


def tool_call(content, *, escaped=True):
    """A ``tool:`` fault mode whose arguments text holds ``content`` JSON-escaped or raw."""
    return "tool:" + json.dumps({"choice": "action", "content": content}, ensure_ascii=escaped)


# ------------------------------------------------------------------------------------- clean_text


def test_clean_text_replaces_only_what_cannot_be_encoded():
    assert clean_text("plain \x00 \u202e text \U0001f600") == "plain \x00 \u202e text \U0001f600"
    assert clean_text(f"a{LONE}b") == f"a{REPLACEMENT}b"
    assert clean_text("\ud83d\ude00") == "\U0001f600"  # a split pair is joined, not replaced
    assert clean_text(b"a\xffb") == f"a{REPLACEMENT}b"
    assert clean_json({LONE: [LONE, (1, None, LONE)]}) == {REPLACEMENT: [REPLACEMENT, (1, None, REPLACEMENT)]}


@given(unicode_text)
def test_clean_text_always_encodes_and_keeps_clean_text(text):
    cleaned = clean_text(text)
    assert is_clean(cleaned)
    cleaned.encode("utf-8")
    if is_clean(text):
        assert cleaned is text


# ------------------------------------------------------------------------------------- the eval bug


@pytest.mark.parametrize(
    "arguments",
    [
        json.dumps({"choice": "answer", "content": LONE}),  # the escape inside the arguments text
        '{"choice": "answer", "content": "' + LONE + '"}',  # a raw lone surrogate in the arguments text
    ],
)
def test_a_lone_surrogate_in_tool_arguments_does_not_kill_eval_or_resume(fault_server, tmp_path, arguments):
    fault_server.script(f"tool:{arguments}", f"tool:{arguments}")
    config = EvalConfig(
        envs=["function"], agents=[f"openai:fault-model@{fault_server.base_url}"], split="demo", limit=1, max_turns=1
    )
    _, counts = run(config, tmp_path)
    assert counts == {"ok": 1}
    (record,) = ResultsStore(tmp_path / "episodes.jsonl").read()
    assert record.steps[0].content == REPLACEMENT
    assert is_clean(json.dumps(record.transcript, ensure_ascii=False))
    assert all(is_clean(line) for line in utf8_lines(tmp_path / "episodes.jsonl"))
    _, counts = run(config, tmp_path, resume=True)  # the unit is finished: resume reads it back
    assert counts == {"ok": 1}


def test_a_lone_surrogate_from_the_user_reaches_the_agent_as_u_fffd(fault_server):
    fault_server.script("ok:" + json.dumps({"reply": f"hi {LONE} there"}))  # an escape inside the reply's JSON
    env = EchoEnv(user=OpenAIChatModel(EndpointConfig(base_url=fault_server.base_url, model="fault-model")))
    env.reset(seed=0)
    obs, *_ = env.step("[action] hello")
    assert obs == f"hi {REPLACEMENT} there"
    assert all(is_clean(m["content"]) for m in env.transcript)
    env.close()


# ------------------------------------------------------------------------------- odd agent JSON


ODD_BODIES = {
    "null choices": ('{"choices": null}', "choices is null"),
    "choices an object": ('{"choices": {"message": {}}}', "choices is an object"),
    "choice a string": ('{"choices": ["hi"]}', "choices[0] is a string"),
    "message a string": ('{"choices": [{"message": "hello"}]}', "choices[0].message is a string"),
    "message null": ('{"choices": [{"message": null}]}', "choices[0].message is null"),
    "content a number": ('{"choices": [{"message": {"content": 5}}]}', "content is a number"),
    "tool_calls a string": ('{"choices": [{"message": {"tool_calls": "x"}}]}', "tool_calls is a string"),
    "tool_calls of numbers": ('{"choices": [{"message": {"tool_calls": [5]}}]}', "tool_calls[0] is a number"),
    "function a string": (
        '{"choices": [{"message": {"tool_calls": [{"function": "f"}]}}]}',
        "tool_calls[0].function is a string",
    ),
}


@pytest.mark.parametrize("case", list(ODD_BODIES))
def test_odd_but_valid_json_from_an_http_agent_is_an_agent_error(fault_server, tmp_path, case):
    body, message = ODD_BODIES[case]
    fault_server.script(f"raw:{body}")
    config = EvalConfig(
        envs=["function"], agents=[f"openai:fault-model@{fault_server.base_url}"], split="demo", limit=1
    )
    _, counts = run(config, tmp_path)
    (record,) = ResultsStore(tmp_path / "episodes.jsonl").read()
    assert counts == {"agent_error": 1} and record.status == "agent_error"
    assert record.error.startswith("agent: bad_response: ") and message in record.error


def test_usage_of_the_wrong_shape_counts_as_zero(fault_server, tmp_path):
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "interact_with_env", "arguments": {"choice": "finish"}},
    }
    body = {"choices": [{"message": {"content": None, "tool_calls": [call]}}], "usage": "lots"}
    fault_server.script("raw:" + json.dumps(body))
    config = EvalConfig(
        envs=["function"], agents=[f"openai:fault-model@{fault_server.base_url}"], split="demo", limit=1
    )
    _, counts = run(config, tmp_path)
    (record,) = ResultsStore(tmp_path / "episodes.jsonl").read()
    assert counts == {"ok": 1} and record.steps[0].action_kind == "finish"
    assert record.usage["agent"]["prompt_tokens"] == 0
    assert record.transcript[2]["tool_calls"][0]["function"]["arguments"] == '{"choice": "finish"}'


# ---------------------------------------------------------------------------------- file loads


def test_task_files_with_lone_surrogate_escapes_load_as_u_fffd(tmp_path):
    for split in ("train", "test", "demo"):
        (tmp_path / f"{split}.jsonl").write_text(json.dumps({"id": f"{split}-{LONE}", "text": LONE}) + "\n")
    assert read_jsonl(tmp_path / "test.jsonl") == [{"id": f"test-{REPLACEMENT}", "text": REPLACEMENT}]
    pack = TaskPack.from_jsonl("p", tmp_path, lambda row: type("Task", (), row)())
    assert pack.get(f"demo-{REPLACEMENT}").text == REPLACEMENT


# ------------------------------------------------------------------------------------- the store


def record_with(text, **fields):
    return EpisodeRecord(
        run_id="r", agent="a", user="u", judge="self", env_id="e", env="turtle", task_id=text, trial=0, seed=0,
        key=f"k|{text}", status="user_failure", transcript=[{"role": "user", "content": text, text: [text]}],
        user_failures=[UserFailureRecord(turn=1, role="r", kind="k", info_kind="other", detail=text)],
        error=text, **fields,
    )  # fmt: skip


def test_the_store_writes_and_reads_back_unencodable_text(tmp_path):
    store = ResultsStore(tmp_path / "episodes.jsonl")
    asyncio.run(store.append(record_with(f"x{LONE}y\x00")))
    (back,) = store.read()
    assert back.error == f"x{REPLACEMENT}y\x00" and back.transcript[0]["content"] == back.error
    assert all(is_clean(key) for key in back.transcript[0])  # a key too (pydantic may give one U+FFFD per byte)
    assert all(is_clean(line) for line in utf8_lines(store.path))


def test_the_store_reads_escaped_surrogates_and_invalid_bytes_written_by_other_tools(tmp_path):
    path = tmp_path / "episodes.jsonl"
    escaped = json.dumps(record_with("a").model_dump(mode="json") | {"error": LONE, "key": "k1"})
    raw = json.dumps(record_with("b").model_dump(mode="json") | {"key": "k2"}).encode().replace(b'"b"', b'"\xff"', 1)
    path.write_bytes(escaped.encode() + b"\n" + raw + b"\n")
    store = ResultsStore(path)
    assert not store.repair()
    first, second = store.read()
    assert first.error == REPLACEMENT and second.task_id == REPLACEMENT


# ------------------------------------------------------------------------------ property tests


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(unicode_text, min_size=1, max_size=4))
def test_env_steps_take_any_unicode_and_answer_encodable_text(texts):
    env = EchoEnv()  # the scripted listener echoes the agent's text upper-cased into the observation
    env.reset(seed=0)
    for text in texts:
        tool_call_text = json.dumps({"choice": "action", "content": text})  # escapes, as a model writes them
        for action in (f"[action] {text}", {"choice": "action", "content": text}, tool_call_text, text):
            obs, _, _, _, info = env.step(action)
            obs.encode("utf-8")
            json.dumps(info, ensure_ascii=False).encode("utf-8")
    assert all(is_clean(m["content"]) for m in env.transcript)
    env.close()


@settings(max_examples=30, deadline=None)
@given(unicode_text, unicode_text)
def test_the_store_round_trips_any_unicode(tmp_path_factory, first, second):
    store = ResultsStore(tmp_path_factory.mktemp("store") / "episodes.jsonl")
    asyncio.run(store.append(record_with(first)))
    asyncio.run(store.append(record_with(second)))
    records = store.read()
    assert [r.error for r in records] == [clean_text(first), clean_text(second)]
    assert all(is_clean(line) for line in utf8_lines(store.path))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(agent_text=unicode_text, user_text=unicode_text)
def test_the_runner_records_any_unicode_from_agent_and_user(
    fault_server, clean_user_registry, tmp_path_factory, agent_text, user_text
):
    reply = user_text or "…"
    register_user("unicode-user", lambda **_: ScriptedChatModel([reply], suspend=False), overwrite=True)
    out = tmp_path_factory.mktemp("run")
    fault_server.modes.clear()
    fault_server.script(tool_call(agent_text), tool_call(agent_text + LONE, escaped=False))
    config = EvalConfig(
        envs=["intention"], agents=[f"openai:fault-model@{fault_server.base_url}"], users=["unicode-user"],
        split="demo", limit=1, max_turns=2,
    )  # fmt: skip
    _, counts = run(config, out)
    assert set(counts) <= {"ok", "user_failure"}
    (record,) = ResultsStore(out / "episodes.jsonl").read()
    assert record.n_turns == 2
    assert all(is_clean(line) for line in utf8_lines(out / "episodes.jsonl"))
    for name in ("summary.json", "summary.md", "run.json"):
        (out / name).read_bytes().decode("utf-8")


def test_one_megabyte_of_nasty_text_through_a_step_and_the_store(tmp_path):
    huge = ("".join(NASTY) + "abc ") * (1_000_000 // 12)
    assert len(huge) >= 1_000_000
    env = EchoEnv()
    env.reset(seed=0)
    obs, *_ = env.step(f"[action] {huge}")
    assert is_clean(obs) and REPLACEMENT in obs and "\x00" in obs
    store = ResultsStore(tmp_path / "episodes.jsonl")
    asyncio.run(store.append(record_with(huge)))
    (back,) = store.read()
    assert back.error == clean_text(huge)
    env.close()


# ------------------------------------------------------------------------- the agent-text cap


@settings(max_examples=200, deadline=None)
@given(unicode_text, st.integers(0, 200))
def test_truncate_utf8_cuts_at_a_character_boundary_within_the_byte_count(text, max_bytes):
    cut = truncate_utf8(text, max_bytes)
    if len(clean_text(text).encode("utf-8")) <= max_bytes:
        assert cut is text
    else:
        data = cut.encode("utf-8")  # always encodes
        assert len(data) <= max_bytes and clean_text(text).startswith(cut)
        assert len(data) > max_bytes - 4  # only a character cut in two is dropped


def test_cap_action_cuts_strings_and_tool_calls_to_the_cap():
    cap = AGENT_TEXT_MAX_BYTES
    assert cap_action("[answer] 42") == ("[answer] 42", None)
    call = {"choice": "answer", "content": "42", "extra": 1}
    assert cap_action(call) == (call, None)
    text = "[action] " + "é" * cap  # two bytes a character: the cut falls inside one and drops it
    cut, size = cap_action(text)
    assert size == len(text.encode("utf-8")) and cut == text[: 9 + (cap - 9) // 2]
    cut, size = cap_action({"choice": "action", "content": "x" * (2 * cap), "notes": ["y"] * 10})
    assert cut == {"choice": "action", "content": "x" * (cap - len("action"))}
    assert size == len(json.dumps({"choice": "action", "content": "x" * (2 * cap), "notes": ["y"] * 10}))
    cut, _ = cap_action({"choice": "action", "content": ["z"] * cap})  # non-string content: its JSON, cut
    assert cut["content"].startswith('["z", "z"') and len(cut["content"]) == cap - len("action")
    assert cap_action([LONE * cap]) == ([REPLACEMENT * cap], None)  # refused by the grammar, cleaned only


@settings(max_examples=200, deadline=None)
@example({"content": "\x01" * 50})  # 50 characters, 300 bytes of JSON escapes
@example({"choice": "action", "content": "é" * 120})
@given(
    st.dictionaries(
        st.text(max_size=8),
        st.one_of(st.none(), st.booleans(), st.floats(), st.integers(), st.text(alphabet='\x01é"\\a', max_size=60)),
        max_size=6,
    )
)
def test_a_tool_call_read_without_measuring_fits_the_cap(call):
    """The shortcut that skips the JSON text of a small tool call never lets a call over the cap through."""
    cap = 256  # a small cap: the drawn calls fall on both sides of it
    capped, size = cap_action(call, cap)
    measured = len(json.dumps(call, ensure_ascii=False).encode("utf-8"))
    assert (size is None) == (measured <= cap)
    assert capped == call if size is None else size == measured


def test_an_oversized_agent_turn_is_cut_to_the_cap_and_recorded_cut(fault_server, tmp_path):
    """One 1 MB tool call: the env reads 64 KiB, the record keeps the cut text and the size before."""
    content = "word " * 200_000
    fault_server.script(tool_call(content), 'tool:{"choice": "answer", "content": "29"}')
    config = EvalConfig(
        envs=["function"], agents=[f"openai:fault-model@{fault_server.base_url}"], split="demo", limit=1,
        concurrency=1, max_turns=2,
    )  # fmt: skip
    run(config, tmp_path, preflight=False)
    (line,) = utf8_lines(tmp_path / "episodes.jsonl")
    assert len(line.encode("utf-8")) < 4 * AGENT_TEXT_MAX_BYTES  # was 2 MB: content and transcript
    (record,) = ResultsStore(tmp_path / "episodes.jsonl").read()
    first, second = record.steps
    size = len(json.dumps({"choice": "action", "content": content}).encode("utf-8"))
    assert (first.agent_text_truncated, second.agent_text_truncated) == (size, None)
    assert content.startswith(first.content) and len(first.content) == AGENT_TEXT_MAX_BYTES - len("action")
    assert second.content == "29" and record.episode_score == 1.0
    arguments = next(m["tool_calls"][0]["function"]["arguments"] for m in record.transcript if m.get("tool_calls"))
    assert len(arguments.encode("utf-8")) == AGENT_TEXT_MAX_BYTES
