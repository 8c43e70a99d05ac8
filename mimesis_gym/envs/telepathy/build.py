"""Build TelepathyGym's original task pack from its compact source table (docs/envs/telepathy.md, "Task data").

``python -m mimesis_gym.envs.telepathy.build`` reads ``data/entities.tsv``, ``data/attributes.json`` and
``data/nouns.json`` and rewrites ``data/{train,test,demo}.jsonl`` and ``data/manifest.json``;
``--out DIR`` writes them elsewhere. The output depends only on the three source files, so a rebuild
reproduces the committed files byte for byte (a test checks it). UserRL data is never read here.

``entities.tsv`` has a header line and one line per entity with eight tab-separated columns: id, title,
category, aliases (``|``-separated, the title is always added first), hypernyms (``|``-separated),
colours (``|``-separated, may be empty), the property values as one ``y``/``n``/``?`` string in
``attributes.json`` order, and the one-line description that follows ``"<title> - "`` in
``target_entity``. Ids ``telepathy-0001`` … ``telepathy-0160`` form the train split, the following ids
the test split, and ``telepathy-demo-NN`` the demo split.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from mimesis_gym.envs.telepathy.tasks import COLOURS

__all__ = [
    "COLOURS",
    "DATA_DIR",
    "N_TRAIN",
    "PACK_NAME",
    "SPLITS",
    "build",
    "goal_text",
    "load_entities",
    "teaser_text",
]

DATA_DIR = Path(__file__).parent / "data"
PACK_NAME = "telepathy/original"
SPLITS = ("train", "test", "demo")
N_TRAIN = 160
SOURCES = ("entities.tsv", "attributes.json", "nouns.json")
COLUMNS = ("id", "title", "category", "aliases", "hypernyms", "colours", "props", "description")
_VALUES = {"y": True, "n": False, "?": None}
_PACK_ID = re.compile(r"telepathy-(\d{4})")
_DEMO_ID = re.compile(r"telepathy-demo-\d{2}")


def teaser_text(noun: str) -> str:
    """The opening teaser of every entity of a category (the record's ``description``)."""
    article = "an" if noun[:1].lower() in "aeiou" else "a"
    return f"I am thinking of {article} {noun}. Ask me yes/no questions to find out which one!"


def goal_text(noun: str) -> str:
    """The record's ``goal`` for a category noun."""
    return f"Guess the {noun} I am thinking of."


def _split_list(cell: str) -> list[str]:
    return [item.strip() for item in cell.split("|") if item.strip()]


def _split_of(entity_id: str) -> str:
    if _DEMO_ID.fullmatch(entity_id):
        return "demo"
    match = _PACK_ID.fullmatch(entity_id)
    if match is None or int(match.group(1)) == 0:
        raise ValueError(f"entities.tsv: malformed id {entity_id!r}")
    return "train" if int(match.group(1)) <= N_TRAIN else "test"


def _read_properties(source_dir: Path) -> list[str]:
    raw: Any = json.loads((source_dir / "attributes.json").read_text(encoding="utf-8"))
    return [entry["name"] for entry in raw["properties"]]


def load_entities(source_dir: Path = DATA_DIR) -> list[dict[str, Any]]:
    """The records of ``entities.tsv`` in file order, each with its ``split`` (raises ``ValueError`` on a
    malformed line)."""
    properties = _read_properties(source_dir)
    nouns = set(json.loads((source_dir / "nouns.json").read_text(encoding="utf-8")))
    lines = (source_dir / "entities.tsv").read_text(encoding="utf-8").splitlines()
    if not lines or tuple(lines[0].split("\t")) != COLUMNS:
        raise ValueError(f"entities.tsv: the header must be the tab-separated columns {COLUMNS}")
    records = []
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(COLUMNS):
            raise ValueError(f"entities.tsv line {number}: {len(cells)} columns, expected {len(COLUMNS)}")
        entity_id, title, category, aliases, hypernyms, colours, props, description = (c.strip() for c in cells)
        if len(props) != len(properties) or set(props) - set(_VALUES):
            raise ValueError(f"entities.tsv line {number}: props must be {len(properties)} characters of y/n/?")
        noun = category.replace("_", " ")
        if noun not in nouns:
            raise ValueError(f"entities.tsv line {number}: category noun {noun!r} is not in nouns.json")
        colour_list = _split_list(colours)
        if unknown := [colour for colour in colour_list if colour not in COLOURS]:
            raise ValueError(f"entities.tsv line {number}: unknown colours {unknown}")
        names = [title]
        for alias in _split_list(aliases):
            if alias not in names:
                names.append(alias)
        records.append(
            {
                "id": entity_id,
                "split": _split_of(entity_id),
                "title": title,
                "description": teaser_text(noun),
                "goal": goal_text(noun),
                "target_entity": f"{title} - {description}",
                "category": category,
                "aliases": names,
                "hypernyms": _split_list(hypernyms),
                "colors": colour_list,
                "attributes": {name: _VALUES[value] for name, value in zip(properties, props, strict=True)},
            }
        )
    return records


def _digest(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


def build(out_dir: Path, source_dir: Path = DATA_DIR) -> dict[str, Any]:
    """Write ``{train,test,demo}.jsonl`` and ``manifest.json`` into ``out_dir``; return the manifest."""
    records = load_entities(source_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    digests = {name: _digest((source_dir / name).read_bytes()) for name in SOURCES}
    for split in SPLITS:
        rows = [record for record in records if record["split"] == split]
        payload = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in rows).encode("utf-8")
        (out_dir / f"{split}.jsonl").write_bytes(payload)
        counts[split] = len(rows)
        digests[f"{split}.jsonl"] = _digest(payload)
    manifest = {"pack": PACK_NAME, "counts": counts, "sha256": digests}
    (out_dir / "manifest.json").write_bytes((json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    return manifest


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Build TelepathyGym's original pack from data/entities.tsv.")
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output folder (default: the package data)")
    args = parser.parse_args(argv)
    manifest = build(args.out)
    print(json.dumps(manifest, indent=2))


if __name__ == "__main__":
    main()
