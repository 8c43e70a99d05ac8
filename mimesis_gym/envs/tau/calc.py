"""The ``calculate`` tool: Python arithmetic on a restricted character set, without ``eval``.

See docs/envs/tau.md, "Tools".

Grammar (Python's, restricted to numbers, ``+ - * / // **`` and parentheses)::

    expr   := term (("+" | "-") term)*
    term   := factor (("*" | "/" | "//") factor)*
    factor := ("+" | "-") factor | power
    power  := atom ["**" factor]          # right-associative; binds tighter than a unary minus on its left
    atom   := NUMBER | "(" expr ")"

Numbers are Python literals (``3``, ``3.5``, ``.5``, ``5.``; an integer literal may not have a
leading zero unless it is all zeros) and keep Python's int/float semantics, so ``7//2`` is ``3``
and ``1/3`` is a float. The result text is ``str(round(float(value), 2))``. Errors (syntax, division
by zero, a complex power, an exponent above 10000, a value whose magnitude exceeds 1e300 at any
step) read ``Error: <reason>``.
"""

from __future__ import annotations

import math
import re

__all__ = ["ALLOWED_CHARACTERS", "CalculationError", "calculate", "evaluate"]

ALLOWED_CHARACTERS = frozenset("0123456789+-*/(). ")
MAX_MAGNITUDE = 1e300
MAX_EXPONENT = 10000
MAX_DIGITS = 300

_TOKEN = re.compile(r"\s*(?:(\d+\.\d*|\.\d+|\d+)|(\*\*|//|[+\-*/()]))")


class CalculationError(ValueError):
    """Why an expression has no value."""


def _tokens(expression: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    stripped_end = len(expression.rstrip())
    while position < stripped_end:
        match = _TOKEN.match(expression, position)
        if match is None:
            raise CalculationError(f"invalid syntax at position {position}")
        number, operator = match.groups()
        if number is not None and "." not in number and len(number) > 1 and number[0] == "0" and number.strip("0"):
            raise CalculationError("leading zeros in decimal integer literals are not permitted")
        tokens.append(number if number is not None else operator)
        position = match.end()
    return tokens


def _checked(value: int | float) -> int | float:
    if abs(value) > MAX_MAGNITUDE:
        raise CalculationError("result too large")
    return value


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.index = 0

    def peek(self) -> str | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise CalculationError("unexpected end of expression")
        self.index += 1
        return token

    def expr(self) -> int | float:
        value = self.term()
        while self.peek() in ("+", "-"):
            operator = self.take()
            right = self.term()
            value = _checked(value + right if operator == "+" else value - right)
        return value

    def term(self) -> int | float:
        value = self.factor()
        while self.peek() in ("*", "/", "//"):
            operator = self.take()
            right = self.factor()
            try:
                if operator == "*":
                    value = value * right
                elif operator == "/":
                    value = value / right
                else:
                    value = value // right
            except ZeroDivisionError:
                raise CalculationError("division by zero") from None
            value = _checked(value)
        return value

    def factor(self) -> int | float:
        if self.peek() in ("+", "-"):
            sign = self.take()
            value = self.factor()
            return -value if sign == "-" else +value
        return self.power()

    def power(self) -> int | float:
        base = self.atom()
        if self.peek() != "**":
            return base
        self.take()
        exponent = self.factor()
        if exponent > MAX_EXPONENT:
            raise CalculationError(f"exponent above {MAX_EXPONENT}")
        if abs(base) > 1 and exponent > 0 and exponent * math.log10(abs(base)) > MAX_DIGITS:
            raise CalculationError("result too large")  # decided before computing a huge integer
        try:
            value = base**exponent
        except ZeroDivisionError:
            raise CalculationError("zero cannot be raised to a negative power") from None
        except OverflowError:
            raise CalculationError("result too large") from None
        if isinstance(value, complex):
            raise CalculationError("a negative number cannot be raised to a fractional power")
        return _checked(value)

    def atom(self) -> int | float:
        token = self.take()
        if token == "(":
            value = self.expr()
            if self.take() != ")":
                raise CalculationError("'(' was never closed")
            return value
        if token[0].isdigit() or token[0] == ".":
            return float(token) if "." in token else int(token)
        raise CalculationError(f"invalid syntax near {token!r}")


def evaluate(expression: str) -> int | float:
    """The value of ``expression`` with Python semantics; raises :class:`CalculationError`."""
    parser = _Parser(_tokens(expression))
    if parser.peek() is None:
        raise CalculationError("empty expression")
    value = parser.expr()
    if parser.peek() is not None:
        raise CalculationError(f"invalid syntax near {parser.peek()!r}")
    return value


def calculate(expression: str) -> str:
    """The tool's result text: ``str(round(float(value), 2))`` or ``Error: <reason>``."""
    if any(character not in ALLOWED_CHARACTERS for character in expression):
        return "Error: invalid characters in expression"
    try:
        return str(round(float(evaluate(expression)), 2))
    except CalculationError as error:
        return f"Error: {error}"
    except (OverflowError, RecursionError):
        return "Error: expression too large"
