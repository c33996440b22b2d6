"""JUnit XML of an eval run, for CI: one testsuite, one testcase per eval case."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

from delegation.evals.models import CaseStatus, EvalCaseResult, EvalRun
from delegation.evals.waits import waits_text
from delegation.usage.money import money_text


def junit_xml(*, run: EvalRun, results: list[EvalCaseResult]) -> str:
    """The run as JUnit XML: failed cases as <failure>, broken ones as <error>, cancelled ones
    as <skipped>, each with the evidence summary in <system-out>."""
    failures = sum(r.status == CaseStatus.FAILED for r in results)
    errors = sum(r.status == CaseStatus.ERROR for r in results)
    skipped = sum(r.status in (CaseStatus.CANCELLED, CaseStatus.PENDING) for r in results)
    seconds = sum((r.latency_ms or 0) for r in results) / 1000
    root = ET.Element("testsuites", name=f"evals {run.suite.name}")
    suite = ET.SubElement(
        root,
        "testsuite",
        name=run.suite.name,
        tests=str(len(results)),
        failures=str(failures),
        errors=str(errors),
        skipped=str(skipped),
        time=f"{seconds:.3f}",
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("target", run.target),
        ("threshold", f"{run.threshold}%"),
        ("pass_rate", f"{run.pass_rate}%"),
        ("eval_run", str(run.pk)),
    ):
        ET.SubElement(properties, "property", name=name, value=value)
    for result in results:
        suite.append(_testcase(run, result))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _testcase(run: EvalRun, result: EvalCaseResult) -> ET.Element:
    case = ET.Element(
        "testcase",
        classname=f"evals.{run.suite.name}",
        name=result.name,
        time=f"{(result.latency_ms or 0) / 1000:.3f}",
    )
    failing = [o for o in result.expectations or [] if o["status"] in ("fail", "error")]
    lines = [f"{o['label']}: {o['detail'] or _short(o['actual'])}" for o in failing]
    if result.status == CaseStatus.FAILED:
        ET.SubElement(
            case, "failure", message="; ".join(lines)[:1000], type="expectation"
        ).text = "\n".join(_outcome_line(o) for o in failing)
    elif result.status == CaseStatus.ERROR:
        message = result.error or "; ".join(lines)
        ET.SubElement(case, "error", message=message[:1000], type="error").text = message
    elif result.status in (CaseStatus.CANCELLED, CaseStatus.PENDING):
        ET.SubElement(case, "skipped", message=f"not run ({result.status})")
    ET.SubElement(case, "system-out").text = _evidence_text(result)
    return case


def _short(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[:300]


def _outcome_line(outcome: dict[str, object]) -> str:
    return (
        f"{outcome['label']}: expected {_short(outcome['expected'])}, got "
        f"{_short(outcome['actual'])}" + (f" ({outcome['detail']})" if outcome["detail"] else "")
    )


def _evidence_text(result: EvalCaseResult) -> str:
    evidence = result.evidence or {}
    unjudged = [o for o in result.expectations or [] if o["status"] == "unavailable"]
    cost = money_text(result.cost) if result.cost is not None else "unknown"
    lines = [
        f"message: {result.case_snapshot.get('message', '')}",
        f"experts: {', '.join(evidence.get('experts', [])) or 'none'}",
        f"tools: {', '.join(c['name'] for c in evidence.get('tool_calls', [])) or 'none'}",
        f"model calls: {result.model_calls}, tokens: {result.tokens}, "
        f"latency: {result.latency_ms} ms, cost: {cost}",
        *(f"not judged ({o['label']}): {o['detail']}" for o in unjudged),
        *([f"waits: {waits_text(evidence['waits'])}"] if evidence.get("waits") else []),
        f"answer: {evidence.get('answer', '')}",
    ]
    return "\n".join(lines)
