"""Built-in tools: ``finish`` and small, genuinely useful read-only helpers."""

from __future__ import annotations

import ast
import datetime as dt
import math
import operator
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.agent.context import ToolContext
from core.errors import ToolRetry
from core.tools.registry import Tool, ToolRegistry, tool


# Read-only: it only records the result inside the turn; the turn loop acts on it.
@tool(category="core")
async def finish(ctx: ToolContext, result: str) -> str:
    """Finish your work and hand over the final result. This ends your turns.

    Args:
        result: The complete final result, written for whoever asked for it.
    """
    if not result.strip():
        raise ToolRetry("finish needs a non-empty result: write the complete answer.")
    ctx.finish_result = result
    return "Result recorded. You are done."


_BINARY: dict[type[ast.operator], Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Any] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCS: dict[str, Any] = {
    "sqrt": math.sqrt,
    "log": math.log,
    "log10": math.log10,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "floor": math.floor,
    "ceil": math.ceil,
}
_CONSTS = {"pi": math.pi, "e": math.e}
_MAX_EXPONENT = 10_000
# Bound on integer results (about 3,000 decimal digits): keeps `(10**1000)**1000` cheap.
_MAX_RESULT_BITS = 10_000


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTS:
        return _CONSTS[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            if abs(right) > _MAX_EXPONENT:
                raise ToolRetry(f"exponent {right} is too large (limit {_MAX_EXPONENT})")
            if (
                isinstance(left, int)
                and isinstance(right, int)
                and left.bit_length() * right > _MAX_RESULT_BITS
            ):
                raise ToolRetry("the result would be too large (over ~3,000 digits)")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and not node.keywords
    ):
        return _FUNCS[node.func.id](*(_eval(a) for a in node.args))
    raise ToolRetry(
        f"unsupported expression element: {ast.dump(node)[:80]}. Use numbers, + - * / // % **,"
        f" parentheses, {', '.join(sorted(_FUNCS))} and the constants pi, e."
    )


@tool
async def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression exactly, e.g. "366*24*3600" or "sqrt(2)*100".

    Args:
        expression: Numbers, + - * / // % **, parentheses, sqrt, log, exp, sin, cos, tan,
            abs, round, min, max, floor, ceil, pi and e.
    """
    if len(expression) > 500:
        raise ToolRetry("expression is longer than 500 characters; split the calculation")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ToolRetry(f"not an arithmetic expression: {exc.msg}") from None
    try:
        value = _eval(tree)
    except ZeroDivisionError:
        raise ToolRetry("division by zero") from None
    except (OverflowError, ValueError, TypeError) as exc:
        raise ToolRetry(f"cannot compute: {exc}") from None
    if isinstance(value, complex):
        raise ToolRetry("the result is a complex number; only real results are supported")
    if isinstance(value, int) and value.bit_length() > _MAX_RESULT_BITS:
        raise ToolRetry("the result is too large (over ~3,000 digits)")
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return f"{expression.strip()} = {value}"


@tool
async def current_time(timezone: str = "UTC") -> str:
    """The current date, time and weekday in a time zone.

    Args:
        timezone: An IANA time zone name such as "UTC", "Europe/Lisbon" or "Asia/Tokyo".
    """
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ToolRetry(
            f"unknown time zone {timezone!r}; use an IANA name like 'Europe/Berlin'"
        ) from None
    now = dt.datetime.now(zone)
    return f"{now:%Y-%m-%d %H:%M:%S} {now.tzname()} ({now:%A}) in {timezone}"


@tool
async def days_between(start: dt.date, end: dt.date) -> str:
    """Count the days and weekdays (Mon–Fri) between two dates, end excluded.

    Args:
        start: First date, YYYY-MM-DD.
        end: Last date (excluded), YYYY-MM-DD.
    """
    days = (end - start).days
    lo, hi = sorted((start, end))
    full_weeks, rest = divmod((hi - lo).days, 7)
    weekdays = full_weeks * 5 + sum(
        1 for i in range(rest) if (lo + dt.timedelta(days=i)).weekday() < 5
    )
    return f"{days} days ({weekdays if days >= 0 else -weekdays} weekdays) from {start} to {end}"


BUILTIN_TOOLS: tuple[Tool, ...] = (finish, calculate, current_time, days_between)


def default_registry() -> ToolRegistry:
    return ToolRegistry(BUILTIN_TOOLS)
