"""`mimesis-gym sft-data`: human conversations as user-side SFT lines (roles flipped, the end marker,
thoughts by style, the replay's context), the shipped corpora, a real load by algorithm="sft", CLI errors."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mimesis_gym import cli
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.learners.sft.data import SFTExample
from mimesis_gym.algorithms.learners.sft.user_data import (
    SFTDataError,
    meta_path_of,
    user_side_example,
    user_side_examples,
    write_user_sft_data,
)
from mimesis_gym.algorithms.testing import ENV_ID, tiny_random_model, tiny_tokenizer
from mimesis_gym.algorithms.trainer import Trainer
from mimesis_gym.corpora import HumanConversation, HumanTurn, load_corpus, split_of
from mimesis_gym.envs.replay.roles import END_MARKER, LLMReplayUser
from tests.support.torch_fixtures import one_thread  # noqa: F401

HUMANS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "humans"

ASKED = HumanConversation(
    "oasst1",
    "c1",
    "Find a soup recipe.",
    "description",
    (
        HumanTurn("user", "any soup ideas?", reason="I am hungry."),
        HumanTurn("assistant", "Try lentil soup."),
        HumanTurn("user", "how long does it take", reason=None),
        HumanTurn("assistant", "About 40 minutes."),
    ),
)
"""The human opens, a turn without a reason, and ends after a reply (the end marker)."""

OWN_LAST = HumanConversation(
    "chitchat",
    "c2",
    "hey, how was your weekend?",
    "first_message",
    (
        HumanTurn("user", "hey, how was your weekend?"),
        HumanTurn("assistant", "Great, I went hiking."),
        HumanTurn("user", "nice, where?", reason="curious"),
    ),
)
"""The goal is the first message (given, not trained) and the human's own turn is the last (no marker)."""

OTHER_FIRST = HumanConversation(
    "simulatorarena-math",
    "c3",
    "What is 7 * 8?",
    "first_message",
    (HumanTurn("assistant", "Hi! What can I help with?"), HumanTurn("user", "What is 7 * 8?")),
)
"""The tutor opens: the first user turn is the replay's to simulate, so it is trained."""


def roles_and_texts(line: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [(m["role"], m["content"], m.get("train", True)) for m in line["messages"][1:]]


def test_roles_flip_and_the_end_marker_follows_the_last_reply() -> None:
    line = user_side_example(ASKED, style="midtrain")
    assert line is not None and line["side"] == "agent"
    assert roles_and_texts(line) == [
        ("user", "Hello.", True),  # the replay's opener before a conversation the human opens
        ("assistant", "any soup ideas?", True),
        ("user", "Try lentil soup.", True),
        ("assistant", "how long does it take", True),
        ("user", "About 40 minutes.", True),
        ("assistant", END_MARKER, True),
    ]
    assert (
        line["meta"] | {"trained_user_turns": 2, "human_ended": True, "thoughts": 0, "split": ASKED.split}
        == (line["meta"])
    )
    SFTExample.model_validate(line)


def test_no_end_marker_where_the_human_ended_with_their_own_turn_and_a_given_goal_is_not_trained() -> None:
    line = user_side_example(OWN_LAST, style="midtrain")
    assert line is not None
    assert roles_and_texts(line) == [
        ("user", "Hello.", True),
        ("assistant", "hey, how was your weekend?", False),
        ("user", "Great, I went hiking.", True),
        ("assistant", "nice, where?", True),
    ]
    assert (line["meta"]["trained_user_turns"], line["meta"]["human_ended"]) == (1, False)
    other_first = user_side_example(OTHER_FIRST)
    assert other_first is not None
    assert roles_and_texts(other_first) == [
        ("user", "Hi! What can I help with?", True),
        ("assistant", "What is 7 * 8?", True),
    ]


def test_thoughts_only_in_the_thoughttrace_style_and_only_where_a_reason_was_given() -> None:
    midtrain = user_side_example(ASKED, style="midtrain")
    traced = user_side_example(ASKED, style="thoughttrace")
    assert midtrain is not None and traced is not None
    assert not any("<think>" in m["content"] for m in midtrain["messages"])
    assert [m["content"] for m in traced["messages"] if m["role"] == "assistant"] == [
        "<think>I am hungry.</think>any soup ideas?",
        "how long does it take",
        END_MARKER,
    ]
    assert traced["meta"]["thoughts"] == 1 and traced["meta"]["style"] == "thoughttrace"
    with pytest.raises(SFTDataError, match="style 'cot' is not one of midtrain, thoughttrace"):
        user_side_example(ASKED, style="cot")  # type: ignore[arg-type]


@pytest.mark.parametrize("conversation", [ASKED, OWN_LAST, OTHER_FIRST], ids=["asked", "own-last", "other-first"])
def test_every_trained_turn_sees_what_the_replay_shows_its_user(conversation: HumanConversation) -> None:
    """The messages before each trained turn equal the replay user's own chat for that turn (the same system
    prompt and history; the opener before the human's first turn in both)."""
    replay = LLMReplayUser(None)  # type: ignore[arg-type]  # build_messages only: no model is called
    line = user_side_example(conversation)
    assert line is not None
    messages = [{k: v for k, v in m.items() if k != "train"} for m in line["messages"]]
    materials = {"goal": conversation.goal, "goal_kind": conversation.goal_kind, "source": conversation.source}
    first = 1 + int(conversation.turns[0].role == "user")  # after the system prompt and the replay's opener
    positions = [at for at, turn in enumerate(conversation.turns) if turn.role == "user"]
    if conversation.turns[-1].role == "assistant":
        positions.append(len(conversation.turns))  # the end probe
    asked = [first + at for at in positions if line["messages"][first + at].get("train", True)]
    assert asked == [i for i, m in enumerate(line["messages"]) if m["role"] == "assistant" and m.get("train", True)]
    for at in positions:
        history = [("self" if t.role == "user" else "other", t.text) for t in conversation.turns[:at]]
        expected = replay.build_messages(**materials, history=history)
        assert expected == messages[: first + at]


def test_a_conversation_with_nothing_to_train_is_counted_not_written() -> None:
    alone = HumanConversation("jsonl", "c4", "hi", "first_message", (HumanTurn("user", "hi"),))
    data = user_side_examples([ASKED, alone, OWN_LAST])
    assert [line["meta"]["task_id"] for line in data.examples] == ["oasst1/c1", "chitchat/c2"]
    assert data.empty == ["jsonl/c4"]


# ---------------------------------------------------------------------------------------- the command


def dev_ids(source: str, count: int) -> list[str]:
    """The first ``count`` ids ``c0, c1, …`` that fall in the dev half of ``source``."""
    ids = (f"c{n}" for n in range(1000))
    return [conv_id for conv_id in ids if split_of(source, conv_id) == "dev"][:count]


def own_corpus(tmp_path: Path) -> Path:
    """A generic JSONL corpus (source ``mine``): three dev conversations, one test one, one bad line."""
    path = tmp_path / "mine.jsonl"
    lines = []
    for n, conv_id in enumerate(dev_ids("mine", 3)):
        messages = [
            {"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": f"answer {n}"},
            {"role": "user", "content": f"follow-up {n}"},
            {"role": "assistant", "content": f"more {n}"},
        ]
        lines.append({"id": conv_id, "goal": f"learn about topic {n}", "messages": messages})
    test_id = next(f"t{n}" for n in range(1000) if split_of("mine", f"t{n}") == "test")
    lines.append({"id": test_id, "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json\n", encoding="utf-8")
    return path


def test_write_counts_every_conversation_and_never_writes_the_test_half(tmp_path: Path) -> None:
    out = tmp_path / "data" / "user.jsonl"
    logged: list[str] = []
    meta = write_user_sft_data(
        [f"jsonl:{own_corpus(tmp_path)}"], out, command=["mimesis-gym", "sft-data"], log=logged.append
    )
    assert len(logged) == 1 and "1 malformed line (first: line 5 (not JSON))" in logged[0]
    lines = [json.loads(text) for text in out.read_text(encoding="utf-8").splitlines()]
    assert [line["meta"]["split"] for line in lines] == ["dev"] * 3
    assert json.loads(meta_path_of(out).read_text(encoding="utf-8")) == meta
    counts = meta["counts"][f"jsonl:{tmp_path / 'mine.jsonl'}"]
    assert {k: counts[k] for k in ("conversations", "in_split", "kept", "written", "empty_user_side")} == {
        "conversations": 4, "in_split": 3, "kept": 3, "written": 3, "empty_user_side": 0,
    }  # fmt: skip
    assert (counts["trained_user_turns"], counts["end_markers"]) == (6, 3)
    assert meta["dropped"] == {f"jsonl:{tmp_path / 'mine.jsonl'}": {"malformed line": 1}}
    assert (meta["split"], meta["style"], meta["side"], meta["command"]) == (
        "dev",
        "midtrain",
        "agent",
        "mimesis-gym sft-data",
    )


def sft_trainer(tmp_path: Path, data: Path, *extra: str) -> Trainer:
    config = TrainerConfig.preset("cpu-tiny").with_overrides(
        [f"run.output_dir={tmp_path / 'run'}", "run.progress=false", f"sft.data={data}", *extra]
    )
    return Trainer([ENV_ID], tiny_random_model(seed=0), algorithm="sft", config=config)


def test_algorithm_sft_loads_what_the_command_wrote_and_trains_the_human_turns(tmp_path: Path) -> None:
    out = tmp_path / "user.jsonl"
    assert cli.main(["sft-data", "--sources", f"jsonl:{own_corpus(tmp_path)}", "--out", str(out)]) == 0
    trainer = sft_trainer(tmp_path, out)
    (learner,) = trainer.learners
    tokenizer = tiny_tokenizer()
    assert len(learner.encoded) == 3  # type: ignore[attr-defined]
    first = learner.encoded[0]  # type: ignore[attr-defined]
    trained = [tokenizer.decode(first.input_ids[s:e]) for s, e in first.spans]
    assert [text.removesuffix("<|im_end|>") for text in trained] == ["question 0", "follow-up 0", END_MARKER]
    assert trainer.step()["sft/tokens"] > 0
    with pytest.raises(ValueError, match=r"collected for side 'agent' but sft\.side='user'"):
        sft_trainer(tmp_path, out, "sft.side=user")


def cli_one_line(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert cli.main(["sft-data", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_cli_user_errors_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = f"jsonl:{own_corpus(tmp_path)}"
    out = str(tmp_path / "o.jsonl")
    cli_one_line(capsys, ["--sources", "nope", "--out", out], "unknown corpus 'nope'")
    cli_one_line(
        capsys, ["--humans", str(tmp_path / "none"), "--sources", "oasst1", "--out", out], "is not a directory"
    )
    cli_one_line(capsys, ["--sources", "oasst1", "--out", out], "--humans DIR is needed to read oasst1")
    cli_one_line(capsys, ["--sources", f"jsonl:{tmp_path / 'absent.jsonl'}", "--out", out], "no file at")
    (tmp_path / "bad.jsonl").write_text("not json\n", encoding="utf-8")
    cli_one_line(capsys, ["--sources", f"jsonl:{tmp_path / 'bad.jsonl'}", "--out", out], "nothing to write")
    assert not Path(out).exists() and not meta_path_of(out).exists()
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["sft-data", "--sources", corpus, "--out", out, "--style", "cot"])
    assert exit_info.value.code == 2 and "invalid choice: 'cot'" in capsys.readouterr().err


def test_an_unreadable_corpus_is_named_not_blamed_on_the_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = own_corpus(tmp_path)

    def unreadable(self: Path) -> bytes:
        raise OSError(errno.EIO, "Input/output error", str(self))

    monkeypatch.setattr(Path, "read_bytes", unreadable)
    message = f"corpus jsonl:{corpus} cannot be read: Input/output error ({corpus})"
    cli_one_line(capsys, ["--sources", f"jsonl:{corpus}", "--out", str(tmp_path / "o.jsonl")], message)


def test_an_existing_out_needs_force_and_a_full_disk_leaves_it_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = f"jsonl:{own_corpus(tmp_path)}"
    out = tmp_path / "o.jsonl"
    assert cli.main(["sft-data", "--sources", corpus, "--out", str(out)]) == 0
    before = out.read_text(encoding="utf-8")
    cli_one_line(capsys, ["--sources", corpus, "--out", str(out), "--limit", "1"], "exists; pass --force")

    def full(*_: Any, **__: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    cli_one_line(capsys, ["--sources", corpus, "--out", str(out), "--limit", "1", "--force"], "No space left on device")
    monkeypatch.undo()
    assert out.read_text(encoding="utf-8") == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "mine.jsonl", "o.jsonl", "o.jsonl.meta.json",
    ]  # fmt: skip
    assert cli.main(["sft-data", "--sources", corpus, "--out", str(out), "--limit", "1", "--force"]) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1


def test_the_test_half_only_when_asked_with_a_warning(tmp_path: Path) -> None:
    corpus = f"jsonl:{own_corpus(tmp_path)}"
    out = tmp_path / "t.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mimesis_gym.cli",
            "sft-data",
            "--sources",
            corpus,
            "--split",
            "test",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(
        "warning: --split test writes the half the scorecard"
    )
    assert [json.loads(line)["meta"]["split"] for line in out.read_text(encoding="utf-8").splitlines()] == ["test"]
    assert "1 conversation(s) of the test half" in done.stdout


# ------------------------------------------------------------------------------------ the shipped corpora

SOURCES = ("oasst1", "chitchat", "thoughttrace", "simulatorarena-doc", "simulatorarena-math")


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    if not HUMANS.is_dir():
        pytest.skip(f"../shared/data/humans absent: the human corpora are expected at {HUMANS}")
    out = tmp_path_factory.mktemp("shipped") / "stage1.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "mimesis_gym.cli", "sft-data", "--humans", str(HUMANS), "--sources", ",".join(SOURCES),
         "--style", "thoughttrace", "--out", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and len(done.stdout.splitlines()) == len(SOURCES) + 1
    return out, json.loads(meta_path_of(out).read_text(encoding="utf-8"))


def test_shipped_corpora_give_one_line_per_dev_conversation(shipped: tuple[Path, dict[str, Any]]) -> None:
    out, meta = shipped
    lines = [json.loads(text) for text in out.read_text(encoding="utf-8").splitlines()]
    assert meta["written"] == len(lines) and meta["sources"] == list(SOURCES)
    for source in SOURCES:
        dev = [c for c in load_corpus(source, HUMANS).conversations if c.split == "dev"]
        mine = [line for line in lines if line["meta"]["source"] == source]
        assert [line["meta"]["conv_id"] for line in mine] == [c.conv_id for c in dev]
        assert all(split_of(source, line["meta"]["conv_id"]) == "dev" for line in mine)
        counts = meta["counts"][source]
        assert counts["in_split"] == counts["written"] + counts["empty_user_side"] == len(dev)
        assert counts["end_markers"] == sum(1 for c in dev if c.turns[-1].role == "assistant")
    assert meta["counts"]["thoughttrace"]["thoughts"] > 0 and meta["counts"]["oasst1"]["thoughts"] == 0
    assert meta["dropped"]["chitchat"] == {"no reply": 645} and meta["skipped"]["chitchat"] == {"empty text": 10}
