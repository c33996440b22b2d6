"""Small general-purpose tools: the current time in the user's timezone, and arithmetic."""

from __future__ import annotations

import ast
import math
import operator
import threading
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agents.registry import ToolContext, ToolError, tool
from agents.tools.offline_rules import calculate_args, time_args


def user_timezone(user: Any) -> ZoneInfo:
    """The user's own timezone (from their chat preferences), else the site's."""
    name = getattr(getattr(user, "chat_preference", None), "timezone", "") or settings.TIME_ZONE
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo(settings.TIME_ZONE)


def _told_time(arguments: dict[str, Any], result: Any) -> str:
    """ "Checked the time: 14:05 (Asia/Taipei)"."""
    if not isinstance(result, dict):
        return ""
    return _("Checked the time: %(time)s (%(zone)s)") % {
        "time": result.get("time", ""),
        "zone": result.get("timezone", ""),
    }


def _calculated(arguments: dict[str, Any], result: Any) -> str:
    """ "Calculated 6*7 = 42"."""
    if not isinstance(result, dict):
        return ""
    return _("Calculated %(expression)s = %(value)s") % {
        "expression": result.get("expression", ""),
        "value": result.get("value", ""),
    }


@tool(
    "current_time",
    "The current date, time and weekday, in the user's timezone unless another is named.",
    {
        "type": "object",
        "properties": {
            "timezone": {"type": "string", "description": "IANA name, e.g. Asia/Taipei."}
        },
        "additionalProperties": False,
    },
    offline_rule=time_args,
    offline_priority=300,  # after the planner's rules: it fires on any "today"
    title=gettext_lazy("Check the time"),
    summarize=_told_time,
)
def current_time(context: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Report now in the requested or the user's timezone."""
    if args.get("timezone"):
        try:
            zone = ZoneInfo(args["timezone"])
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ToolError(
                _("Unknown timezone %(name)s.") % {"name": repr(args["timezone"])}
            ) from exc
    else:
        zone = user_timezone(context.user)
    now = datetime.now(zone)
    return {
        "iso": now.isoformat(timespec="seconds"),
        "date": now.date().isoformat(),
        "time": now.strftime("%H:%M"),
        "weekday": now.strftime("%A"),
        "timezone": str(zone),
    }


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_CONSTANTS = {"pi": math.pi, "e": math.e}
# Every intermediate stays under this size, so a short expression cannot take minutes or
# memory to compute, nor produce a number too long to write out (Python's 4300-digit limit).
_MAX_BITS = 3000


def _round(value: float, digits: int | None = None) -> float:
    """round(), refusing digit counts for which Python would build a huge power of ten."""
    if digits is not None and abs(digits) > 100:
        raise ToolError(_("Round to at most 100 digits."))
    return round(value, digits)


_FUNCTIONS = {"sqrt": math.sqrt, "abs": abs, "round": _round, "min": min, "max": max}


def _bounded(value: Any) -> float:
    """The value, unless it is not a real number or is too large to be useful."""
    if isinstance(value, complex):
        raise ToolError(_("The result is not a real number."))
    if (isinstance(value, int) and value.bit_length() > _MAX_BITS) or (
        isinstance(value, float) and not math.isfinite(value)
    ):
        raise ToolError(_("Result too large."))
    return value


# CPython 3.11 keeps the AST constructor's recursion depth per interpreter, not per thread: two
# threads parsing at once (runs on the worker's threads; a traceback being formatted, which parses
# too) can fail with "AST constructor recursion depth mismatch" (python/cpython#106905). Our own
# parses take turns; one retry covers a clash with a parse outside this module.
_PARSE_LOCK = threading.Lock()


def _parse_expression(expression: str) -> ast.Expression:
    with _PARSE_LOCK:
        try:
            return ast.parse(expression, mode="eval")
        except SystemError:
            return ast.parse(expression, mode="eval")


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 100:
            raise ToolError(_("Exponent too large."))
        return _bounded(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _bounded(_FUNCTIONS[node.func.id](*[_evaluate(a) for a in node.args]))
    raise ToolError(
        _("Only numbers, + - * / // %% **, parentheses, pi, e and sqrt/abs/round/min/max.") % {}
    )


@tool(
    "calculate",
    "Evaluate an arithmetic expression exactly (never guess sums, percentages or totals).",
    {
        "type": "object",
        "properties": {
            "expression": {
                "type": "string",
                "minLength": 1,
                "maxLength": 500,
                "description": "e.g. (1200 * 0.05) + 3",
            }
        },
        "required": ["expression"],
        "additionalProperties": False,
    },
    offline_rule=calculate_args,
    offline_priority=200,
    title=gettext_lazy("Calculate"),
    summarize=_calculated,
)
def calculate(context: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Evaluate arithmetic safely (a parsed subset, no eval)."""
    expression = args["expression"]
    try:
        tree = _parse_expression(expression.replace("^", "**"))
        value = _evaluate(tree.body)
    except SyntaxError as exc:
        raise ToolError(
            _("Not an arithmetic expression: %(expression)s.") % {"expression": repr(expression)}
        ) from exc
    except ZeroDivisionError as exc:
        raise ToolError(_("Division by zero.")) from exc
    except (OverflowError, ValueError, TypeError) as exc:
        raise ToolError(_("Cannot compute that: %(problem)s.") % {"problem": exc}) from exc
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return {"expression": expression, "value": value}
