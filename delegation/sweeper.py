"""The periodic sweep that keeps runs moving: deadlines, dead workers, lost tasks."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from delegation.humans.activity import activity_record
from delegation.humans.decisions import items_expire
from delegation.humans.models import ActivityKind
from delegation.humans.watchdog import waits_check
from delegation.metrics import RUNS_SWEPT
from delegation.models import FINAL_STATUSES, Run, RunStatus
from delegation.runs.claim import run_enqueue
from delegation.runs.ending import run_end_elsewhere, run_failure

BATCH = 200


def runs_recover_orphans(*, worker: str | None = None) -> int:
    """At a process's start: re-send at once the runs it left behind, instead of waiting a
    lease or QUEUED_STALE_SECONDS. A Celery worker (`worker` = its hostname) takes back the
    runs it was running; the embedded server, the only worker there is, every unfinished run
    that is not waiting for experts (its in-process queue died with the last process)."""
    now = timezone.now()
    if worker is None:
        orphans = Run.objects.filter(status__in=[RunStatus.RUNNING, RunStatus.QUEUED])
    else:
        orphans = Run.objects.filter(status=RunStatus.RUNNING, worker=worker)
    count = 0
    for run_id in orphans.values_list("id", flat=True)[:BATCH]:
        # The lease is expired on purpose: the next claim takes the run over at once.
        Run.objects.filter(pk=run_id, status__in=[RunStatus.RUNNING, RunStatus.QUEUED]).update(
            lease_expires_at=now, queued_at=now
        )
        run_enqueue(run_id=run_id)
        count += 1
    return count


def runs_sweep() -> dict[str, int]:
    """Expire questions and approvals past their deadline (their runs go on without an
    answer), check the waits (cycles, overdue, stuck: delegation.humans.watchdog), time out
    runs past their deadline (their callers resume with an error), re-send runs whose worker
    died (lease expired) or whose task was lost (queued too long)."""
    items_expire()  # reported in the activity log, as the wait check's findings are
    waits = waits_check()
    now = timezone.now()
    timed_out = waits["timed_out"]
    for run in Run.objects.filter(deadline__lt=now).exclude(status__in=FINAL_STATUSES)[:BATCH]:
        ended = run_end_elsewhere(
            run=run,
            status=RunStatus.TIMED_OUT,
            error=run_failure("run_timeout", "The run went past its deadline."),
        )
        if ended:
            activity_record(
                kind=ActivityKind.ERROR,
                run=run,
                summary=f"{run.agent_config['display_name']} timed out past its deadline",
                data={"code": "run_timeout"},
            )
        timed_out += ended
    # A dead worker's run (lease expired) is re-sent at most once per lease period, and a queued
    # run whose task was lost once per QUEUED_STALE_SECONDS; `queued_at` records the last send.
    # The lease itself is left alone: the next claim sees it expired and takes over.
    dead_worker = Q(status=RunStatus.RUNNING, lease_expires_at__lt=now) & (
        Q(queued_at__isnull=True)
        | Q(queued_at__lt=now - timedelta(seconds=settings.RUN_LEASE_SECONDS))
    )
    lost_task = Q(
        status=RunStatus.QUEUED,
        queued_at__lt=now - timedelta(seconds=settings.QUEUED_STALE_SECONDS),
    )
    resent = 0
    for run_id in Run.objects.filter(dead_worker | lost_task).values_list("id", flat=True)[:BATCH]:
        Run.objects.filter(pk=run_id).update(queued_at=now)
        run_enqueue(run_id=run_id)
        resent += 1
    for action, count in (("timed_out", timed_out), ("resent", resent)):
        if count:
            RUNS_SWEPT.labels(action=action).inc(count)
    return {"timed_out": timed_out, "resent": resent}
