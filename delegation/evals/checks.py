"""Judging one finished eval turn: each expectation's verdict, with what was expected and seen."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from config.text import simplified
from delegation.evals.expectations import LABELS

PASS, FAIL, UNAVAILABLE, ERROR = "pass", "fail", "unavailable", "error"

# A rubric grader: (rubric, evidence) -> (status, detail).
Grader = Callable[[str, dict[str, Any]], tuple[str, str]]


def outcome(key: str, status: str, expected: Any, actual: Any, detail: str = "") -> dict[str, Any]:
    """One expectation's verdict as stored and shown."""
    return {
        "key": key,
        "label": LABELS[key],
        "status": status,
        "expected": expected,
        "actual": actual,
        "detail": detail,
    }


def expectations_check(
    expect: dict[str, Any], evidence: dict[str, Any], grade: Grader
) -> list[dict[str, Any]]:
    """Every expectation of the case judged against the turn's evidence, in LABELS order."""
    return [CHECKS[key](key, expect[key], evidence, grade) for key in LABELS if key in expect]


def fold(text: str) -> str:
    """Text as contains-checks compare it: case-folded, Traditional and Simplified alike."""
    return simplified(text or "").casefold()


def _verdict(ok: bool) -> str:
    return PASS if ok else FAIL


def _mode(key: str, expected: str, evidence: dict[str, Any], grade: Grader) -> dict[str, Any]:
    actual = (evidence.get("routing") or {}).get("mode")
    return outcome(key, _verdict(actual == expected), expected, actual)


def _experts(
    key: str, expected: dict[str, Any], evidence: dict[str, Any], grade: Grader
) -> dict[str, Any]:
    asked = list(evidence.get("experts", []))
    names, match = expected["names"], expected.get("match", "set")
    if match == "ordered":
        ok = list(dict.fromkeys(asked)) == names
    elif match == "includes":
        ok = set(names) <= set(asked)
    else:
        ok = set(asked) == set(names)
    detail = "" if ok else f"asked {', '.join(asked) or 'no expert'}"
    return outcome(key, _verdict(ok), expected, asked, detail)


def _called(evidence: dict[str, Any]) -> list[str]:
    return [call["name"] for call in evidence.get("tool_calls", [])]


def _tools_called(key: str, expected: list[str], evidence: dict[str, Any], grade: Grader) -> Any:
    called = _called(evidence)
    missing = [k for k in expected if k not in called]
    detail = f"never called: {', '.join(missing)}" if missing else ""
    return outcome(key, _verdict(not missing), expected, called, detail)


def _tools_not_called(
    key: str, expected: list[str], evidence: dict[str, Any], grade: Grader
) -> Any:
    called = _called(evidence)
    wrong = [k for k in expected if k in called]
    detail = f"called: {', '.join(wrong)}" if wrong else ""
    return outcome(key, _verdict(not wrong), expected, called, detail)


def _no_tools(key: str, expected: bool, evidence: dict[str, Any], grade: Grader) -> Any:
    called = _called(evidence)
    detail = f"called: {', '.join(called)}" if called else ""
    return outcome(key, _verdict(not called), True, called, detail)


def json_subset(expected: Any, actual: Any) -> bool:
    """Whether `actual` holds `expected`: objects by their keys (recursively, extra keys
    allowed), lists item by item with the same length, other values equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and json_subset(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(json_subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return expected == actual


def _tool_arguments(
    key: str, expected: list[dict[str, Any]], evidence: dict[str, Any], grade: Grader
) -> Any:
    calls = evidence.get("tool_calls", [])
    unmet = [
        item
        for item in expected
        if not any(
            c["name"] == item["tool"] and json_subset(item["arguments"], c.get("arguments"))
            for c in calls
        )
    ]
    seen = [{"tool": c["name"], "arguments": c.get("arguments")} for c in calls]
    detail = "no call matched: " + ", ".join(i["tool"] for i in unmet) if unmet else ""
    return outcome(key, _verdict(not unmet), expected, seen, detail)


def _answer(evidence: dict[str, Any]) -> str:
    return evidence.get("answer") or ""


def _contains(key: str, expected: list[str], evidence: dict[str, Any], grade: Grader) -> Any:
    answer = fold(_answer(evidence))
    missing = [text for text in expected if fold(text) not in answer]
    detail = "missing: " + ", ".join(f"“{t}”" for t in missing) if missing else ""
    return outcome(key, _verdict(not missing), expected, _answer(evidence)[:500], detail)


def _not_contains(key: str, expected: list[str], evidence: dict[str, Any], grade: Grader) -> Any:
    answer = fold(_answer(evidence))
    found = [text for text in expected if fold(text) in answer]
    detail = "found: " + ", ".join(f"“{t}”" for t in found) if found else ""
    return outcome(key, _verdict(not found), expected, _answer(evidence)[:500], detail)


def _regex(key: str, expected: str, evidence: dict[str, Any], grade: Grader) -> Any:
    ok = re.search(expected, _answer(evidence), re.S) is not None
    return outcome(key, _verdict(ok), expected, _answer(evidence)[:500])


def _cited(key: str, expected: list[str], evidence: dict[str, Any], grade: Grader) -> Any:
    titles = [c.get("title", "") for c in evidence.get("citations", [])]
    cited = {fold(t) for t in titles}
    missing = [t for t in expected if fold(t) not in cited]
    detail = "not cited: " + ", ".join(f"“{t}”" for t in missing) if missing else ""
    return outcome(key, _verdict(not missing), expected, titles, detail)


def _max_calls(key: str, expected: int, evidence: dict[str, Any], grade: Grader) -> Any:
    actual = evidence.get("model_calls")
    if actual is None:
        return outcome(key, UNAVAILABLE, expected, None, "the turn did not start")
    return outcome(key, _verdict(actual <= expected), expected, actual)


def _max_latency(key: str, expected: float, evidence: dict[str, Any], grade: Grader) -> Any:
    latency = evidence.get("latency_ms")
    if latency is None:
        return outcome(key, UNAVAILABLE, expected, None, "the turn did not finish")
    seconds = round(latency / 1000, 3)
    return outcome(key, _verdict(seconds <= expected), expected, seconds)


def _max_cost(key: str, expected: str, evidence: dict[str, Any], grade: Grader) -> Any:
    cost = evidence.get("cost")
    if cost is None:
        note = evidence.get("cost_note") or "the cost of this turn is unknown"
        return outcome(key, UNAVAILABLE, expected, None, note)
    ok = Decimal(cost) <= Decimal(expected)
    return outcome(key, _verdict(ok), expected, f"{cost} {evidence.get('currency', '')}".strip())


def _rubric(key: str, expected: str, evidence: dict[str, Any], grade: Grader) -> Any:
    status, detail = grade(expected, evidence)
    return outcome(key, status, expected, _answer(evidence)[:500], detail)


def _human(key: str, expected: dict[str, Any], evidence: dict[str, Any], grade: Grader) -> Any:
    waits = evidence.get("waits", [])
    detail = "" if waits else "the turn never waited for a person"
    return outcome(key, _verdict(bool(waits)), expected, waits, detail)


CHECKS: dict[str, Callable[[str, Any, dict[str, Any], Grader], dict[str, Any]]] = {
    "mode": _mode,
    "experts": _experts,
    "tools_called": _tools_called,
    "tools_not_called": _tools_not_called,
    "no_tools": _no_tools,
    "tool_arguments": _tool_arguments,
    "answer_contains": _contains,
    "answer_not_contains": _not_contains,
    "answer_regex": _regex,
    "cited_documents": _cited,
    "max_model_calls": _max_calls,
    "max_latency_seconds": _max_latency,
    "max_cost": _max_cost,
    "rubric": _rubric,
    "human": _human,
}


def case_status(outcomes: list[dict[str, Any]], *, turn_ok: bool) -> str:
    """The case's verdict: error when the turn or a grader broke, failed when an expectation
    failed, else passed (expectations that could not be judged are listed, not counted)."""
    statuses = {o["status"] for o in outcomes}
    if not turn_ok or ERROR in statuses:
        return "error"
    return "failed" if FAIL in statuses else "passed"
