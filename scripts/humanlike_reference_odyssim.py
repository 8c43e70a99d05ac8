"""OdysSim's own numbers for the behaviour dimensions and the UserLM measures on the shipped human
conversations: regenerates tests/data/humanlike_reference_odyssim.json, which
tests/test_humanlike_behaviour.py compares ours with.

Run it in a scratch virtual environment OUTSIDE this repository (the reference needs numpy, regex
and, to import ``agents.userllm.agent``, openai, omegaconf and transformers), from the repo root::

    python3.11 -m venv /tmp/odyssim-venv
    /tmp/odyssim-venv/bin/pip install numpy regex openai omegaconf transformers
    git -C <OdysSim git dir> archive HEAD agents | tar -x -C /tmp/odyssim   # a checkout of agents/
    /tmp/odyssim-venv/bin/python scripts/humanlike_reference_odyssim.py /tmp/odyssim \\
        --commit "$(git -C <OdysSim git dir> rev-parse HEAD)"

The reference is imported only from the given checkout, at run time; nothing of it is kept here.
The JSON holds conversation ids and numbers only, never the human text. The readers below
(standard library only) are the test's too: how a corpus becomes user turns is defined once.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_HUMANS = ROOT.parent / "shared" / "data" / "humans"
DEFAULT_OUT = ROOT / "tests" / "data" / "humanlike_reference_odyssim.json"
CHITCHAT_LIMIT = 200
"""Chitchat conversations read: the first this many with exactly two speakers, in file order."""

SOURCES = ("oasst1", "thoughttrace", "simulatorarena-doc", "simulatorarena-math", "chitchat")


class RawConversation(NamedTuple):
    """One conversation as the reference sees it: its user's turns, in order, and its goal text."""

    conv_id: str
    user_turns: tuple[str, ...]
    intent: str | None


def _jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def _oasst1(humans: Path) -> list[RawConversation]:
    """MirrorBench's OASST1: id ``conversation_id``, goal ``task_description``."""
    return [
        RawConversation(
            row["conversation_id"],
            tuple(turn["content"] for turn in row["turns"] if turn["role"] == "user"),
            row["task_description"],
        )
        for row in _jsonl(humans / "oasst1" / "oasst1_mirror.jsonl")
    ]


def _thoughttrace(humans: Path) -> list[RawConversation]:
    """ThoughtTrace: id ``id``, goal ``task_summary``, user messages of ``type`` user."""
    return [
        RawConversation(
            row["id"],
            tuple(message["content"] for message in row["messages"] if message["type"] == "user"),
            row["task_summary"],
        )
        for row in _jsonl(humans / "thoughttrace" / "ThoughtTrace_examples.jsonl")
    ]


def _simulatorarena(humans: Path, file_name: str, intent_field: str | None) -> list[RawConversation]:
    """SimulatorArena: id the list index (no field names a conversation), user turns
    ``user_queries`` (a query that is not text, such as an uploaded image's path list, is left out)."""
    rows = json.loads((humans / "simulatorarena" / file_name).read_text(encoding="utf-8"))
    return [
        RawConversation(
            str(index),
            tuple(query for query in row["user_queries"] if isinstance(query, str)),
            row[intent_field] if intent_field else None,
        )
        for index, row in enumerate(rows)
    ]


def _chitchat(humans: Path) -> list[RawConversation]:
    """Chitchat: id the dict key; the user is the first speaker; a turn is one speaker's run of
    consecutive messages, joined by newlines. Only two-speaker conversations, the first
    :data:`CHITCHAT_LIMIT` of them."""
    data = json.loads((humans / "chitchat" / "chitchat_subset.json").read_text(encoding="utf-8"))
    found: list[RawConversation] = []
    for key, conversation in data.items():
        messages = [message for group in conversation["messages"] for message in group]
        if len({message["sender"] for message in messages}) != 2:
            continue
        runs: list[tuple[str, list[str]]] = []
        for message in messages:
            if runs and runs[-1][0] == message["sender"]:
                runs[-1][1].append(message["text"])
            else:
                runs.append((message["sender"], [message["text"]]))
        user = messages[0]["sender"]
        found.append(RawConversation(key, tuple("\n".join(texts) for sender, texts in runs if sender == user), None))
        if len(found) == CHITCHAT_LIMIT:
            break
    return found


def read_sources(humans: Path) -> dict[str, list[RawConversation]]:
    """Every source of :data:`SOURCES` read from the human corpora folder ``humans``."""
    return {
        "oasst1": _oasst1(humans),
        "thoughttrace": _thoughttrace(humans),
        "simulatorarena-doc": _simulatorarena(humans, "document_creation_annotations_for_benchmarking.json", "intent"),
        "simulatorarena-math": _simulatorarena(
            humans, "math_tutoring_annotations_redacted_for_benchmarking.json", None
        ),
        "chitchat": _chitchat(humans),
    }


def split_function() -> Callable[[str, str], str]:
    """``mimesis_gym.corpora.split_of``, loaded from its file (the package needs more than the
    scratch environment has)."""
    path = ROOT / "mimesis_gym" / "corpora" / "conversation.py"
    spec = importlib.util.spec_from_file_location("_corpora_conversation", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return module.split_of


def ends_with_thanks(turn: str) -> bool:
    """The made-up termination predictor of the data-derived check: a turn that thanks ends."""
    return "thank" in turn.lower()


# Reference row keys of our feature names (usi_metric.build_row's names).
ROW_KEYS = {
    "n_turns": "turns",
    "user_words_per_turn": "user_wds_per_turn",
    "verbosity_cv": "verbosity_cv",
    "id_density": "id_density",
    "opening_words": "opening_words",
    "info_frontload": "info_frontload_pct",
}
DIMENSION_KEYS = {"D1_conv": "D1", "D2_info": "D2", "D3_clarif": "D3", "D4_react": "D4"}

# Hand-made inputs run through the reference too (no human text).
TERMINATION_CASES = [
    {"predicted": [False, False, True], "truth": [False, False, True]},
    {"predicted": [True, False, True, False], "truth": [False, False, True, True]},
    {"predicted": [True, True], "truth": [False, False]},
    {"predicted": [False, False], "truth": [False, True]},
    {"predicted": [False, False], "truth": [False, False]},
    {"predicted": [], "truth": []},
]
TOKEN_PROBES = [
    "Hello, World! It's 3.14 -- ok?",
    "snake_case_id_12345 and #A-99 $5 + 7% = ¥12",
    "日本語のテキストと漢字 mixed with English",
    "नमस्ते दुनिया café naïve ﬁne ²³ ½ Ⅻ",
    "emoji 👍🏽 ok… “quoted” — dash – en ‘single’",
    "zero\u200dwidth\u200cjoin   tabs\tand\nnewlines İstanbul",
    "Ⓐⓑ circled 🄰 squared ㉑ ①",
]
DIVERSITY_CASES = [
    ["book a flight to paris", "book a flight to rome"],
    ["hi", "hi", "hi"],
    ["", "  ", "what is 2+2?"],
    ["one", ""],
    [],
    ["日本語 ok", "漢字 ok", "ok ok ok!"],
]
INTENT_CASES = [
    ["Plan a trip to Paris in May", "paris trip in may, ideas?"],
    ["Plan a trip to Paris in May", "hi there"],
    ["Plan a trip to Paris in May", "the a of to"],
    ["", "anything"],
    ["write a poem about cats", "a poem about cats <|endconversation|>"],
]


class Reference:
    """The reference functions, imported from an OdysSim checkout."""

    def __init__(self, checkout: Path) -> None:
        if not (checkout / "agents" / "tau_usi" / "utils.py").is_file():
            raise SystemExit(f"{checkout} is not an OdysSim checkout (no agents/tau_usi/utils.py)")
        sys.path.insert(0, str(checkout))
        from agents.tau_usi import usi_metric, utils
        from agents.userllm import agent, helpers

        self.features = utils.extract_conversation_features
        self.build_row = usi_metric.build_row
        self.dice = usi_metric.compute_dimension_dice
        self.aggregates = agent.compute_userllm_aggregates
        self.overlap = agent._intent_1gram_overlap_compatible
        self.tokenize = helpers._tokenize

    def row(self, conversations: list[RawConversation]) -> tuple[dict, dict[str, float]]:
        """The reference row (its keys) and the same in our feature names."""
        entries = {c.conv_id: {"conversation": _user_messages(c), "reward": 0} for c in conversations}
        row = self.build_row(entries, "human")
        names = [name for name in self.features([{"role": "user", "content": "x"}], "human") if name != "n_turns"]
        ours = {"n_turns": row["turns"]}
        for name in names:
            ours[name] = row[ROW_KEYS.get(name, name.removesuffix("_rate") + "_pct")]
        return row, ours

    def first_turn_diversity(self, openings: list[str]) -> float:
        results = [
            {"related_metrics": ["first_turn_diversity"], "is_first_turn": True, "generated_output": text}
            for text in openings
        ]
        return self.aggregates(results)["first_turn_diversity"]

    def intent_decomposition(self, pairs: list[tuple[str, str]]) -> tuple[list[float], float]:
        values = [self.overlap(intent, turn) if intent else 0.0 for intent, turn in pairs]
        results = [
            {"related_metrics": ["intent_decomposition"], "has_intent": bool(intent.strip()), "intent_decomposition": v}
            for (intent, _), v in zip(pairs, values, strict=True)
        ]
        return values, self.aggregates(results)["intent_decomposition"]

    def termination_f1(self, predicted: list[bool], truth: list[bool]) -> float:
        results = [
            {"related_metrics": ["termination_f1"], "pred_endconversation": p, "true_endconversation": t}
            for p, t in zip(predicted, truth, strict=True)
        ]
        return self.aggregates(results)["termination_f1"]


def _behaviour(reference: Reference, sources: dict[str, list[RawConversation]], split_of) -> dict:
    per_source: dict[str, dict] = {}
    dev_rows: dict[str, dict[str, float]] = {}
    for source, conversations in sources.items():
        conversations = [c for c in conversations if c.user_turns]
        halves = {"dev": [], "test": []}
        for c in conversations:
            halves[split_of(source, c.conv_id)].append(c)
        rows = {half: reference.row(members) for half, members in halves.items()}
        dev_rows[source] = rows["dev"][1]
        per_source[source] = {
            "conversations": [
                {
                    "id": c.conv_id,
                    "split": split_of(source, c.conv_id),
                    "features": list(reference.features(_user_messages(c), "human").values()),
                }
                for c in conversations
            ],
            "rows": {half: ours for half, (_, ours) in rows.items()},
            "dice_dev_test": {DIMENSION_KEYS[k]: v for k, v in reference.dice(rows["dev"][0], rows["test"][0]).items()},
            "reference_rows": {half: row for half, (row, _) in rows.items()},
        }
    cross = []
    names = list(sources)
    for index, first in enumerate(names):
        for second in names[index + 1 :]:
            dice = reference.dice(
                per_source[first]["reference_rows"]["dev"], per_source[second]["reference_rows"]["dev"]
            )
            cross.append(
                {"reference": first, "simulated": second, "dice": {DIMENSION_KEYS[k]: v for k, v in dice.items()}}
            )
    for entry in per_source.values():
        del entry["reference_rows"]
    order = list(reference.features([{"role": "user", "content": "x"}], "human"))
    return {"feature_order": order, "sources": per_source, "dev_pairs": cross}


def _user_messages(conversation: RawConversation) -> list[dict[str, str]]:
    return [{"role": "user", "content": turn} for turn in conversation.user_turns]


def _userlm(reference: Reference, sources: dict[str, list[RawConversation]]) -> dict:
    per_source: dict[str, dict] = {}
    for source, conversations in sources.items():
        conversations = [c for c in conversations if c.user_turns]
        entry: dict = {"first_turn_diversity": reference.first_turn_diversity([c.user_turns[0] for c in conversations])}
        if any(c.intent for c in conversations):
            pairs = [(c.intent or "", turn) for c in conversations for turn in c.user_turns]
            values, mean = reference.intent_decomposition(pairs)
            entry["intent_overlaps"] = [
                {"id": c.conv_id, "values": values[start : start + len(c.user_turns)]}
                for c, start in zip(conversations, _starts(conversations), strict=True)
            ]
            entry["intent_decomposition"] = mean
        predicted = [ends_with_thanks(turn) for c in conversations for turn in c.user_turns]
        truth = [index == len(c.user_turns) - 1 for c in conversations for index in range(len(c.user_turns))]
        entry["termination_f1_thanks"] = reference.termination_f1(predicted, truth)
        per_source[source] = entry
    return {
        "sources": per_source,
        "termination_cases": [{**case, "f1": reference.termination_f1(**case)} for case in TERMINATION_CASES],
        "diversity_cases": [
            {"first_turns": case, "diversity": reference.first_turn_diversity(case)} for case in DIVERSITY_CASES
        ],
        "intent_cases": [
            {"intent": intent, "turn": turn, "overlap": reference.intent_decomposition([(intent, turn)])[0][0]}
            for intent, turn in INTENT_CASES
        ],
        "token_probes": [{"text": text, "tokens": reference.tokenize(text)} for text in TOKEN_PROBES],
    }


def _starts(conversations: list[RawConversation]) -> list[int]:
    starts, position = [], 0
    for c in conversations:
        starts.append(position)
        position += len(c.user_turns)
    return starts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("odyssim", type=Path, help="an OdysSim checkout (a folder holding agents/)")
    parser.add_argument("--commit", required=True, help="the OdysSim commit the checkout is of")
    parser.add_argument("--humans", type=Path, default=DEFAULT_HUMANS, help="the human corpora folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    reference = Reference(args.odyssim.resolve())
    sources = read_sources(args.humans)
    payload = {
        "how_made": {
            "commands": [
                "python3.11 -m venv <scratch>/venv",
                "<scratch>/venv/bin/pip install numpy regex pydantic omegaconf openai transformers",
                "git -C <OdysSim git dir> archive HEAD agents | tar -x -C <scratch>/odyssim",
                "<scratch>/venv/bin/python scripts/humanlike_reference_odyssim.py <scratch>/odyssim"
                " --commit $(git -C <OdysSim git dir> rev-parse HEAD)",
            ],
            "odyssim_commit": args.commit,
            "reference": "agents/tau_usi/utils.py extract_conversation_features (source='human', user turns"
            " only); agents/tau_usi/usi_metric.py build_row, compute_dimension_dice; agents/userllm/agent.py"
            " compute_userllm_aggregates, _intent_1gram_overlap_compatible; agents/userllm/helpers.py _tokenize",
            "python": sys.version.split()[0],
            "date": datetime.date.today().isoformat(),
            "conversations": {source: len(found) for source, found in sources.items()},
        },
        "behaviour": _behaviour(reference, sources, split_function()),
        "userlm": _userlm(reference, sources),
    }
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
