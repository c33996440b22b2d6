"""The history a turn carries: earlier turns of the current branch, as model messages."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet

from chat.models import ChatMessage, ChatSession, MessageRole
from delegation.models import FINAL_STATUSES, Run


def branch_history(
    *, session: ChatSession, before: ChatMessage | None = None
) -> list[dict[str, Any]]:
    """Earlier turns of the current branch as model messages (each user text and its final
    answer): replaced messages and answers that were tried again are left out."""
    runs = _branch_runs(session=session)
    if before is not None:
        runs = runs.filter(created_at__lt=before.created_at)
    runs = runs.order_by("-created_at").only("task", "answer", "error", "status")
    history: list[dict[str, Any]] = []
    for run in reversed(list(runs[: settings.CHAT_HISTORY_TURNS])):
        history.append({"role": MessageRole.USER.value, "content": run.task})
        reply = run.answer or f"(no answer: {(run.error or {}).get('message', run.status)})"
        history.append({"role": "assistant", "content": reply})
    return history


def _branch_runs(*, session: ChatSession) -> QuerySet[Run]:
    """The session's finished turns on the current branch."""
    tried_again = Run.objects.filter(
        parent__isnull=True,
        user_message=OuterRef("user_message"),
        created_at__gt=OuterRef("created_at"),
    )
    return (
        Run.objects.filter(session=session, parent__isnull=True, status__in=FINAL_STATUSES)
        .exclude(user_message__superseded_by__isnull=False)
        .exclude(Exists(tried_again))
    )
