"""Comparing routing with and without learning on the same cases: two eval runs of one suite,
case by case (the expert routing asked first, the verdict), with their totals (one query a
run)."""

from __future__ import annotations

from typing import Any

from delegation.evals.models import CaseStatus, EvalRun


def learning_comparison(*, without: EvalRun, with_learning: EvalRun) -> dict[str, Any]:
    """Per case (by position): each run's routed expert, whether learning changed it, and the
    case's status; and the totals (pass rates, cases routed differently)."""
    sides = [_cases(without), _cases(with_learning)]
    rows = []
    for position in sorted(set(sides[0]) | set(sides[1])):
        before, after = (side.get(position, {}) for side in sides)
        rows.append(
            {
                "name": before.get("name") or after.get("name"),
                "off": before,
                "on": after,
                "routed_differently": before.get("target") != after.get("target"),
            }
        )
    return {
        "rows": rows,
        "pass_rate": {"off": without.pass_rate, "on": with_learning.pass_rate},
        "routed_differently": sum(1 for row in rows if row["routed_differently"]),
    }


def _cases(run: EvalRun) -> dict[int, dict[str, Any]]:
    """{position: {name, status, passed, target, changed}} of one eval run, from the evidence
    kept with each result (its turn's runs go with its sandbox session)."""
    cases = {}
    for result in run.results.order_by("position"):
        decision = (result.evidence or {}).get("routing") or {}
        cases[result.position] = {
            "name": result.name,
            "status": result.status,
            "passed": result.status == CaseStatus.PASSED,
            "target": decision.get("target"),
            "changed": (decision.get("learning") or {}).get("changed", ""),
        }
    return cases
