"""Reads of evals: a run's report (pass rate, per-case verdicts, the diff against the suite's
previous run), progress, and staff-checked fetches for the API."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext as _

from config.errors import AppError
from delegation.evals.checks import FAIL, UNAVAILABLE
from delegation.evals.expectations import LABELS
from delegation.evals.models import (
    AgentDraft,
    CaseStatus,
    EvalCase,
    EvalCaseResult,
    EvalRun,
    EvalRunStatus,
    EvalSuite,
)
from delegation.evals.waits import wait_outcome, wait_text


def _missing(message: str) -> AppError:
    return AppError("not_found", message, status=404)


def access_suite(suite_id: Any) -> EvalSuite:
    """The suite (callers are staff), or not_found."""
    suite = EvalSuite.objects.filter(pk=suite_id).select_related("agent").first()
    if suite is None:
        raise _missing(_("No such eval suite."))
    return suite


def access_suite_by_name(name: str) -> EvalSuite:
    """The suite with this name, or not_found."""
    suite = EvalSuite.objects.filter(name=name).select_related("agent").first()
    if suite is None:
        raise _missing(_("No such eval suite."))
    return suite


def access_case(case_id: Any) -> EvalCase:
    """The case, or not_found."""
    case = EvalCase.objects.filter(pk=case_id).select_related("suite").first()
    if case is None:
        raise _missing(_("No such eval case."))
    return case


def access_eval_run(run_id: Any) -> EvalRun:
    """The eval run, or not_found."""
    run = EvalRun.objects.filter(pk=run_id).select_related("suite", "draft").first()
    if run is None:
        raise _missing(_("No such eval run."))
    return run


def access_draft(draft_id: Any) -> AgentDraft:
    """The draft, or not_found."""
    draft = AgentDraft.objects.filter(pk=draft_id).select_related("agent").first()
    if draft is None:
        raise _missing(_("No such draft."))
    return draft


def previous_run(*, run: EvalRun) -> EvalRun | None:
    """The suite's run finished before this one, to compare with."""
    return (
        EvalRun.objects.filter(
            suite_id=run.suite_id, status=EvalRunStatus.FINISHED, created_at__lt=run.created_at
        )
        .order_by("-created_at")
        .first()
    )


@dataclass(frozen=True)
class CaseDiff:
    """How one case moved since the previous run."""

    name: str
    before: str | None  # None: the case is new
    after: str
    change: str  # "fixed", "broke", "new", "same"


def run_diff(*, run: EvalRun, before: EvalRun | None) -> list[CaseDiff]:
    """Each case of `run` against `before` (matched by case, else by name), changes first."""
    if before is None:
        return []
    earlier: dict[Any, str] = {}
    for result in before.results.all():
        earlier[result.case_id or result.name] = result.status
        earlier[result.name] = result.status
    rows = []
    for result in run.results.order_by("position"):
        old = earlier.get(result.case_id or result.name, earlier.get(result.name))
        rows.append(CaseDiff(result.name, old, result.status, _change(old, result.status)))
    order = {"broke": 0, "fixed": 1, "new": 2, "same": 3}
    return sorted(rows, key=lambda d: order[d.change])


def _change(before: str | None, after: str) -> str:
    if before is None:
        return "new"
    passed_before, passed_now = before == CaseStatus.PASSED, after == CaseStatus.PASSED
    if passed_before and not passed_now and after != CaseStatus.CANCELLED:
        return "broke"
    if passed_now and not passed_before:
        return "fixed"
    return "same"


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _label(outcome: dict[str, Any]) -> str:
    """An expectation's label in the active language (kept in English with the verdict)."""
    key = outcome.get("key", "")
    return gettext(LABELS[key]) if key in LABELS else outcome.get("label", key)


def result_rows(*, run: EvalRun) -> list[dict[str, Any]]:
    """Each case's result with its failing and unjudged expectations picked out, and values
    shown as JSON."""
    rows = []
    for result in run.results.order_by("position"):
        outcomes = [
            {
                **o,
                "label": _label(o),
                # a note kept in English that is one of ours reads in the active language
                "detail": gettext(o["detail"]) if o.get("detail") else "",
                "expected_text": _json(o["expected"]),
                "actual_text": _json(o["actual"]),
            }
            for o in result.expectations or []
        ]
        waits = [
            {"text": wait_text(w), "outcome": wait_outcome(w)}
            for w in (result.evidence or {}).get("waits", [])
        ]
        calls = [
            {**c, "arguments_text": _json(c.get("arguments"))}
            for c in (result.evidence or {}).get("tool_calls", [])
        ]
        rows.append(
            {
                "result": result,
                "outcomes": outcomes,
                "calls": calls,
                "waits": waits,
                "failing": [o for o in outcomes if o["status"] in (FAIL, "error")],
                "unavailable": [o for o in outcomes if o["status"] == UNAVAILABLE],
            }
        )
    return rows


def run_progress(*, run: EvalRun) -> dict[str, Any]:
    """Cases done out of all, as a number and a percentage, and the case running now."""
    current = run.results.filter(status=CaseStatus.RUNNING).values_list("name", flat=True).first()
    percent = round(100 * run.done / run.total) if run.total else 100
    return {"done": run.done, "total": run.total, "percent": percent, "current": current}


def case_results_for_junit(*, run: EvalRun) -> list[EvalCaseResult]:
    """The run's results in order, for reports."""
    return list(run.results.order_by("position"))


def draft_diff(*, draft: AgentDraft) -> str:
    """A unified diff from the version the draft was edited from to the draft."""
    base = draft.agent.revisions.filter(version=draft.base_version).first()

    def lines(snapshot: dict[str, Any] | None) -> list[str]:
        text = json.dumps(snapshot or {}, indent=2, sort_keys=True, ensure_ascii=False)
        return text.splitlines()

    return "\n".join(
        difflib.unified_diff(
            lines(base.snapshot if base else None),
            lines(draft.data),
            fromfile=f"v{draft.base_version}",
            tofile="draft",
            lineterm="",
        )
    )
