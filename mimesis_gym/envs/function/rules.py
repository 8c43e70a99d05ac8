"""FunctionGym's hidden rules: a small AST interpreter, never ``eval`` (docs/envs/function.md, "Task data").

A rule is an arithmetic expression over the variables ``a, b, c, d``. :func:`parse_rule` accepts
only ``BinOp`` with ``+ - * / **``, unary ``-``/``+``, the four names and int/float constants, and
compiles the tree into nested closures once. :meth:`Rule.evaluate` binds four floats and applies
Python float arithmetic exactly as UserRL's empty-builtins ``eval`` did on float inputs, except
that division by zero, overflow and complex results raise :class:`RuleEvaluationError`.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Sequence

__all__ = ["VARIABLES", "Rule", "RuleEvaluationError", "parse_rule", "real_power"]

VARIABLES = ("a", "b", "c", "d")

Values = Sequence[float]
Compiled = Callable[[Values], float]

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


class RuleEvaluationError(ArithmeticError):
    """The rule has no real value on these inputs (division by zero, overflow, complex result)."""


class Rule:
    """A parsed rule: its source, the variables it uses and a compiled evaluator."""

    __slots__ = ("_compiled", "operator_count", "source", "variable_counts")

    def __init__(self, source: str, compiled: Compiled, variable_counts: dict[str, int], operator_count: int):
        self.source = source
        self._compiled = compiled
        self.variable_counts = variable_counts
        self.operator_count = operator_count

    def evaluate(self, values: Values) -> float:
        """The rule's value on ``(a, b, c, d)``; raises :class:`RuleEvaluationError`."""
        try:
            return self._compiled(values)
        except (ZeroDivisionError, OverflowError) as error:
            raise RuleEvaluationError(str(error)) from None

    def __repr__(self) -> str:
        return f"Rule({self.source!r})"

    def __reduce__(self) -> tuple[Callable[[str], Rule], tuple[str]]:
        return parse_rule, (self.source,)


def parse_rule(source: str) -> Rule:
    """Parse and compile ``source``; ``ValueError`` for anything outside the rule grammar."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as error:
        raise ValueError(f"rule {source!r} is not a valid expression: {error.msg}") from None
    counts = dict.fromkeys(VARIABLES, 0)
    operators = [0]
    compiled = _compile(tree.body, source, counts, operators)
    return Rule(source, compiled, counts, operators[0])


def _compile(node: ast.AST, source: str, counts: dict[str, int], operators: list[int]) -> Compiled:
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        operators[0] += 1
        left = _compile(node.left, source, counts, operators)
        right = _compile(node.right, source, counts, operators)
        if isinstance(node.op, ast.Pow):
            return lambda values: real_power(left(values), right(values))
        apply = _BINARY[type(node.op)]
        return lambda values: apply(left(values), right(values))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        operand = _compile(node.operand, source, counts, operators)
        apply_unary = _UNARY[type(node.op)]
        return lambda values: apply_unary(operand(values))
    if isinstance(node, ast.Name) and node.id in counts:
        counts[node.id] += 1
        index = VARIABLES.index(node.id)
        return lambda values: values[index]
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        constant = node.value
        return lambda values: constant
    raise ValueError(
        f"rule {source!r}: {type(node).__name__} `{ast.unparse(node)[:60]}` is not allowed; "
        "rules use only a, b, c, d, numbers, + - * / ** and unary -"
    )


def real_power(base: float, exponent: float) -> float:
    """``base ** exponent`` that refuses complex results (negative base, fractional exponent)."""
    value = base**exponent
    if isinstance(value, complex):
        raise RuleEvaluationError("complex result")
    return value
