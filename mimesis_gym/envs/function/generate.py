"""The seeded generator of FunctionGym rules and of the shipped original pack (docs/envs/function.md, "Task data").

``python -m mimesis_gym.envs.function.generate --seed 1512 --train 400 --test 100`` rewrites
``data/{train,test,demo}.jsonl`` and ``data/manifest.json``; the output is byte-identical for the
same arguments (a slow test regenerates and compares). The generator never reads UserRL data.

A rule is a random binary tree over the four variables, each used once: 3 internal operators
drawn bottom-up, up to two squares, rendered with minimal parentheses (sometimes one redundant
pair). It is kept only when its value on the test case is an integer of magnitude ≤ 5000 and it
is not degenerate (at least 10 distinct values on 20 random probes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mimesis_gym.envs.function.rules import Rule, RuleEvaluationError, parse_rule, real_power

__all__ = ["DEFAULT_SEED", "DEMO_TASKS", "GeneratedTask", "generate_pack", "generate_task", "write_pack"]

DEFAULT_SEED = 1512
DATA_DIR = Path(__file__).parent / "data"

OPERATOR_WEIGHTS: tuple[tuple[str, float], ...] = (("+", 0.28), ("-", 0.26), ("*", 0.30), ("/", 0.10), ("**", 0.06))
SQUARE_COUNT_WEIGHTS: tuple[tuple[int, float], ...] = ((0, 0.65), (1, 0.28), (2, 0.07))
REDUNDANT_PARENS_PROBABILITY = 0.3
MAX_ABS_VALUE = 5000
PROBES = 20
MIN_DISTINCT_PROBE_VALUES = 10

DEMO_TASKS: tuple[dict[str, object], ...] = (
    {
        "id": "fn-demo-01",
        "split": "demo",
        "rule": "(a + b) * c - d",
        "test_case": [3, 4, 5, 6],
        "expected_result": 29.0,
    },
    {"id": "fn-demo-02", "split": "demo", "rule": "a / (b - c) + d", "test_case": [6, 5, 2, 1], "expected_result": 3.0},
    {"id": "fn-demo-03", "split": "demo", "rule": "a ** b + c - d", "test_case": [2, 3, 4, 5], "expected_result": 7.0},
)

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "**": 3, "sq": 3}
_APPLY: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "**": real_power,
}


@dataclass(eq=False)
class _Node:
    """A rule tree node: a leaf (``name``), a binary ``op`` or a square (``op == "sq"``, child in ``left``)."""

    name: str = ""
    op: str = ""
    left: _Node | None = None
    right: _Node | None = None
    extra_parens: bool = False

    @property
    def is_leaf(self) -> bool:
        return not self.op

    @property
    def precedence(self) -> int:
        return 4 if self.is_leaf else _PRECEDENCE[self.op]


@dataclass(frozen=True)
class GeneratedTask:
    rule: str
    test_case: tuple[int, int, int, int]
    expected_result: float


def _pick(rng: np.random.Generator, weights: Sequence[tuple[object, float]]) -> object:
    draw = rng.random()
    total = 0.0
    for value, weight in weights:
        total += weight
        if draw < total:
            return value
    return weights[-1][0]


def _shape(leaves: list[_Node], shape: int) -> tuple[_Node, list[_Node]]:
    """One of the five binary trees over four ordered leaves; returns (root, internal nodes bottom-up)."""
    l0, l1, l2, l3 = leaves

    def join(left: _Node, right: _Node) -> _Node:
        return _Node(op="?", left=left, right=right)

    if shape == 0:  # ((l0 o l1) o l2) o l3
        n1 = join(l0, l1)
        n2 = join(n1, l2)
        return join(n2, l3), [n1, n2]
    if shape == 1:  # (l0 o (l1 o l2)) o l3
        n1 = join(l1, l2)
        n2 = join(l0, n1)
        return join(n2, l3), [n1, n2]
    if shape == 2:  # (l0 o l1) o (l2 o l3)
        n1, n2 = join(l0, l1), join(l2, l3)
        return join(n1, n2), [n1, n2]
    if shape == 3:  # l0 o ((l1 o l2) o l3)
        n1 = join(l1, l2)
        n2 = join(n1, l3)
        return join(l0, n2), [n1, n2]
    n1 = join(l2, l3)  # l0 o (l1 o (l2 o l3))
    n2 = join(l1, n1)
    return join(l0, n2), [n1, n2]


def _postorder(node: _Node) -> list[_Node]:
    nodes: list[_Node] = []
    for child in (node.left, node.right):
        if child is not None:
            nodes.extend(_postorder(child))
    nodes.append(node)
    return nodes


def _square(root: _Node, target: _Node) -> None:
    """Replace ``target`` in its parent by ``target ** 2``."""
    for parent in _postorder(root):
        for side in ("left", "right"):
            if getattr(parent, side) is target:
                setattr(parent, side, _Node(op="sq", left=target))
                return
    raise AssertionError("node to square not found")


def _child_edges(node: _Node) -> list[tuple[_Node, bool]]:
    """(child, needs parentheses) for each child of ``node``."""
    if node.is_leaf:
        return []
    assert node.left is not None
    if node.op == "sq":
        return [(node.left, node.left.precedence <= 3)]
    assert node.right is not None
    p = node.precedence
    if node.op == "**":  # right-associative
        return [(node.left, node.left.precedence <= p), (node.right, node.right.precedence < p)]
    return [(node.left, node.left.precedence < p), (node.right, node.right.precedence <= p)]


def _render(node: _Node, parenthesised: bool = False) -> str:
    if node.is_leaf:
        text = node.name
    else:
        parts = [_render(child, needed) for child, needed in _child_edges(node)]
        text = f"{parts[0]} ** 2" if node.op == "sq" else f"{parts[0]} {node.op} {parts[1]}"
    return f"({text})" if parenthesised or node.extra_parens else text


def _value(node: _Node, values: dict[str, float]) -> float:
    if node.is_leaf:
        return values[node.name]
    assert node.left is not None
    if node.op == "sq":
        return real_power(_value(node.left, values), 2)
    assert node.right is not None
    return _APPLY[node.op](_value(node.left, values), _value(node.right, values))


def _draw_candidate(rng: np.random.Generator) -> tuple[_Node, str, tuple[int, int, int, int], list[np.ndarray]]:
    leaves = [_Node(name=str(name)) for name in rng.permutation(["a", "b", "c", "d"])]
    root, internal = _shape(leaves, int(rng.integers(5)))
    for node in [*internal, root]:  # bottom-up
        while True:
            op = str(_pick(rng, OPERATOR_WEIGHTS))
            assert node.left is not None and node.right is not None
            if op != "**" or (node.left.is_leaf and node.right.is_leaf):
                node.op = op
                break
    n_squares = int(_pick(rng, SQUARE_COUNT_WEIGHTS))  # type: ignore[arg-type]
    candidates = [node for node in _postorder(root) if node is not root and node.op != "**"]
    for index in rng.permutation(len(candidates))[:n_squares]:
        _square(root, candidates[int(index)])
    if rng.random() < REDUNDANT_PARENS_PROBABILITY:
        bare = [
            child
            for node in _postorder(root)
            for child, needed in _child_edges(node)
            if not child.is_leaf and not needed
        ]
        if bare:
            bare[int(rng.integers(len(bare)))].extra_parens = True
    test_case = tuple(int(x) for x in rng.integers(1, 11, size=4))
    probes = [rng.integers(1, 11, size=4) for _ in range(PROBES)]
    return root, _render(root), test_case, probes  # type: ignore[return-value]


def generate_task(rng: np.random.Generator, exclude: set[str] | frozenset[str] = frozenset()) -> GeneratedTask:
    """Draw rules until one passes the acceptance rules (integer test value, enough distinct probe values).

    Uses only ``rng.integers``, ``rng.random`` and ``rng.permutation``; ``exclude`` holds rule
    strings already in the pack.
    """
    while True:
        root, rule_text, test_case, probes = _draw_candidate(rng)
        rule = parse_rule(rule_text)
        vectors = [[float(x) for x in test_case]] + [[float(x) for x in probe] for probe in probes]
        values = [_rule_value(rule, vector) for vector in vectors]
        if values != [_tree_value(root, vector) for vector in vectors]:
            raise AssertionError(f"rendering changed the rule: {rule_text!r}")
        value, probe_values = values[0], {v for v in values[1:] if v is not None}
        if value is None or abs(value - round(value)) >= 1e-9 or abs(value) > MAX_ABS_VALUE:
            continue
        if len(probe_values) < MIN_DISTINCT_PROBE_VALUES or rule_text in exclude:
            continue
        return GeneratedTask(rule=rule_text, test_case=test_case, expected_result=float(round(value)))


def _rule_value(rule: Rule, vector: list[float]) -> float | None:
    """The parsed rule's finite value, or ``None`` (evaluation error, inf, nan)."""
    try:
        value = rule.evaluate(vector)
    except RuleEvaluationError:
        return None
    return value if math.isfinite(value) else None


def _tree_value(root: _Node, vector: list[float]) -> float | None:
    """The generated tree's finite value, or ``None``: the reference the rendering must match."""
    try:
        value = _value(root, dict(zip("abcd", vector, strict=True)))
    except (RuleEvaluationError, ZeroDivisionError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def generate_pack(seed: int, n_train: int, n_test: int) -> list[dict[str, object]]:
    """The pack's records, train first (ids ``fn-0001`` …), then the demo fixtures."""
    rng = np.random.default_rng(seed)
    seen: set[str] = {str(task["rule"]) for task in DEMO_TASKS}
    records: list[dict[str, object]] = []
    for index in range(n_train + n_test):
        task = generate_task(rng, seen)
        seen.add(task.rule)
        records.append(
            {
                "id": f"fn-{index + 1:04d}",
                "split": "train" if index < n_train else "test",
                "rule": task.rule,
                "test_case": list(task.test_case),
                "expected_result": task.expected_result,
            }
        )
    return records + [dict(task) for task in DEMO_TASKS]


def write_pack(out_dir: Path, seed: int, n_train: int, n_test: int) -> dict[str, object]:
    """Write ``{train,test,demo}.jsonl`` and ``manifest.json`` into ``out_dir``; return the manifest."""
    out_dir.mkdir(parents=True, exist_ok=True)
    records = generate_pack(seed, n_train, n_test)
    digests: dict[str, str] = {}
    for split in ("train", "test", "demo"):
        lines = [json.dumps(record, ensure_ascii=False) + "\n" for record in records if record["split"] == split]
        payload = "".join(lines).encode("utf-8")
        (out_dir / f"{split}.jsonl").write_bytes(payload)
        digests[f"{split}.jsonl"] = hashlib.sha256(payload).hexdigest()
    manifest: dict[str, object] = {
        "generator": "python -m mimesis_gym.envs.function.generate",
        "seed": seed,
        "counts": {"train": n_train, "test": n_test, "demo": len(DEMO_TASKS)},
        "sha256": digests,
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate FunctionGym's original task pack.")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--train", type=int, default=400)
    parser.add_argument("--test", type=int, default=100)
    parser.add_argument("--out", type=Path, default=DATA_DIR)
    args = parser.parse_args(argv)
    manifest = write_pack(args.out, args.seed, args.train, args.test)
    print(json.dumps(manifest, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
