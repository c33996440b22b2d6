"""The humans app inside the run engine: its activity log, waits for a person, answer checks.

The engine calls these through its hooks (delegation.runs.hooks); `hooks_install` registers them
from HumansConfig.ready().
"""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef
from django.utils.translation import gettext as _

from delegation.humans.activity import activity_record
from delegation.humans.fallback import RESTARTS, fallback_plan, suggestion
from delegation.humans.models import InboxItem, ItemStatus, Verdict
from delegation.humans.reviews import turn_assess, turn_checks
from delegation.humans.validation import Check, answer_check, answers_checked, is_low
from delegation.humans.waits import arguments_problem, human_call, needs_person
from delegation.models import Run
from delegation.runs.claim import HandOver
from delegation.runs.emitter import RunEmitter
from delegation.runs.hooks import hooks_register
from delegation.runs.spans import ns_of
from delegation.steps.tool_calls import message_id_for
from delegation.tree.ask import delegation_reattempt


def hooks_install() -> None:
    """Register the humans app's hooks in the engine."""
    hooks_register(
        activity=activity_record,
        person_waits=person_waits,
        person_wanted=person_wanted,
        person_call=human_call,
        answers_checked=answers_checked,
        turn_checks=turn_checks_of,
        answer_judged=answer_judge,
        checked_result=checked_result,
        span_events=waits_as_span_events,
    )


def waits_as_span_events(run: Run) -> list[tuple[str, int, dict[str, Any]]]:
    """The run's waits for a person, for its trace span: when each was asked, and decided
    (whom it waited for and how it ended; never the question's text)."""
    events: list[tuple[str, int, dict[str, Any]]] = []
    for item in InboxItem.objects.filter(run_id=run.id).order_by("created_at"):
        asked = {"agent_platform.wait.kind": item.kind, "agent_platform.wait.for": item.audience}
        events.append(("agent_platform.person.asked", ns_of(item.created_at), asked))
        if item.decided_at is not None:
            decided = {**asked, "agent_platform.wait.outcome": item.decision or item.status}
            events.append(("agent_platform.person.decided", ns_of(item.decided_at), decided))
    return events


def turn_checks_of(run: Run) -> list[tuple[str, dict[str, Any]]]:
    """The checks an entry run's answer is rated from (`turn_checks`)."""
    return turn_checks(run=run)


def person_waits() -> Exists:
    """Whether a run (`OuterRef("pk")`) has an inbox item pending: it waits for a person."""
    return Exists(InboxItem.objects.filter(run_id=OuterRef("pk"), status=ItemStatus.PENDING))


def person_wanted(run: Run, name: str, tools: dict[str, Any], raw: str) -> bool:
    """Whether a tool call waits for a person (a question, or an approval of a tool that needs
    one); unusable arguments are refused at once instead, as any bad call."""
    return needs_person(run, name, tools) and not arguments_problem(tools[name], raw)


def answer_judge(
    *,
    run: Run,
    emitter: RunEmitter,
    answer: str,
    checks: list[tuple[str, dict[str, Any]]] | None,
    hand_over: HandOver | None,
) -> None:
    """Judge a run's answer before its end, as its agent asks: an expert's invalid answer
    takes the next step of its fallback chain (a new attempt starts before the run ends, so
    its caller keeps waiting); the entry agent's answer is rated from the checks of the turn
    (`checks`, when its step read them) and queued for review when one failed."""
    check = answer_check(run=run, answer=answer)
    if check is not None:
        check.outcome = "accepted" if check.valid else _fallback(run, check, hand_over)
        run.validation = check.as_dict()
        Verdict.objects.filter(pk=check.verdict_id).update(outcome=check.outcome)
    if run.parent_id is None:
        final = message_id_for(run, "text", max(0, run.steps - 1))
        turn_assess(run=run, emitter=emitter, message_id=final, answer=answer, checks=checks)


def _fallback(run: Run, check: Check, hand_over: HandOver | None) -> str:
    """The fallback step taken for an invalid answer (an expert's; the entry agent's has no
    caller to ask again: it is passed on marked low confidence)."""
    if run.parent_id is None:
        return "low_confidence"
    plan = fallback_plan(child=run, issue=check.issue)
    if plan.step in RESTARTS:
        run.validation = {**check.as_dict(), "outcome": plan.step}  # read by the attempt
        if plan.target is not None and delegation_reattempt(
            child=run, target=plan.target, task=plan.task, step=plan.step, hand_over=hand_over
        ):
            return plan.step
        return "low_confidence"
    return plan.step


def checked_result(child: Run, body: dict[str, Any]) -> dict[str, Any]:
    """What a checked expert's answer says to its caller's model: an honest "could not
    answer" with whom to ask instead, or the answer marked low or high confidence."""
    check = child.validation or {}
    name = child.agent_config["display_name"]
    if check.get("outcome") == "unanswered":
        words = _(
            "The %(name)s could not answer this reliably (%(issue)s). Say so honestly "
            "and suggest asking %(who)s."
        ) % {"name": name, "issue": check.get("issue"), "who": suggestion(child=child)}
        return {
            "ok": False,
            "status": "unanswered",
            "error": {"code": "answer_invalid", "message": words},
        }
    result = body["result"]
    if check.get("outcome") == "low_confidence" or (check.get("valid") and is_low(check)):
        result["confidence"] = "low"
        result["validation"] = {"valid": check["valid"], "issue": check.get("issue")}
        result["note"] = _("This answer could not be verified: tell the user it is uncertain.")
    else:
        result["confidence"] = "high"
    return body
