"""The Turing-test judge: its prompt, its seeded order and its counts, with judges served over loopback
HTTP (docs/humans.md, "Turing test (optional judge)")."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mimesis_gym.core.errors import ConfigurationError, EndpointUnavailableError
from mimesis_gym.evaluation.humanlike.turing import (
    CONTEXT_CHARS,
    TuringItem,
    TuringResult,
    human_at_a,
    make_turing_judge,
    turing_messages,
    turing_test,
    wilson_interval,
)
from mimesis_gym.users.serve import free_port
from tests.support.fault_server import FaultServer, completion

MARKER = "zebra"
CONTEXT = (("user", "hi, my printer jams"), ("assistant", "Which model is it?"))


def items(count: int, *, seed_word: str = "") -> list[TuringItem]:
    """``count`` items whose human turns carry the marker word and whose simulated turns do not."""
    return [
        TuringItem(
            key=f"conv-{n}:{seed_word}",
            goal="fix a printer",
            context=CONTEXT,
            human=f"its a {MARKER} 3000 i think ({n})",
            simulated=f"It is the Z-3000 model, thank you for asking ({n}).",
        )
        for n in range(count)
    ]


class MarkerJudge(FaultServer):
    """A judge that knows the humans: mode ``marker`` names the candidate that holds the marker word."""

    def handle(self, handler: Any, mode: str, body: dict[str, Any]) -> None:
        if mode != "marker":
            return super().handle(handler, mode, body)
        prompt = body["messages"][1]["content"]
        candidate_a = prompt.split("Candidate A:", 1)[1].split("Candidate B:", 1)[0]
        answer = "A" if MARKER in candidate_a else "B"
        handler._send_json(200, completion(json.dumps({"human": answer})))


@pytest.fixture
def judge_server():
    server = MarkerJudge()
    yield server
    server.close()


def judge(server: FaultServer, cases: list[TuringItem], **options: Any) -> TuringResult:
    async def run() -> TuringResult:
        model = make_turing_judge(f"openai:fault-model@{server.base_url}")
        try:
            return await turing_test(model, cases, **options)
        finally:
            await model.aclose()

    return asyncio.run(run())


def candidate_a(request: dict[str, Any]) -> str:
    return request["body"]["messages"][1]["content"].split("Candidate A:", 1)[1].split("Candidate B:", 1)[0]


def test_a_judge_that_always_says_a_picks_the_humans_the_seeded_order_put_at_a(judge_server) -> None:
    cases = items(12)
    judge_server.default_mode = 'ok:{"human": "A"}'
    result = judge(judge_server, cases, seed=7, concurrency=3)
    at_a = [case for case in cases if human_at_a(7, case.key)]
    assert 0 < len(at_a) < len(cases)  # the order is really drawn per item
    assert (result.judged, result.human_picked) == (12, len(at_a))
    assert result.pick_rate == len(at_a) / 12 and result.failures == {} and result.identical == 0
    # The prompts place the human where human_at_a says, every call at temperature 0 with its own seed.
    bodies = [request["body"] for request in judge_server.requests]
    assert all(body["temperature"] == 0 for body in bodies)
    assert len({body["seed"] for body in bodies}) == 12
    placed = sum(MARKER in candidate_a(request) for request in judge_server.requests)
    assert placed == len(at_a)


def test_the_order_depends_on_the_seed_and_key_alone() -> None:
    keys = [f"k{n}" for n in range(40)]
    assert [human_at_a(3, key) for key in keys] == [human_at_a(3, key) for key in keys]
    assert [human_at_a(3, key) for key in keys] != [human_at_a(4, key) for key in keys]
    first, second = turing_messages(items(1)[0], human_first=True), turing_messages(items(1)[0], human_first=False)
    assert MARKER in first[1]["content"].split("Candidate B:")[0]
    assert MARKER in second[1]["content"].split("Candidate B:")[1]


def test_a_judge_that_recognises_the_humans_scores_one_with_the_wilson_interval(judge_server) -> None:
    cases = items(10)
    same = [
        TuringItem("same-1", "g", CONTEXT, "ok  thanks\n", "ok thanks"),
        TuringItem("same-2", "g", (), "hello there", " hello\tthere "),
    ]
    judge_server.default_mode = "marker"
    result = judge(judge_server, cases + same, seed=1)
    assert (result.items, result.identical, result.judged, result.human_picked) == (12, 2, 10, 10)
    assert len(judge_server.requests) == 10  # identical candidates are not sent
    assert result.pick_rate == 1.0
    # By hand, with p = 1: the Wilson centre ± half-width collapses to [n / (n + z²), 1].
    assert result.ci_low == pytest.approx(10 / (10 + 1.959964**2), abs=1e-6)
    assert result.ci_high == pytest.approx(1.0)
    assert json.loads(result.model_dump_json())["pick_rate"] == 1.0


def test_the_wilson_interval_matches_a_hand_computation() -> None:
    z = 1.959964
    n, p = 10, 0.7
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    low, high = wilson_interval(7, 10)
    assert (low, high) == (pytest.approx(centre - half, abs=1e-6), pytest.approx(centre + half, abs=1e-6))
    assert (round(low, 4), round(high, 4)) == (0.3968, 0.8922)
    assert wilson_interval(0, 0) is None


@pytest.mark.parametrize(
    ("answer", "kind"), [("I honestly cannot tell.", "bad_json"), ('{"human": "C"}', "invalid_value")]
)
def test_garbage_answers_are_failures_by_kind_never_picks(judge_server, answer, kind) -> None:
    judge_server.default_mode = f"ok:{answer}"
    result = judge(judge_server, items(4), concurrency=2)
    assert result.failures == {kind: 4}
    assert (result.judged, result.human_picked, result.pick_rate) == (0, 0, None)
    assert (result.ci_low, result.ci_high) == (None, None)


def test_a_failed_call_is_counted_by_its_kind(judge_server) -> None:
    judge_server.script('ok:{"human": "A"}', "status:400:bad request")
    result = judge(judge_server, items(2), concurrency=1)
    assert (result.judged, result.failures) == (1, {"client_error": 1})


def test_a_dead_endpoint_raises_the_judge_endpoint_error() -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"

    async def run() -> None:
        model = make_turing_judge(f"openai:fault-model@{base_url}")
        try:
            await turing_test(model, items(3))
        finally:
            await model.aclose()

    with pytest.raises(EndpointUnavailableError, match="cannot connect") as raised:
        asyncio.run(run())
    assert raised.value.party == "judge" and raised.value.base_url == base_url


def test_misconfiguration_raises_before_any_call(judge_server) -> None:
    with pytest.raises(ConfigurationError, match="scripted"):
        make_turing_judge("scripted")
    with pytest.raises(ConfigurationError, match=r"'k': context roles must be 'user' or 'assistant', got \['system'\]"):
        TuringItem("k", "g", (("system", "be nice"),), "h", "s")
    twice = items(2) + items(1)
    with pytest.raises(ConfigurationError, match=r"unique keys.*conv-0"):
        judge(judge_server, twice)
    with pytest.raises(ConfigurationError, match="concurrency must be at least 1, got 0"):
        judge(judge_server, items(1), concurrency=0)
    assert judge_server.requests == []


def test_the_prompt_shows_the_goal_and_the_last_turns_cut() -> None:
    context = tuple(("user" if n % 2 == 0 else "assistant", f"turn {n} " + "x" * 900) for n in range(9))
    prompt = turing_messages(TuringItem("k", "book a trip", context, "h", "s"), human_first=True)[1]["content"]
    assert "The USER's goal: book a trip" in prompt and "(3 earlier turn(s) left out)" in prompt
    assert "turn 2 " not in prompt and "OTHER: turn 3 " in prompt and "USER: turn 8 " in prompt
    longest = max(len(line) for line in prompt.splitlines() if line.startswith(("USER:", "OTHER:")))
    assert longest == len("OTHER: ") + CONTEXT_CHARS
    opening = turing_messages(TuringItem("k", "", (), "h", "s"), human_first=False)[1]["content"]
    assert "(not stated)" in opening and "the USER's first message" in opening
