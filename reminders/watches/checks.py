"""Running watches: at each slot, one check turn of the expert per watched user, as that user;
when the turn ends, its answer is read as a finding and handed on (reminders.watches.telling).

One beat entry (`watches.tick`) drives every watch, like the reminder dispatcher: a watch's
slot is claimed by moving its `last_slot_at` forward (one tick wins), and a check is unique per
watch, user and slot, so a duplicated firing is one check; after a downtime only the latest
missed slot is checked, once, marked late."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import translation
from django.utils.translation import gettext as _

from agents.selectors import agent_usable_by
from chat.models import ChatMessage, ChatSession, MessageOrigin, MessageRole
from config.enqueue import enqueue
from config.errors import AppError
from delegation.models import FINAL_STATUSES, Run, RunStatus
from delegation.turns import turn_start
from reminders import clock
from reminders.slots import last_slot, slot_key
from reminders.watches.findings import check_text, finding_parse
from reminders.watches.models import CheckStatus, Watch, WatchCheck
from reminders.watches.notify import notifications_deliver_held
from reminders.watches.schedule import watch_spec
from reminders.watches.telling import finding_tell, outcome_record

logger = logging.getLogger(__name__)

FINISH_TASK = "watches.check_finish"
CHECK_KEY = "watch-check:{}"  # run id -> check id, for the turn's end (a cache read per turn)
CHECK_SECONDS = 24 * 3600
_IDS = uuid.UUID("2b0e61a7-53c9-4c0f-9a36-8f1d4b7e5c20")  # namespace of check ids


def watches_tick(*, now: datetime | None = None) -> dict[str, int]:
    """Start the checks of every watch whose slot came due, finish checks whose turn ended
    while no one listened (a lost cache entry), and deliver the held notifications whose time
    came. Counts of what it did."""
    now = now or clock.now()
    started = 0
    for watch in Watch.objects.filter(enabled=True).select_related("agent"):
        slot = _due_slot(watch, now)
        if slot is None:
            continue
        # Claim the slot: of two ticks (two beats, a retry) one moves it on, the other finds 0.
        claimed = Watch.objects.filter(pk=watch.pk, last_slot_at=watch.last_slot_at).update(
            last_slot_at=slot
        )
        if not claimed:
            continue
        late = now - slot > timedelta(seconds=settings.WATCH_LATE_SECONDS)
        for user in watch_users(watch=watch):
            check_start(watch=watch, user=user, slot=slot_key(slot), late=late)
            started += 1
    finished = 0
    for check_id in _ended_unfinished():
        finished += check_finish(check_id=check_id) != "running"
    delivered = notifications_deliver_held(now=now)
    return {"started": started, "finished": finished, "delivered": delivered}


def _due_slot(watch: Watch, now: datetime) -> datetime | None:
    """The latest slot at or before `now`, if it is later than the last one checked."""
    try:
        slot = last_slot(watch_spec(watch), watch.timezone, now)
    except ValueError:
        return None
    if slot is None or (watch.last_slot_at is not None and slot <= watch.last_slot_at):
        return None
    return slot


def watch_users(*, watch: Watch) -> list[Any]:
    """The active users the watch checks for: its users and its groups' members, once each."""
    return list(
        get_user_model()
        .objects.filter(is_active=True)
        .filter(Q(pk__in=watch.users.values("pk")) | Q(groups__in=watch.groups.values("pk")))
        .distinct()
        .select_related("chat_preference")
        .order_by("pk")
    )


def check_session_id(watch_id: int, user_id: int) -> uuid.UUID:
    """The chat session where a watch's checks for one user run (the user can read them)."""
    return uuid.uuid5(_IDS, f"session:{watch_id}:{user_id}")


def check_start(*, watch: Watch, user: Any, slot: str, late: bool = False) -> WatchCheck:
    """The check of this slot for this user: its turn of the expert, as the user (their rights,
    their tools' data), started once; a second call for the slot returns the same check."""
    check, created = WatchCheck.objects.get_or_create(
        watch=watch, user=user, slot=slot, defaults={"late": late}
    )
    if not created:
        return check
    agent = watch.agent
    if not agent.enabled or not agent_usable_by(agent=agent, user=user):
        message = _("%(user)s may not use the expert %(agent)s.") % {
            "user": user,
            "agent": agent.name,
        }
        return _failed(check, "agent_forbidden", message)
    session_id = check_session_id(watch.pk, user.pk)
    with translation.override(None):
        title = _("Watch: %(name)s") % {"name": watch.name}
    ChatSession.objects.get_or_create(
        id=session_id, defaults={"user": user, "agent": agent, "title": title[:200]}
    )
    ChatSession.objects.filter(pk=session_id).exclude(agent=agent).update(agent=agent)
    try:
        with transaction.atomic():  # the turn's end finds the check however fast it runs
            sent = turn_start(
                user=user,
                session_id=session_id,
                message_id=uuid.uuid5(_IDS, f"check:{check.pk}"),
                text=check_text(watch.prompt),
                origin=MessageOrigin.SCHEDULED,
            )
            if sent.run is not None:
                WatchCheck.objects.filter(pk=check.pk).update(run=sent.run)
                cache.set(CHECK_KEY.format(sent.run.id), check.pk, CHECK_SECONDS)
    except AppError as exc:  # e.g. the previous check is still running
        return _failed(check, exc.code, exc.message)
    check.refresh_from_db()
    return check


def _failed(check: WatchCheck, code: str, message: str) -> WatchCheck:
    with transaction.atomic():
        locked = WatchCheck.objects.select_for_update().select_related("watch", "user")
        check = locked.get(pk=check.pk)
        outcome_record(check=check, status=CheckStatus.ERROR, error=f"{code}: {message}")
    return check


def check_after_turn(run: Run) -> None:
    """A turn ended (engine hook `turn_ended`): if it was a check, read its finding after commit."""
    try:
        check_id = cache.get(CHECK_KEY.format(run.id))
    except Exception as exc:  # noqa: BLE001 (any cache error: the tick finishes it later)
        logger.warning("could not read watch check of run %s (%s)", run.id, exc)
        return
    if check_id is not None:
        enqueue(FINISH_TASK, check_id)


def _ended_unfinished() -> list[int]:
    """Running checks whose turn ended (their finish was lost): the tick finishes them."""
    return list(
        WatchCheck.objects.filter(status=CheckStatus.RUNNING, run__status__in=FINAL_STATUSES)
        .order_by("pk")
        .values_list("pk", flat=True)[:100]
    )


def check_finish(*, check_id: int, now: datetime | None = None) -> str:
    """Read the ended check's answer as a finding and tell it (or record why not), once: a
    repeated call finds the check finished. Returns the check's status."""
    with transaction.atomic():
        check = (
            WatchCheck.objects.select_for_update(of=("self",))
            .select_related("watch", "user", "run")
            .filter(pk=check_id)
            .first()
        )
        if check is None:
            return "gone"
        if check.status != CheckStatus.RUNNING:
            return str(check.status)
        run = check.run
        if run is None or run.status not in FINAL_STATUSES:
            return str(CheckStatus.RUNNING)
        if run.status != RunStatus.SUCCEEDED:
            problem = (run.error or {}).get("message") or str(run.status)
            outcome_record(check=check, status=CheckStatus.ERROR, error=problem)
            return str(check.status)
        try:
            finding = finding_parse(_answer(run))
        except ValueError as exc:
            outcome_record(check=check, status=CheckStatus.ERROR, error=str(exc))
            return str(check.status)
        finding_tell(check=check, finding=finding, now=now or clock.now())
        return str(check.status)


def _answer(run: Run) -> str:
    """The check turn's final answer text."""
    message = (
        ChatMessage.objects.filter(run_id=run.id, role=MessageRole.AGENT)
        .exclude(content="")
        .order_by("created_at", "id")
        .last()
    )
    return message.content if message is not None else ""
