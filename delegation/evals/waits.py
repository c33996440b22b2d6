"""An eval turn that waits for a person: the case decides, never the real staff inbox.

A case's `human` expectation says how its turn's waits are decided (`{"decision": "approve" |
"reject", "answer"?: "…"}`: approve a tool call, or answer a question with `answer`); without
it every wait is rejected (a gated tool does not run, a question is declined). The items of
eval turns are never shown to staff nor announced to them (delegation.humans.selectors), and
each wait is reported with the case's result ("waited for staff approval of send_email")."""

from __future__ import annotations

import re
from typing import Any

from django.db.models import Q
from django.utils.translation import gettext, pgettext_lazy

from config.errors import AppError
from delegation.humans.decisions import item_decide_unattended
from delegation.humans.models import Audience, Decision, InboxItem, ItemKind, ItemStatus
from delegation.models import Run

DEFAULT = {"decision": Decision.REJECT}
# How a wait ended, as the report says it after the wait ("… (approved)").
OUTCOME_WORDS: dict[str, Any] = {
    ItemStatus.ANSWERED: pgettext_lazy("eval wait outcome", "answered"),
    ItemStatus.APPROVED: pgettext_lazy("eval wait outcome", "approved"),
    ItemStatus.MODIFIED: pgettext_lazy("eval wait outcome", "modified"),
    ItemStatus.REJECTED: pgettext_lazy("eval wait outcome", "rejected"),
    ItemStatus.EXPIRED: pgettext_lazy("eval wait outcome", "expired"),
    ItemStatus.CANCELLED: pgettext_lazy("eval wait outcome", "cancelled"),
}


def wait_reason(item: InboxItem) -> str:
    """Why the turn waited, as the case's result keeps it (in English; pages use wait_text)."""
    who = "the user" if item.audience == Audience.USER else "staff"
    if item.kind == ItemKind.TOOL_APPROVAL:
        return f"waited for {who} approval of {item.tool}"
    return f"waited for {who} to answer “{item.question[:200]}”"


# The reasons wait_reason keeps (in English), read back to say them in the reader's language.
_APPROVAL = re.compile(r"^waited for (the user|staff) approval of (?P<tool>.*)$", re.S)
_QUESTION = re.compile(r"^waited for (the user|staff) to answer “(?P<question>.*)”$", re.S)


def wait_text(wait: dict[str, str]) -> str:
    """A kept wait's reason in the active language (as kept, if it is not one of ours)."""
    reason = wait.get("wait", "")
    if found := _APPROVAL.match(reason):
        text = (
            gettext("waited for the user's approval of %(tool)s")
            if found.group(1) == "the user"
            else gettext("waited for staff approval of %(tool)s")
        )
        return text % {"tool": found["tool"]}
    if found := _QUESTION.match(reason):
        text = (
            gettext("waited for the user to answer “%(question)s”")
            if found.group(1) == "the user"
            else gettext("waited for staff to answer “%(question)s”")
        )
        return text % {"question": found["question"]}
    return reason


def wait_outcome(wait: dict[str, str]) -> str:
    """How a kept wait was decided, in the active language (else why it was not)."""
    decision = wait.get("decision") or ""
    return str(OUTCOME_WORDS.get(decision, decision)) or wait.get("detail", "")


def turn_waits_decide(*, root: Run, expect: dict[str, Any]) -> list[dict[str, str]]:
    """Decide every pending item of the turn by the case's `human` expectation; what each wait
    was and how it was decided, for the case's result."""
    rule = expect.get("human") or DEFAULT
    pending = InboxItem.objects.filter(
        Q(run_id=root.pk) | Q(run__root_id=root.pk), status=ItemStatus.PENDING
    ).select_related("user")
    decided = []
    for item in pending:
        decision, answer = rule["decision"], ""
        if item.kind == ItemKind.QUESTION and decision == Decision.APPROVE:
            answer = rule.get("answer") or "yes"
        try:
            item = item_decide_unattended(
                item=item, decision=decision, answer=answer, note="decided by the eval case"
            )
        except AppError as exc:  # the wait ended meanwhile (a stop, its deadline)
            decided.append({"wait": wait_reason(item), "decision": "", "detail": exc.message})
            continue
        decided.append({"wait": wait_reason(item), "decision": item.status, "detail": answer})
    return decided


def waits_text(waits: list[dict[str, str]]) -> str:
    """The waits as one line: "waited for staff approval of send_email (approved)"."""
    return "; ".join(f"{w['wait']} ({w['decision'] or w['detail']})" for w in waits)
