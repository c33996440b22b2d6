"""Writes to runs: create, claim (with a lease), save progress fenced by status, finish, cancel."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents.models import Agent
from agents.services import agent_snapshot
from delegation.models import FINAL_STATUSES, Run, RunStatus


class RunStopped(Exception):
    """The run was cancelled or ended elsewhere while this worker held it: stop working on it."""


def run_heartbeat(*, run: Run) -> None:
    """Renew the lease while streaming; raise RunStopped if the run is no longer ours to run."""
    lease = timezone.now() + timedelta(seconds=settings.RUN_LEASE_SECONDS)
    if not Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(lease_expires_at=lease):
        raise RunStopped


def run_create(
    *,
    agent: Agent,
    user: Any,
    session: Any,
    task: str,
    transcript: list[dict[str, Any]],
    user_message: Any = None,
) -> Run:
    """A queued root run with the agent's definition pinned as it is now."""
    config = agent_snapshot(agent=agent)
    return Run.objects.create(
        session=session,
        user=user,
        agent=agent,
        agent_version=agent.version,
        agent_config=config,
        user_message=user_message,
        depth=0,
        path=[agent.name],
        task=task,
        transcript=transcript,
        deadline=timezone.now() + timedelta(seconds=settings.RUN_DEADLINE_SECONDS),
    )


def run_claim(*, run_id: Any) -> tuple[Run | None, float]:
    """Take the run for this worker: (run, 0), or (None, seconds to retry in) / (None, 0) if done.

    A duplicate delivery finds the run final (nothing to do) or leased by a live worker (retry
    once the lease could have expired). An expired lease means that worker died: take over.
    """
    now = timezone.now()
    with transaction.atomic():
        run = (
            Run.objects.select_for_update(of=("self",))
            .select_related("user", "session", "agent")
            .filter(pk=run_id)
            .first()
        )
        if run is None or run.status in FINAL_STATUSES or run.status == RunStatus.WAITING:
            return None, 0.0
        if run.status == RunStatus.RUNNING and run.lease_expires_at and run.lease_expires_at > now:
            return None, (run.lease_expires_at - now).total_seconds() + 1
        run.status = RunStatus.RUNNING
        run.started_at = run.started_at or now
        run.lease_expires_at = now + timedelta(seconds=settings.RUN_LEASE_SECONDS)
        run.save(update_fields=["status", "started_at", "lease_expires_at"])
    return run, 0.0


def run_save_progress(*, run: Run, **fields: Any) -> bool:
    """Persist progress and renew the lease, only while the run is still ours and running.

    Returns False when the run was cancelled or ended meanwhile: the worker must stop.
    """
    fields.setdefault("transcript", run.transcript)
    fields.setdefault("steps", run.steps)
    fields.setdefault("usage", run.usage)
    fields.setdefault("last_seq", run.last_seq)
    fields["lease_expires_at"] = timezone.now() + timedelta(seconds=settings.RUN_LEASE_SECONDS)
    updated = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(**fields)
    for name, value in fields.items():
        setattr(run, name, value)
    return bool(updated)


def run_release(*, run: Run) -> bool:
    """Hand a running run back to the queue (the task re-enqueues it to continue)."""
    return bool(
        Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
            status=RunStatus.QUEUED,
            lease_expires_at=None,
            transcript=run.transcript,
            steps=run.steps,
            usage=run.usage,
            last_seq=run.last_seq,
        )
    )


def run_finish(
    *, run: Run, status: str, answer: str = "", error: dict[str, str] | None = None
) -> bool:
    """End a running run; False if it had already ended (e.g. cancelled)."""
    now = timezone.now()
    fields = dict(
        status=status,
        answer=answer,
        error=error,
        finished_at=now,
        lease_expires_at=None,
        transcript=run.transcript,
        steps=run.steps,
        usage=run.usage,
        last_seq=run.last_seq,
    )
    updated = Run.objects.filter(pk=run.pk).exclude(status__in=FINAL_STATUSES).update(**fields)
    for name, value in fields.items():
        setattr(run, name, value)
    return bool(updated)


def run_cancel(*, run: Run) -> bool:
    """Cancel a run that has not ended; its worker stops at its next save. False if it had ended."""
    return bool(
        Run.objects.filter(pk=run.pk)
        .exclude(status__in=FINAL_STATUSES)
        .update(status=RunStatus.CANCELLED, finished_at=timezone.now(), lease_expires_at=None)
    )


def usage_add(usage: dict[str, int], prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    """Usage with one more model call's tokens added."""
    prompt = usage.get("prompt_tokens", 0) + prompt_tokens
    completion = usage.get("completion_tokens", 0) + completion_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "model_calls": usage.get("model_calls", 0) + 1,
    }


def run_stop(*, run: Run) -> bool:
    """Cancel a run at the user's request: its streaming messages end and viewers are told."""
    from chat.events import emit, envelope
    from chat.models import ChatMessage, MessageStatus
    from delegation.emitter import agent_tag

    with transaction.atomic():
        if not run_cancel(run=run):
            return False
        ChatMessage.objects.filter(run=run, status=MessageStatus.STREAMING).update(
            status=MessageStatus.CANCELLED
        )
        run.refresh_from_db()
        emit(
            envelope(
                "run.completed",
                session_id=run.session_id,
                run_id=run.id,
                agent=agent_tag(run),
                data={"status": run.status, "usage": run.usage, "error": None},
            )
        )
    return True
