"""The seeded generator and validator of ABCDBehavior's original pack (docs/envs/abcd.md, "Data").

``python -m mimesis_gym.envs.abcd.data.build_original`` rewrites ``data/original/`` (policy files,
``scenarios.json``, ``rows_{train,test,test_v1,demo}.jsonl``) and ``data/rules_abcd.json`` from the
project's store policy (``store_policy.py``) and seed 20260602; the output is byte-identical on rerun
(a slow test regenerates and compares). ``--check`` validates the committed pack instead and exits
non-zero on a problem. Nothing here reads ABCD data: every name, address and sentence is invented.

Scenarios: 240 train + 120 test (``dev`` empty), ``convo_id`` from 900000, subflows round-robin over
a seeded shuffle of the 18; for every subflow with a rule, eligibility alternates between scenarios
(rejection sampling), so 40–60 % of them are eligible. Rows (:data:`ROW_SPLITS`): per rows file,
control rows take the scenarios of its scenario split in order, behavior rows share one round-robin
cursor over the scenarios where they apply (B4: rule violated; B8 on the purchase date: bought at
least 14 days before today); kwargs come from ``random.Random(f"{seed}:{stem}:{condition}:{n}")``;
rows are shuffled with ``random.Random(f"{seed}:{stem}:order")`` and numbered
``abcd-orig-{stem}-NNNN``. The held-out ``test`` split (stem ``test2``: 49 control + 15 per behavior,
the paper's sizes) and the earlier ``test_v1`` (stem ``test``: 52 + 8, kept byte for byte so runs
recorded on its ids stay readable, :data:`TEST_V1_SHA256`) draw on the same 120 test scenarios.
``rows_demo.jsonl`` copies, per condition, the first ``test_v1`` row on which the scripted customer
reaches the maximum reward (the contract suite's demo).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import random
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mimesis_gym.behaviors.text import norm
from mimesis_gym.envs.abcd.behaviors import (
    BEHAVIOR_IDS,
    CONDITIONS,
    applicable,
    behavior,
    derive_kwargs,
    render_directive,
    violates_rule,
)
from mimesis_gym.envs.abcd.data.store_policy import (
    ABCD_RULES,
    KB,
    ORIGINAL_RULES,
    ORIGINAL_SUBFLOWS,
    build_guidelines,
    build_ontology,
)
from mimesis_gym.envs.abcd.judge_rules import ASK_PATTERNS
from mimesis_gym.envs.abcd.policy import LEVELS, SHIPPING_STATUSES, StoreCatalog, build_catalog, parse_rules
from mimesis_gym.envs.abcd.scenarios import ACTION_FIELDS, askable_fields, field_values

__all__ = ["DEFAULT_SEED", "ROW_SPLITS", "TEST_V1_SHA256", "RowSplit", "build_pack", "check_pack", "main", "write_pack"]

DEFAULT_SEED = 20260602
DATA_DIR = Path(__file__).parent
ORIGINAL_DIR = DATA_DIR / "original"
SCENARIO_COUNTS = {"train": 240, "test": 120}


@dataclass(frozen=True)
class RowSplit:
    """How one rows file (``rows_{name}.jsonl``, the pack's split ``name``) is built.

    ``scenarios`` names the scenario split the rows draw on and is the rows' ``split`` field;
    ``stem`` keys the RNG streams and the row ids (``abcd-orig-{stem}-NNNN``), so two files with
    different stems never share an id.
    """

    name: str
    scenarios: str
    stem: str
    n_control: int
    n_per_behavior: int

    def row_id(self, number: int) -> str:
        return f"abcd-orig-{self.stem}-{number:04d}"


ROW_SPLITS = (
    RowSplit("train", "train", "train", 260, 40),
    RowSplit("test_v1", "test", "test", 52, 8),
    RowSplit("test", "test", "test2", 49, 15),
)
"""The rows files besides the demo: train (780), the first held-out split (156, now ``test_v1``) and the
held-out ``test`` split with the paper's sizes (49 control + 15 per behavior = 244)."""
DEMO_SOURCE = "test_v1"
"""The rows split the demo rows are copied from (unchanged since the demo was first built)."""
TEST_V1_SHA256 = "c78969d2a8615bd8db24e6fe2e19c499eddfe6e3842830e4d4e8f492d7dba176"
"""SHA-256 of ``rows_test_v1.jsonl``: the 156 rows shipped as ``rows_test.jsonl`` before the paper-sized split."""
FIRST_CONVO_ID = 900000
NO_FIELD_ACTIONS = frozenset({"ask-the-oracle", "promo-code", "notify-team", "try-again", "log-out-in", "instructions"})

FIRST_NAMES = (
    "alina", "bram", "celia", "dario", "elodie", "farid", "greta", "hugo", "ines", "jonah", "kira", "lucas",
    "mirela", "nico", "odile", "pavel", "quinn", "rosa", "sami", "tessa", "umar", "vera", "wendell", "yara",
)  # fmt: skip
LAST_NAMES = (
    "ashdown", "bellamy", "corwin", "dunmore", "eastwood", "fairbank", "galloway", "hartwell", "iverson", "jessup",
    "kettering", "lindqvist", "marlowe", "northcott", "oakes", "pemberton", "quayle", "rowntree", "stanhope",
    "thackeray", "underhill", "vance", "whitlock", "yardley",
)  # fmt: skip
STREETS = (
    "larkspur way", "cinder lane", "maple row", "harbor view rd", "quarry st", "tamarind ave", "willow bend",
    "old mill rd", "juniper ct", "foxglove dr", "beacon hill rd", "saltmarsh ln",
)  # fmt: skip
CITIES = (
    ("portland", "or", "972"), ("austin", "tx", "787"), ("madison", "wi", "537"), ("tucson", "az", "857"),
    ("raleigh", "nc", "276"), ("boise", "id", "837"), ("omaha", "ne", "681"), ("savannah", "ga", "314"),
    ("burlington", "vt", "054"), ("spokane", "wa", "992"),
)  # fmt: skip
BRANDS = ("northpeak", "ellery_row", "mossgrove", "tidewell")
PRODUCT_TYPES = ("boots", "jacket", "jeans", "shirt")
PAYMENT_METHODS = ("credit card", "debit card", "paypal")
_ALNUM = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"


# ---------------------------------------------------------------- policy and catalog


def policy_files() -> dict[str, Any]:
    """The original pack's policy files (name → JSON value)."""
    return {
        "guidelines.json": build_guidelines(),
        "kb.json": {subflow: list(sequence) for subflow, sequence in KB.items()},
        "ontology.json": build_ontology(),
        "subflows.json": ORIGINAL_SUBFLOWS,
        "rules.json": ORIGINAL_RULES,
    }


def original_catalog_from(files: Mapping[str, Any]) -> StoreCatalog:
    return build_catalog(
        files["guidelines.json"],
        files["kb.json"],
        files["ontology.json"],
        files["subflows.json"],
        parse_rules(files["rules.json"], "rules.json"),
        name="original",
        limits_from_rules=True,
        system_info=True,
    )


# ---------------------------------------------------------------- scenarios


def _draw_scenario(rng: random.Random, subflow: str, convo_id: int) -> dict[str, Any]:
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    username = f"{first[0]}{last}{rng.randint(100, 999)}"
    street = f"{rng.randint(100, 9899)} {rng.choice(STREETS)}"
    city, state, zip_prefix = rng.choice(CITIES)
    zip_code = f"{zip_prefix}{rng.randint(0, 99):02d}"
    pairs = rng.sample([(brand, kind) for brand in BRANDS for kind in PRODUCT_TYPES], rng.randint(1, 3))
    items = [
        {
            "brand": brand,
            "product_type": kind,
            "amount": rng.randint(30, 220),
            "image_url": f"images/{brand}-{kind}.jpeg",
        }
        for brand, kind in pairs
    ]
    today = dt.date(2026, 1, 1) + dt.timedelta(days=rng.randint(0, 364))
    purchase = today - dt.timedelta(days=rng.randint(3, 400))
    info = ORIGINAL_SUBFLOWS[subflow]
    return {
        "convo_id": convo_id,
        "scenario": {
            "personal": {
                "customer_name": f"{first} {last}",
                "email": f"{username}@example.com",
                "member_level": rng.choice(LEVELS),
                "phone": f"({rng.randint(200, 989)}) {rng.randint(200, 989)}-{rng.randint(0, 9999):04d}",
                "username": username,
                "account_id": "".join(rng.choice(_ALNUM) for _ in range(10)),
                "pin_number": f"{rng.randint(0, 999999):06d}",
            },
            "order": {
                "street_address": street,
                "full_address": f"{street}  {city}, {state} {zip_code}",
                "city": city,
                "num_products": str(len(items)),
                "order_id": str(rng.randint(10**9, 10**10 - 1)),
                "packaging": rng.choice(("yes", "no")),
                "payment_method": rng.choice(PAYMENT_METHODS),
                "products": repr(items),
                "purchase_date": purchase.isoformat(),
                "state": state,
                "zip_code": zip_code,
            },
            "product": {
                "names": [f"{item['brand']} {item['product_type']}" for item in items],
                "amounts": [item["amount"] for item in items],
            },
            "flow": info["flow"],
            "subflow": subflow,
            "mimesis": {
                "today": today.isoformat(),
                "shipping_status": rng.choice(SHIPPING_STATUSES),
                "oracle": rng.choice(("yes", "no")),
                "has_receipt": rng.choice(("yes", "no")),
                "days_waiting": rng.randint(1, 20),
                "days_late": rng.randint(1, 6),
                "disputed_amount": rng.randint(5, 40),
            },
        },
        "original": [],
    }


def generate_scenarios(seed: int, catalog: StoreCatalog) -> dict[str, list[dict[str, Any]]]:
    """ABCD-style conversations (without dialogue) by split: ``train``, ``dev`` (empty), ``test``."""
    order = sorted(ORIGINAL_SUBFLOWS)
    random.Random(f"{seed}:subflows").shuffle(order)
    offsets = {subflow: random.Random(f"{seed}:offset:{subflow}").randint(0, 1) for subflow in order}
    seen: Counter[tuple[str, str]] = Counter()
    splits: dict[str, list[dict[str, Any]]] = {"train": [], "dev": [], "test": []}
    index = 0
    for split in ("train", "test"):
        for _ in range(SCENARIO_COUNTS[split]):
            subflow = order[index % len(order)]
            rng = random.Random(f"{seed}:scenario:{index}")
            convo = _draw_scenario(rng, subflow, FIRST_CONVO_ID + index)
            if subflow in catalog.rules:
                count = seen[(split, subflow)]
                want_eligible = (count + offsets[subflow]) % 2 == 0
                for _attempt in range(1000):
                    if violates_rule(convo["scenario"], catalog) != want_eligible:
                        break
                    convo = _draw_scenario(rng, subflow, FIRST_CONVO_ID + index)
                else:  # pragma: no cover - the draws make both outcomes common
                    raise RuntimeError(f"could not draw a scenario of {subflow} with eligible={want_eligible}")
                seen[(split, subflow)] += 1
            splits[split].append(convo)
            index += 1
    return splits


# ---------------------------------------------------------------- rows


def _row(split: str, condition: str, kwargs: dict[str, Any], scenario: dict[str, Any], convo_id: int) -> dict[str, Any]:
    return {
        "row_id": "",
        "split": split,
        "pack": "original",
        "condition": condition,
        "behavior": None if condition == "control" else behavior(condition).name,
        "kwargs": kwargs,
        "turn_budget": 8,
        "flow": scenario["flow"],
        "subflow": scenario["subflow"],
        "convo_id": convo_id,
        "scenario": scenario,
    }


def build_rows(
    spec: RowSplit, conversations: Sequence[Mapping[str, Any]], catalog: StoreCatalog, seed: int
) -> list[dict[str, Any]]:
    """The rows of one rows file: control rows, then behavior rows, shuffled and numbered."""
    rows = [
        _row(
            spec.scenarios,
            "control",
            {},
            conversations[i % len(conversations)]["scenario"],
            conversations[i % len(conversations)]["convo_id"],
        )
        for i in range(spec.n_control)
    ]
    cursor = 0
    for n in range(spec.n_per_behavior):
        for condition in BEHAVIOR_IDS:
            for step in range(len(conversations)):
                convo = conversations[(cursor + step) % len(conversations)]
                if applicable(condition, convo["scenario"], catalog, strict=True):
                    cursor = (cursor + step + 1) % len(conversations)
                    break
            else:  # pragma: no cover - every behavior applies to many scenarios
                raise RuntimeError(f"no scenario of {spec.scenarios} admits {condition}")
            rng = random.Random(f"{seed}:{spec.stem}:{condition}:{n}")
            kwargs = derive_kwargs(condition, convo["scenario"], catalog, rng, strict=True)
            rows.append(_row(spec.scenarios, condition, kwargs, convo["scenario"], convo["convo_id"]))
    random.Random(f"{seed}:{spec.stem}:order").shuffle(rows)
    for number, row in enumerate(rows):
        row["row_id"] = spec.row_id(number)
    return rows


def demo_rows(test_rows: Sequence[Mapping[str, Any]], catalog: StoreCatalog) -> list[dict[str, Any]]:
    """Per condition, the first of ``test_rows`` on which the scripted customer reaches R = 1 against
    the scripted agent and judge (the contract suite's oracle must reach the maximum on every demo
    row), renumbered as the ``demo`` split."""
    from mimesis_gym.envs.abcd.customers import play_scripted
    from mimesis_gym.envs.abcd.env import ABCDBehaviorEnv
    from mimesis_gym.envs.abcd.tasks import AbcdRow, AbcdTaskPack

    pack = AbcdTaskPack("build", {"test": [AbcdRow.model_validate(row) for row in test_rows]}, catalog)

    class BuildEnv(ABCDBehaviorEnv):  # reads the pack being built, not the committed files
        @classmethod
        def load_task_pack(cls, pack_name: str, data_dir: str | None) -> AbcdTaskPack:
            return pack

    env = BuildEnv(split="test")
    demo = []
    for number, condition in enumerate(CONDITIONS):
        for row in test_rows:
            if row["condition"] == condition and play_scripted(env, row["row_id"])[0] >= 1.0 - 1e-9:
                demo.append({**row, "row_id": f"abcd-orig-demo-{number:02d}", "split": "demo"})
                break
        else:  # pragma: no cover - the scripted customer maxes out most rows
            raise RuntimeError(f"no test row of {condition} reaches the maximum with the scripted customer")
    env.close()
    return demo


def build_pack(seed: int = DEFAULT_SEED) -> dict[str, bytes]:
    """Every file of the pack as bytes, keyed by its path relative to ``data/``."""
    files = policy_files()
    catalog = original_catalog_from(files)
    scenarios = generate_scenarios(seed, catalog)
    out: dict[str, bytes] = {f"original/{name}": _json_bytes(value) for name, value in files.items()}
    out["original/scenarios.json"] = _json_bytes(scenarios)
    rows = {spec.name: build_rows(spec, scenarios[spec.scenarios], catalog, seed) for spec in ROW_SPLITS}
    rows["demo"] = demo_rows(rows[DEMO_SOURCE], catalog)
    for split, records in rows.items():
        out[f"original/rows_{split}.jsonl"] = "".join(
            json.dumps(r, ensure_ascii=False) + "\n" for r in records
        ).encode()
    out["rules_abcd.json"] = _json_bytes(ABCD_RULES)
    return out


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def write_pack(out_dir: Path = DATA_DIR, seed: int = DEFAULT_SEED) -> list[Path]:
    """Write the pack under ``out_dir`` (``out_dir/original/…`` and ``out_dir/rules_abcd.json``)."""
    written = []
    for relative, payload in build_pack(seed).items():
        path = out_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload)
        written.append(path)
    return written


# ---------------------------------------------------------------- validation


def check_pack(directory: Path = ORIGINAL_DIR) -> list[str]:
    """Problems of the pack in ``directory`` (empty when valid): what ``--check`` reports."""
    problems: list[str] = []
    files = {name: json.loads((directory / name).read_text()) for name in policy_files()}
    try:
        catalog = original_catalog_from(files)
    except ValueError as error:
        return [str(error)]
    ontology_subflows = {s for subs in files["ontology.json"]["intents"]["subflows"].values() for s in subs}
    for subflow, sequence in catalog.kb.items():
        if subflow not in ontology_subflows or catalog.entry(subflow) is None:
            problems.append(f"subflow {subflow} is missing from the ontology or the guidelines")
        for action in sequence:
            if action not in ACTION_FIELDS and action not in NO_FIELD_ACTIONS:
                problems.append(f"{subflow}: action {action} has no required-fields entry")
        rule = catalog.rules.get(subflow)
        if rule is not None and rule.limit not in catalog.procedure(subflow):
            problems.append(f"{subflow}: the guidelines do not state the rule's limit sentence")
    seen: dict[str, str] = {}
    for name in (*(spec.name for spec in ROW_SPLITS), "demo"):
        path = directory / f"rows_{name}.jsonl"
        if not path.is_file():
            problems.append(f"{path.name} is missing")
            continue
        payload = path.read_bytes()
        if name == "test_v1" and hashlib.sha256(payload).hexdigest() != TEST_V1_SHA256:
            problems.append(
                f"{path.name} differs from the 156 rows first shipped as rows_test.jsonl (sha256 {TEST_V1_SHA256}); "
                "restore it: runs recorded on its row ids read it"
            )
        rows = [json.loads(line) for line in payload.decode("utf-8").splitlines() if line]
        spec = next((spec for spec in ROW_SPLITS if spec.name == name), None)
        problems.extend(_layout_problems(name, rows, spec))
        for row in rows:
            if row["row_id"] in seen:
                problems.append(f"{name}: row id {row['row_id']} is also in {seen[row['row_id']]}")
            seen[row["row_id"]] = name
            problems.extend(_row_problems(row, catalog))
    return problems


def _layout_problems(name: str, rows: Sequence[Mapping[str, Any]], spec: RowSplit | None) -> list[str]:
    """Counts, ids and ``split`` fields of one rows file (``spec`` None: the demo, one row per condition)."""
    counts = Counter(row["condition"] for row in rows)
    if spec is None:
        want = dict.fromkeys(CONDITIONS, 1)
        ids = [f"abcd-orig-demo-{number:02d}" for number in range(len(rows))]
        field = "demo"
    else:
        want = {"control": spec.n_control, **dict.fromkeys(BEHAVIOR_IDS, spec.n_per_behavior)}
        ids = [spec.row_id(number) for number in range(len(rows))]
        field = spec.scenarios
    problems = [
        f"{name}: {counts[condition]} rows of {condition}, want {n}"
        for condition, n in want.items()
        if counts[condition] != n
    ]
    if [row["row_id"] for row in rows] != ids:
        problems.append(f"{name}: row ids are not {ids[0] if ids else '(none)'}… numbered in file order")
    problems.extend(
        f"{row['row_id']}: split field {row['split']!r}, want {field!r}" for row in rows if row["split"] != field
    )
    return problems


def _row_problems(row: Mapping[str, Any], catalog: StoreCatalog) -> list[str]:
    problems: list[str] = []
    scenario, kwargs, condition, rid = row["scenario"], row["kwargs"], row["condition"], row["row_id"]
    values = field_values(scenario)
    if not catalog.covered(row["subflow"]):
        problems.append(f"{rid}: subflow {row['subflow']} is not covered")
    if condition == "control":
        return problems
    try:
        render_directive(condition, kwargs)
    except (KeyError, ValueError) as error:
        problems.append(f"{rid}: directive does not render ({error})")
    if "field" in kwargs and kwargs["field"] not in values:
        problems.append(f"{rid}: kwargs field {kwargs['field']} is not in the scenario")
    if condition == "B8" and norm(kwargs["false_value"]) == norm(kwargs["true_value"]):
        problems.append(f"{rid}: B8 false value equals the true value")
    if condition == "B11" and norm(kwargs["value_a"]) == norm(kwargs["value_b"]):
        problems.append(f"{rid}: B11 values are equal")
    if condition == "B3":
        askable = askable_fields(catalog.kb_sequence(row["subflow"]), scenario, ASK_PATTERNS)
        if not set(kwargs["withheld_fields"]) <= set(askable):
            problems.append(f"{rid}: B3 withholds fields outside {askable}")
    if condition == "B4" and not violates_rule(scenario, catalog):
        problems.append(f"{rid}: B4 scenario does not violate its rule")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate or check ABCDBehavior's original pack.")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument(
        "--out", type=Path, default=DATA_DIR, help="directory that receives original/ and rules_abcd.json"
    )
    parser.add_argument("--check", action="store_true", help="validate the pack under --out instead of writing it")
    args = parser.parse_args(argv)
    if args.check:
        problems = check_pack(args.out / "original")
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"{len(problems)} problem(s)")
        return 1 if problems else 0
    for path in write_pack(args.out, args.seed):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
